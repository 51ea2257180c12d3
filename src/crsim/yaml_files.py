"""Reading YAML/JSON config files into pydantic models, with errors that name the file and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from crsim.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


def read_yaml_mapping(path: Path, expected: str) -> dict[str, Any]:
    """The top-level mapping of a YAML (or JSON) file; an empty file is an empty mapping.

    `expected` says what the file should be ("an experiment config"), for the error messages.
    """
    if path.is_dir():
        raise ConfigError(f"{path}: is a folder; expected {expected}")
    if not path.is_file():
        raise ConfigError(f"{path}: file not found; expected {expected}")
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, OSError) as exc:
        raise ConfigError(f"{path}: not readable as YAML/JSON ({str(exc).splitlines()[0]})") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level ({expected})")
    return loaded


def validate_located(model: type[M], data: Any, where: str, prefix: tuple[str, ...] = ()) -> M:
    """`model.model_validate(data)`; the first problem becomes "where: field 'a.b': message"."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in (*prefix, *err["loc"])) or "(top level)"
        raise ConfigError(f"{where}: field '{field}': {err['msg']}") from None
