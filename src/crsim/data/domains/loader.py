"""Reading a domain file into a `Domain`, and checking one: every problem located (file, line, field).

`check_domain_file` collects all problems it can find (schema, items, slots against the items,
ratings, profile and phrasing files); `read_domain_file` is the same check, raising on the first
problem, so a run and `crsim domain check` never disagree about a file.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from crsim.data.domains.schema import DomainFile, ItemsSpec, SlotSpec
from crsim.errors import ConfigError, CrsimError, DataError
from crsim.model.domain import Domain, RatingsSource, Slot, SlotKind
from crsim.model.items import Item, ItemCollection
from crsim.yaml_files import describe_yaml_error, key_lines, load_yaml

#: Item fields that are first-class (`Item`); any other field of an item record goes to `Item.extra`.
_ITEM_FIELDS = frozenset(Item.model_fields) - {"id", "title", "extra"}


@dataclass
class DomainCheck:
    """What checking a domain file found: problems (each one line, located), warnings, the domain."""

    path: Path
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    domain: Domain | None = None

    @property
    def ok(self) -> bool:
        return not self.problems and self.domain is not None


def read_domain_file(path: str | Path) -> Domain:
    """The domain a domain file describes; a ConfigError naming the first problem (and how many more)."""
    check = check_domain_file(path)
    if check.problems or check.domain is None:
        more = len(check.problems) - 1
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
    items = _read_items(path.parent / spec.items.path, spec, check)
    slots = _slots(spec, items, check)
    ratings = _ratings(path, spec, items, check)
    profiles = _side_file(path, spec.profiles, "profiles", check)
    nlg = _side_file(path, spec.phrasings.nlg, "phrasings.nlg", check)
    sections = _sections(path, spec, check)
    requestable = _requestable_order(spec, slots, check)
    if spec.popularity and items is not None:
        _check_popularity(spec.popularity, items, check)
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


# --- items --------------------------------------------------------------------------------------------


def _read_items(path: Path, spec: DomainFile, check: DomainCheck) -> ItemCollection | None:
    """The item collection, or None with the first problem of the item file noted."""
    multi = {s.attribute or name for name, s in spec.slots.items() if s.kind is SlotKind.MULTI}
    try:
        if _item_shaped(path, spec.items):
            try:  # records already in crsim's item format (the shipped movies): the fast reader
                return ItemCollection.from_jsonl(path, name=spec.name)
            except DataError:
                pass  # other fields too: the general reader below says where
        records = _records(path, spec.items)
        items = [_item(record, number, str(path), spec.items, multi) for number, record in records]
        if not items:
            raise DataError("no items; expected one item per record", path=str(path))
        return ItemCollection(items, name=spec.name)
    except CrsimError as exc:
        check.problems.append(f"items.path: {exc}")
        return None


def _item_shaped(path: Path, spec: ItemsSpec) -> bool:
    """A JSONL file whose id and title fields are crsim's own names (maybe written by crsim)."""
    return (
        path.is_file()
        and path.name.endswith((".jsonl", ".jsonl.gz"))
        and (spec.id, spec.title)
        == (
            "id",
            "title",
        )
    )


def _records(path: Path, spec: ItemsSpec) -> Iterator[tuple[int, dict[str, Any]]]:
    """(record number, fields) of a JSONL or CSV item file; CSV cells are strings, empty ones left out."""
    if not path.is_file():
        raise DataError("file not found; expected an item file (.jsonl, .jsonl.gz or .csv)", path=str(path))
    if path.name.endswith((".csv", ".csv.gz")):
        for number, row in enumerate(csv.DictReader(_text_lines(path)), start=1):
            yield number, {k: v for k, v in row.items() if k is not None and v not in (None, "")}
        return
    if not path.name.endswith((".jsonl", ".jsonl.gz", ".json")):
        raise DataError("unknown item file type; expected .jsonl, .jsonl.gz or .csv", path=str(path))
    for number, line in enumerate(_text_lines(path), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"not valid JSON ({exc.msg})", path=str(path), record=number) from None
        if not isinstance(record, dict):
            raise DataError("expected a JSON object (one item per line)", path=str(path), record=number)
        yield number, record


def _text_lines(path: Path) -> io.TextIOBase:
    """The text of a plain or gzip file, read fully (item files are catalogues, not corpora)."""
    try:
        raw = path.read_bytes()
        raw = gzip.decompress(raw) if path.suffix == ".gz" else raw
        return io.StringIO(raw.decode("utf-8-sig"), newline="")  # a spreadsheet's BOM is not a column name
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text (byte {exc.start})", path=str(path)) from None
    except (OSError, EOFError) as exc:
        raise DataError(f"cannot read the file ({exc})", path=str(path)) from None


def _item(record: dict[str, Any], number: int, path: str, spec: ItemsSpec, multi: set[str]) -> Item:
    """One `Item` from one record: id and title from the named fields, movie fields first-class, the
    rest in `extra`; a multi-valued slot's CSV cell split on the separator."""
    for name in (spec.id, spec.title):
        if record.get(name) in (None, ""):
            raise DataError(
                f"missing; expected the item's {'id' if name == spec.id else 'title'}",
                path=path,
                record=number,
                field=name,
            )
    fields: dict[str, Any] = {"id": str(record[spec.id]), "title": str(record[spec.title]), "extra": {}}
    for key, value in record.items():
        if key in (spec.id, spec.title):
            continue
        if key in multi and isinstance(value, str):
            value = [v.strip() for v in value.split(spec.separator) if v.strip()]
        if key == "extra" and isinstance(value, dict):
            fields["extra"].update(value)
        elif key in _ITEM_FIELDS:
            fields[key] = value
        else:
            fields["extra"][key] = value
    try:
        return Item.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        field_name = ".".join(str(p) for p in err["loc"]) or None
        raise DataError(err["msg"], path=path, record=number, field=field_name) from None


