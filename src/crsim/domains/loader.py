"""Reading a domain file into a `Domain`, and checking one: every problem located (file, line, field).

`check_domain_file` collects all problems it can find (schema, items, slots against the items,
ratings, profile and phrasing files); `read_domain_file` is the same check, raising on the first
problem, so a run and `crsim domain check` never disagree about a file.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from crsim.core.collector import long_lived_objects_frozen
from crsim.core.errors import ConfigError, CrsimError, DataError
from crsim.core.yaml_files import describe_yaml_error, key_lines, load_yaml
from crsim.domains.schema import DomainFile, ItemsSpec, SlotSpec
from crsim.model.domain import Domain, RatingsSource, Slot, SlotKind
from crsim.model.items import Item, ItemCollection, ItemColumns, writable_item
from crsim.model.text import may_hold_surrogates

#: Item fields that are first-class (`Item`); any other field of an item record goes to `Item.extra`.
_ITEM_FIELDS = frozenset(Item.model_fields) - {"id", "title", "extra"}


@dataclass
class DomainCheck:
    """What checking a domain file found: problems (each one line, located), warnings, the domain."""

    path: Path
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    domain: Domain | None = None
    #: Problems found but not listed (beyond `MAX_LISTED_PROBLEMS` of one item file).
    unlisted: int = 0
    #: The items that did read when the item file has problems (so the slots are still checked).
    partial_items: ItemCollection | None = None

    @property
    def count(self) -> int:
        """All problems found, listed or not."""
        return len(self.problems) + self.unlisted

    @property
    def ok(self) -> bool:
        return not self.problems and self.domain is not None


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
        items = _read_items(path.parent / spec.items.path, spec, check)
    slots = _slots(spec, items or check.partial_items, check)
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
    """The item collection, or None with every problem of the item file noted (up to
    `MAX_LISTED_PROBLEMS`, then their count); the items that did read are still checked against the
    slots, so one look at `crsim domain check` shows everything wrong with a catalogue."""
    multi = {s.attribute or name for name, s in spec.slots.items() if s.kind is SlotKind.MULTI}
    if _item_shaped(path, spec.items):
        try:  # records already in crsim's item format (the shipped movies): the fast reader
            return ItemCollection.from_jsonl(path, name=spec.name)
        except DataError:
            pass  # other fields or a bad record: the general reader below says where, for every record
    problems = _ItemProblems(check, path)
    columns = ItemColumns()
    first_seen: list[str | int] = []  # per item: its record number, or its label when a CSV line
    shared = _Shared()
    replaced = 0
    try:
        for record in _records(path, spec.items, problems):
            try:
                found = _item(record, spec.items, multi, shared)
            except _RecordProblem as exc:
                problems.add(f"{record.where(path, spec.items)}, {exc}")
                continue
            item_id = found.id if isinstance(found, Item) else found[0]
            if item_id in columns:
                first = first_seen[columns.position[item_id]]
                problems.add(
                    f"{record.where(path, spec.items)}: duplicate item id; expected each id once "
                    f"(first at {first if isinstance(first, str) else f'record {first}'})"
                )
                continue
            if isinstance(found, Item):
                if record.surrogates:  # only a JSON escape can give a lone surrogate (CSV is UTF-8 text)
                    found, count = writable_item(found)
                    replaced += count
                columns.add_item(found)
            else:
                columns.add(*found)
            first_seen.append(record.label if record.csv else record.number)
    except CrsimError as exc:
        problems.add(str(exc))
    if not len(columns) and not problems.count:
        problems.add(f"{path}: no items; expected one item per record")
    problems.close()
    collection = columns.build(spec.name, replaced) if len(columns) else None
    if problems.count:
        check.partial_items = collection
        return None
    return collection


#: How many problems of one item file are listed; the rest are counted (a file with a systematic
#: defect would otherwise print one line per record).
MAX_LISTED_PROBLEMS = 20

#: The longest CSV cell read, in characters: 128 Ki, the csv module's own default limit, far above
#: any item description (the shipped movie plots are under 5,000) and small enough that an untrusted
#: file cannot make one cell a memory problem. A longer cell is a located problem, not a crash.
MAX_CELL_CHARS = 131_072


class _RecordProblem(Exception):
    """One record's problem: the field and what is wrong (the reader adds file, record and id)."""


@dataclass
class _ItemProblems:
    """The problems of one item file: the first `MAX_LISTED_PROBLEMS` listed, the rest counted."""

    check: DomainCheck
    path: Path
    count: int = 0

    def add(self, problem: str) -> None:
        self.count += 1
        if self.count <= MAX_LISTED_PROBLEMS:
            self.check.problems.append(f"items.path: {problem}")

    def close(self) -> None:
        rest = self.count - MAX_LISTED_PROBLEMS
        if rest > 0:
            self.check.problems.append(
                f"items.path: {self.path}: {rest} more problem{'s' if rest > 1 else ''} not listed "
                f"(the first {MAX_LISTED_PROBLEMS} are above)"
            )
            self.check.unlisted += rest - 1  # the line above stands for one of them


