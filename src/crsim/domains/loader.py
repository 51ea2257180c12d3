"""Reading a domain file into a `Domain`, and checking one: every problem located (file, line, field).

`check_domain_file` collects all problems it can find (schema, items, slots against the items,
ratings, profile and phrasing files); `read_domain_file` is the same check, raising on the first
problem, so a run and `crsim domain check` never disagree about a file. The parts are read and
checked elsewhere: the item file by `item_reader` (its records by `item_records`), the slots by
`slot_checks`, the ratings table by `ratings`; what a check finds is a `findings.DomainCheck`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from crsim.core.collector import long_lived_objects_frozen
from crsim.core.errors import ConfigError
from crsim.core.yaml_files import describe_yaml_error, key_lines, load_yaml
from crsim.domains.findings import DomainCheck
from crsim.domains.item_reader import read_items
from crsim.domains.ratings import ratings_source
from crsim.domains.schema import DomainFile
from crsim.domains.slot_checks import build_slots, check_popularity, requestable_order
from crsim.model.domain import Domain


def read_domain_file(path: str | Path) -> Domain:
    """The domain a domain file describes; a ConfigError naming the first problem (and how many more)."""
    check = check_domain_file(path)
    if check.problems or check.domain is None:
        more = check.count - 1
        suffix = f" (and {more} more problem{'s' if more > 1 else ''}: `crsim domain check` lists them)"
        raise ConfigError(
            (check.problems or [f"{path}: not a domain file"])[0] + (suffix if more > 0 else "")
        )
    return check.domain


def check_domain_file(path: str | Path) -> DomainCheck:
    """Every problem of the domain file at `path`, and the domain when there is none."""
    path = Path(path)
    check = DomainCheck(path)
    spec = _parse(path, check)
    if spec is None:
        return check
    with long_lived_objects_frozen():  # a catalogue of 200,000 items: the collector re-scanned it
        items = read_items(path.parent / spec.items.path, spec, check)
    slots = build_slots(spec, items or check.partial_items, check)
    ratings = ratings_source(path, spec, items, check)
    profiles = _side_file(path, spec.profiles, "profiles", check)
    nlg = _side_file(path, spec.phrasings.nlg, "phrasings.nlg", check)
    sections = _sections(path, spec, check)
    requestable = requestable_order(spec, slots, check)
    if spec.popularity and items is not None:
        check_popularity(spec.popularity, items, check)
    if check.problems or items is None:
        return check
    check.domain = Domain(
        name=spec.name,
        items=items,
        informable_slots={s.name: s.attribute for s in slots.values() if s.informable},
        requestable_slots={name: slots[name].attribute for name in requestable},
        item_noun=spec.item_noun,
        item_noun_plural=spec.item_noun_plural or "",
        slots=slots,
        phrasings={"nlg": nlg, **sections} if nlg else sections,
        profiles=profiles,
        ratings=ratings,
        source=path,
        popularity=spec.popularity,
    )
    return check


# --- the file itself ----------------------------------------------------------------------------------


def _parse(path: Path, check: DomainCheck) -> DomainFile | None:
    """The validated domain file, or None with every schema problem (file:line: field: message) noted."""
    if not path.is_file():
        check.problems.append(f"{path}: file not found; expected a domain file (YAML)")
        return None
    try:
        text = path.read_text(encoding="utf-8")
        data = load_yaml(text)
    except (UnicodeDecodeError, OSError) as exc:
        check.problems.append(f"{path}: not readable as YAML ({str(exc).splitlines()[0]})")
        return None
    except yaml.YAMLError as exc:
        check.problems.append(f"{path}: {describe_yaml_error(exc)}")
        return None
    if not isinstance(data, dict):
        check.problems.append(f"{path}: expected a mapping (name, items, slots, ...) at the top level")
        return None
    try:
        return DomainFile.model_validate(data)
    except ValidationError as exc:
        lines = key_lines(text)
        for err in exc.errors():
            loc = tuple(str(p) for p in err["loc"])
            check.problems.append(f"{_where(path, lines, loc)}: {err['msg']}")
        return None


def _where(path: Path, lines: dict[tuple[str, ...], int], loc: tuple[str, ...]) -> str:
    """`path:line: field 'a.b'` for a field path, the line of the deepest key of it written in the file."""
    line = next((lines[loc[:n]] for n in range(len(loc), 0, -1) if loc[:n] in lines), None)
    at = f"{path}:{line}" if line else str(path)
    return f"{at}: field '{'.'.join(loc)}'" if loc else at


# --- side files ----------------------------------------------------------------------------------------


def _side_file(path: Path, value: str | None, field_name: str, check: DomainCheck) -> str | None:
    """A shipped name as given, or a YAML path resolved against the domain file (checked to exist)."""
    if value is None or not value.endswith((".yaml", ".yml")):
        return value
    resolved = path.parent / value
    if not resolved.is_file():
        check.problems.append(f"{check.path}: field '{field_name}': file not found: {resolved}")
    return str(resolved)


def _sections(path: Path, spec: DomainFile, check: DomainCheck) -> dict[str, Any]:
    """The phrasing sections given (inline mappings, or file names kept as written: components read
    them relative to the domain file), after checking that named files exist."""
    sections: dict[str, Any] = {}
    for key in ("crs", "understanding", "nlu"):
        value = getattr(spec.phrasings, key)
        if isinstance(value, str) and not (path.parent / value).is_file():
            check.problems.append(
                f"{check.path}: field 'phrasings.{key}': file not found: {path.parent / value}"
            )
        if value:
            sections[key] = value
    return sections
