"""Comparison criteria: named descriptions the judge reads, shipped (`crsim.studies.criteria`) or read
from a YAML file, with errors that name the file and the field."""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Annotated

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from crsim.core.errors import ConfigError
from crsim.core.yaml_files import describe_yaml_error, load_yaml

CRITERIA = "crsim.studies.criteria"
DEFAULT_CRITERIA = "recusersim6"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class Criteria(BaseModel):
    """Named comparison criteria, each described in words the judge reads."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = ""
    source: str = ""
    criteria: dict[str, Annotated[str, Field(min_length=1)]] = Field(min_length=1)

    @field_validator("criteria")
    @classmethod
    def _names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not _NAME.match(name):
                raise ValueError(f"criterion {name!r}: names are lower case letters, digits and underscores")
            if not text.strip():
                raise ValueError(f"criterion {name!r}: the description is empty")
        return {name: " ".join(text.split()) for name, text in value.items()}


def shipped_criteria() -> list[str]:
    return sorted(e.name[: -len(".yaml")] for e in files(CRITERIA).iterdir() if e.name.endswith(".yaml"))


def load_criteria(ref: str | Path = DEFAULT_CRITERIA) -> Criteria:
    """Shipped criteria by name (`recusersim6`) or a criteria YAML file by path."""
    text = str(ref)
    if isinstance(ref, str) and text in shipped_criteria():
        return _shipped_criteria(text)
    path = Path(ref)
    if not path.is_file():
        known = ", ".join(shipped_criteria())
        raise ConfigError(f"criteria {text!r}: neither shipped criteria ({known}) nor a file")
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"criteria file {path}: not readable ({exc})") from None
    return _parse_criteria(source, str(path))


@cache
def _shipped_criteria(name: str) -> Criteria:
    return _parse_criteria(files(CRITERIA).joinpath(f"{name}.yaml").read_text(encoding="utf-8"), name)


def _parse_criteria(source: str, where: str) -> Criteria:
    try:
        data = load_yaml(source)
    except yaml.YAMLError as exc:
        raise ConfigError(f"criteria file {where}: {describe_yaml_error(exc)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"criteria file {where}: expected a mapping with name and criteria")
    try:
        return Criteria.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "the file"
        message = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown field; expected name, description, source, criteria"
        raise ConfigError(f"criteria file {where}: field {loc!r}: {message}") from None