@dataclass
class _Record:
    """One record of an item file: its number among the records, the line it starts on, its fields."""

    number: int
    line: int
    fields: dict[str, Any]
    csv: bool
    #: The record's JSON text holds an escape of a lone surrogate (its strings must be cleaned).
    surrogates: bool = False

    @property
    def label(self) -> str:
        return f"record {self.number}" + (f" (line {self.line})" if self.csv else "")

    def where(self, path: Path, spec: ItemsSpec) -> str:
        """`file, record N (line L, id 'x')`: enough to find the record in an editor."""
        item_id = self.fields.get(spec.id)
        at = [f"line {self.line}"] if self.csv else []
        if item_id not in (None, ""):
            at.append(f"id {_short(str(item_id))}")
        return f"{path}, record {self.number}" + (f" ({', '.join(at)})" if at else "")


def _short(text: str, keep: int = 40) -> str:
    return repr(text if len(text) <= keep else text[:keep] + "...")


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


def _records(path: Path, spec: ItemsSpec, problems: _ItemProblems) -> Iterator[_Record]:
    """The records of a JSONL or CSV item file; a record that cannot be read is a problem noted in
    `problems` and skipped. CSV cells are strings, empty ones left out."""
    if not path.is_file():
        raise DataError("file not found; expected an item file (.jsonl, .jsonl.gz or .csv)", path=str(path))
    if path.name.endswith((".csv", ".csv.gz")):
        yield from _csv_records(path, spec, problems)
        return
    if not path.name.endswith((".jsonl", ".jsonl.gz", ".json")):
        raise DataError("unknown item file type; expected .jsonl, .jsonl.gz or .csv", path=str(path))
    for number, line in enumerate(_text_lines(path), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.add(f"{path}, record {number}: not valid JSON ({exc.msg})")
            continue
        if not isinstance(record, dict):
            problems.add(f"{path}, record {number}: expected a JSON object (one item per line)")
            continue
        yield _Record(number, number, record, csv=False, surrogates=may_hold_surrogates(line))


def _csv_records(path: Path, spec: ItemsSpec, problems: _ItemProblems) -> Iterator[_Record]:
    """The rows of a CSV item file under its header. A row with more or fewer cells than the header
    (a stray separator or quote) and a cell over `MAX_CELL_CHARS` are problems, never guessed at."""
    lines = _Lines(_text_lines(path))
    reader = csv.reader(lines)
    header: list[str] | None = None
    number = 0
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:  # the csv module's own cell limit (or a NUL byte): that row only
            if header is None:
                raise DataError(
                    f"line {start} (the header): not readable as CSV ({exc})", path=str(path)
                ) from None
            number += 1
            problems.add(_unreadable_row(path, spec, header, number, start, lines.last, exc))
            continue
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if header is None:
            header = row
            _check_header(path, header)
            continue
        number += 1
        record = _Record(number, start, dict(zip(header, row, strict=False)), csv=True)
        if len(row) != len(header):
            problems.add(
                f"{record.where(path, spec)}: {len(row)} cells; expected {len(header)}, one per "
                "column of the header (a stray separator or quote?)"
            )
            continue
        if max(map(len, row)) > MAX_CELL_CHARS:
            long = next(n for n, cell in zip(header, row, strict=True) if len(cell) > MAX_CELL_CHARS)
            problems.add(f"{record.where(path, spec)}, field '{long}': {_too_long(MAX_CELL_CHARS)}")
            continue
        record.fields = {k: v for k, v in record.fields.items() if v != ""}
        yield record
    if header is None:
        raise DataError("empty file; expected a header row and one row per item", path=str(path))


class _Lines:
    """The lines of a text, remembering the last one handed out (to locate a row the csv module
    refused)."""

    def __init__(self, text: Iterator[str]) -> None:
        self._text, self.last = text, ""

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        self.last = next(self._text)
        return self.last


def _unreadable_row(
    path: Path, spec: ItemsSpec, header: list[str], number: int, line: int, text: str, exc: csv.Error
) -> str:
    """The problem of a row the csv module refused: for an over-long cell, its column (and the id
    when it comes before), read from the start of the row."""
    if "field limit" not in str(exc):
        return f"{path}, record {number} (line {line}): not readable as CSV ({exc})"
    limit = min(csv.field_size_limit(), MAX_CELL_CHARS)
    try:
        cells = next(csv.reader([text[:limit]]), [])
    except csv.Error:
        cells = []
    record = _Record(number, line, dict(zip(header, cells[:-1], strict=False)), csv=True)
    column = header[len(cells) - 1] if 0 < len(cells) <= len(header) else None
    field = f", field '{column}'" if column else ""
    return f"{record.where(path, spec)}{field}: {_too_long(limit)}"


def _too_long(limit: int) -> str:
    return f"a cell over {limit:,} characters; expected at most {limit:,} characters per cell"


def _check_header(path: Path, header: list[str]) -> None:
    """Column names are given and distinct (a repeated column would silently shadow the other)."""
    blank = [str(n) for n, name in enumerate(header, start=1) if not name.strip()]
    repeated = sorted({name for name in header if header.count(name) > 1})
    if blank:
        raise DataError(f"line 1: column(s) {', '.join(blank)} of the header have no name", path=str(path))
    if repeated:
        raise DataError(
            f"line 1: column(s) {', '.join(map(repr, repeated))} named twice in the header; expected "
            "distinct names",
            path=str(path),
        )


def _text_lines(path: Path) -> Iterator[str]:
    """The lines of a plain or gzip UTF-8 file (line ends kept, a leading BOM dropped), read as they
    are needed: a million-item file read whole held four bytes per character at once. DataError
    naming the byte of the first thing that is not UTF-8, or why the file cannot be read."""
    opener = gzip.open if path.suffix == ".gz" else open
    offset = 0
    try:
        with opener(path, "rb") as handle:
            for number, raw in enumerate(handle):
                start = 3 if number == 0 and raw.startswith(b"\xef\xbb\xbf") else 0
                try:
                    text = raw[start:].decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise DataError(
                        f"not UTF-8 text (byte {offset + start + exc.start})", path=str(path)
                    ) from None
                offset += len(raw)
                if "\r" in text:  # a lone CR ends a line too (as in universal newlines)
                    yield from (piece for piece in _CR_SPLIT.split(text) if piece)
                else:
                    yield text
    except (OSError, EOFError) as exc:
        raise DataError(f"cannot read the file ({exc})", path=str(path)) from None


#: Splits text after a carriage return that no line feed follows.
_CR_SPLIT = re.compile(r"(?<=\r)(?!\n)")


class _Shared:
    """One string object per distinct field name and per distinct short value of the item file.

    A JSON or CSV reader makes a new string for every occurrence; a million items with ten fields
    and a few dozen cuisines held ten million copies of the same few hundred strings (about a
    kilobyte per item). Values longer than `SHORT` characters (descriptions) are kept as read."""

    SHORT = 40

    def __init__(self) -> None:
        self.pool: dict[str, str] = {}

    def key(self, text: str) -> str:
        return self.pool.setdefault(text, text)

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.pool.setdefault(value, value) if len(value) <= self.SHORT else value
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return [self.pool.setdefault(v, v) if len(v) <= self.SHORT else v for v in value]
        return value


def _item(
    record: _Record, spec: ItemsSpec, multi: set[str], shared: _Shared
) -> Item | tuple[str, str, dict[str, Any]]:
    """One item from one record: id and title from the named fields, movie fields first-class, the
    rest in `extra` (names and short values shared, `_Shared`); a multi-valued slot's CSV cell split
    on the separator. A record of id, title and other fields only needs no validation beyond its
    title and is returned as (id, title, extra); one with movie fields (or lone surrogates to clean)
    as a validated `Item`. `_RecordProblem` naming the field otherwise (the caller says where: file,
    record, id; only for a record with a problem)."""
    fields = record.fields
    for name in (spec.id, spec.title):
        if fields.get(name) in (None, ""):
            what = "id" if name == spec.id else "title"
            raise _RecordProblem(f"field '{name}': missing; expected the item's {what}")
    item_id, title = str(fields[spec.id]), str(fields[spec.title])
    extra: dict[str, Any] = {}
    first: dict[str, Any] = {}
    for key, value in fields.items():
        if key == spec.id or key == spec.title:
            continue
        if key in multi and isinstance(value, str):
            value = [v.strip() for v in value.split(spec.separator) if v.strip()]
        if key == "extra" and isinstance(value, dict):
            extra.update(value)
        elif key in _ITEM_FIELDS:
            first[key] = value
        else:
            extra[shared.key(key)] = shared.value(value)
    if not first and not record.surrogates and title.strip():
        return item_id, title, extra
    try:
        return Item.model_validate({"id": item_id, "title": title, **first, "extra": extra})
    except ValidationError as exc:
        found = []
        for err in exc.errors():
            loc = [str(p) for p in err["loc"]]
            name = {"id": spec.id, "title": spec.title}.get(loc[0], loc[0]) if loc else ""
            found.append(f"field '{'.'.join([name, *loc[1:]])}': {err['msg']}" if loc else err["msg"])
        raise _RecordProblem("; ".join(found)) from None


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
    if slot.kind is SlotKind.TEXT:  # free text is never looked up by value: no index of it is built
        if not any(items.values_of(slot.attribute)):
            check.problems.append(
                f"{where}: no item has attribute {slot.attribute!r}; expected it in the item file"
            )
        return
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
        rows = csv.DictReader(handle)
        number = 0
        while True:
            number += 1
            try:
                row = next(rows)
            except StopIteration:
                break
            except csv.Error as exc:  # a cell over the csv module's limit: no ratings table has one
                raise DataError(
                    f"not readable as CSV ({exc})", path=str(source.path), record=number
                ) from None
            if None in row or None in row.values():
                raise DataError(
                    f"{'more' if None in row else 'fewer'} cells than the header's "
                    f"{len(rows.fieldnames or [])} columns; expected one per column",
                    path=str(source.path),
                    record=number,
                )
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