# --- slots against the items --------------------------------------------------------------------------


def _slots(spec: DomainFile, items: ItemCollection | None, check: DomainCheck) -> dict[str, Slot]:
    slots = {}
    for name, slot_spec in spec.slots.items():
        slot = _slot(name, slot_spec)
        slots[name] = slot
        if items is not None:
            _check_slot(slot, items, check)
    return slots


def _slot(name: str, spec: SlotSpec) -> Slot:
    informable = spec.informable if spec.informable is not None else spec.kind is not SlotKind.TEXT
    return Slot(
        name=name,
        attribute=spec.attribute or name,
        kind=spec.kind,
        informable=informable,
        requestable=spec.requestable,
        cues=tuple(spec.cues),
        synonyms={
            value.lower(): tuple(p.lower() for p in phrases) for value, phrases in spec.synonyms.items()
        },
        order=tuple(v.lower() for v in spec.order),
        question=spec.question,
        unit=spec.unit,
        comparisons={
            bound: tuple(p.lower() for p in phrases)
            for bound, phrases in (spec.comparisons.model_dump() if spec.comparisons else {}).items()
            if phrases
        },
    )


def _check_popularity(field: str, items: ItemCollection, check: DomainCheck) -> None:
    """The declared popularity field exists and holds numbers."""
    values = items.vocabulary(field)
    where = f"{check.path}: field 'popularity'"
    if not values:
        check.problems.append(f"{where}: no item has field {field!r}; expected a number per item")
    elif bad := [v for v in values if not _is_number(v)]:
        check.problems.append(f"{where}: field {field!r} has non-numeric values {_few(bad)}")


def _check_slot(slot: Slot, items: ItemCollection, check: DomainCheck) -> None:
    """The slot's attribute exists, numeric values are numbers, ordinal values are in `order`."""
    where = f"{check.path}: field 'slots.{slot.name}'"
    values = items.vocabulary(slot.attribute)
    if not values:
        check.problems.append(
            f"{where}: no item has attribute {slot.attribute!r}; expected it in the item file"
        )
        return
    if slot.kind is SlotKind.NUMERIC:
        bad = [v for v in values if not _is_number(v)]
        if bad:
            check.problems.append(f"{where}: numeric slot has non-numeric values {_few(bad)}")
    if slot.kind is SlotKind.ORDINAL:
        unordered = [v for v in values if v not in slot.order]
        if unordered:
            check.problems.append(f"{where}: values {_few(unordered)} are missing from `order`")
    if slot.kind in (SlotKind.CATEGORICAL, SlotKind.MULTI, SlotKind.ORDINAL):
        unknown = [v for v in slot.synonyms if v not in values and v not in slot.order]
        if unknown:
            check.warnings.append(f"{where}.synonyms: no item has the value(s) {_few(unknown)}")


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _few(values: list[str], shown: int = 5) -> str:
    head = ", ".join(repr(v) for v in values[:shown])
    return head + (f" and {len(values) - shown} more" if len(values) > shown else "")


def _requestable_order(spec: DomainFile, slots: dict[str, Slot], check: DomainCheck) -> list[str]:
    requestable = [name for name, slot in slots.items() if slot.requestable]
    if spec.requestable_order is None:
        return requestable
    if sorted(spec.requestable_order) != sorted(requestable):
        check.problems.append(
            f"{check.path}: field 'requestable_order': expected each requestable slot once "
            f"({', '.join(requestable)}), got {', '.join(spec.requestable_order)}"
        )
    return [name for name in spec.requestable_order if name in slots]


# --- ratings and side files ---------------------------------------------------------------------------


def _ratings(
    path: Path, spec: DomainFile, items: ItemCollection | None, check: DomainCheck
) -> RatingsSource | None:
    """The ratings source, after checking that its file exists and has the named columns."""
    if spec.ratings is None:
        return None
    source = RatingsSource(
        path=path.parent / spec.ratings.path,
        user=spec.ratings.user,
        item=spec.ratings.item,
        rating=spec.ratings.rating,
        name=spec.ratings.name or f"{spec.name} ratings",
        label=spec.ratings.label or spec.name,
    )
    try:
        header = next(csv.reader(_first_line(source.path)), [])
    except (CrsimError, StopIteration) as exc:
        check.problems.append(f"ratings.path: {exc}")
        return source
    missing = [c for c in (source.user, source.item, source.rating) if c not in header]
    if missing:
        check.problems.append(
            f"ratings.path: {source.path}: column(s) {', '.join(missing)} missing; "
            f"the header has {', '.join(header)}"
        )
    return source


def _first_line(path: Path) -> list[str]:
    if not path.is_file():
        raise DataError("file not found; expected a ratings table (.csv or .csv.gz)", path=str(path))
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            return [handle.readline()]
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read the file ({exc})", path=str(path)) from None


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


def read_ratings(source: RatingsSource) -> dict[str, dict[str, float]]:
    """A domain's ratings: user id -> item id -> rating; DataError naming the row of a bad rating."""
    ratings: dict[str, dict[str, float]] = {}
    opener = gzip.open if source.path.suffix == ".gz" else open
    with opener(source.path, "rt", encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.DictReader(handle), start=1):
            try:
                value = float(row[source.rating])
            except (TypeError, ValueError):
                raise DataError(
                    f"expected a number, got {row.get(source.rating)!r}",
                    path=str(source.path),
                    record=number,
                    field=source.rating,
                ) from None
            ratings.setdefault(row[source.user], {})[row[source.item]] = value
    return ratings
