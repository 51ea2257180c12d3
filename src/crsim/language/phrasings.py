"""A domain's phrasing overrides as mappings: what the built-in components read instead of fixed words.

A domain file's `phrasings` section names, per component, either an inline mapping or a YAML file
(relative to the domain file): `crs` (sentences of the built-in CRSs), `understanding` (vocabulary
of their rule-based understanding) and `nlu` (words of the agenda simulator's rule NLU, and the
attributes its preference model reads).
`phrasing(domain, key)` always returns a mapping (empty when the domain has none), read once per file.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from crsim.core.errors import DataError
from crsim.core.yaml_files import describe_yaml_error, load_yaml
from crsim.model.domain import Domain
from crsim.model.items import Item


def phrasing(domain: Domain, key: str) -> Mapping[str, Any]:
    """The `key` section of the domain's phrasings as a mapping; a file name is read (YAML)."""
    value = domain.phrasings.get(key)
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return value
    if isinstance(value, str):
        base = domain.source.parent if domain.source is not None else Path.cwd()
        return _read(str(base / value))
    raise DataError(
        f"expected a mapping or a YAML file name, got {type(value).__name__}", field=f"phrasings.{key}"
    )


@cache
def _read(path: str) -> Mapping[str, Any]:
    file = Path(path)
    if not file.is_file():
        raise DataError("file not found; expected a YAML phrasing file", path=path)
    try:
        raw = load_yaml(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise DataError(describe_yaml_error(exc), path=path) from None
    if not isinstance(raw, Mapping):
        raise DataError("expected a mapping at the top level", path=path)
    return raw


def item_details(domain: Domain, item: Item, limit: int = 300) -> str:
    """The item's values of the domain's slots that are not built-in item fields ("food: chinese;
    area: centre"), for prompts that show an item; '' when it has none (the movie domain's slots are
    all built-in fields, shown by their own names)."""
    parts = []
    for slot in domain.slots.values():
        if slot.attribute in item.extra:
            values = item.values(slot.attribute)
            if values:
                parts.append(f"{slot.name.replace('_', ' ')}: {', '.join(values)}")
    text = "; ".join(dict.fromkeys(parts))
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + "…"


def words(section: Mapping[str, Any], key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
    """A list of phrases from a phrasing section (a space-separated string is split into words)."""
    value = section.get(key)
    if value is None:
        return default
    if isinstance(value, str):
        return tuple(value.split())
    return tuple(str(v) for v in value)
