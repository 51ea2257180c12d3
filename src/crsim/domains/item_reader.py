"""The items of a domain's item file: each record turned into an item (movie fields first-class, the
rest in `extra`), duplicate ids and bad fields noted as located problems."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from crsim.core.errors import CrsimError, DataError
from crsim.domains.findings import DomainCheck, ItemProblems
from crsim.domains.item_records import Record, records
from crsim.domains.schema import DomainFile, ItemsSpec
from crsim.model.domain import SlotKind
from crsim.model.items import Item, ItemCollection, ItemColumns, writable_item

#: Item fields that are first-class (`Item`); any other field of an item record goes to `Item.extra`.
_ITEM_FIELDS = frozenset(Item.model_fields) - {"id", "title", "extra"}


def read_items(path: Path, spec: DomainFile, check: DomainCheck) -> ItemCollection | None:
    """The item collection, or None with every problem of the item file noted (up to
    `MAX_LISTED_PROBLEMS`, then their count); the items that did read are still checked against the
    slots, so one look at `crsim domain check` shows everything wrong with a catalogue."""
    multi = {s.attribute or name for name, s in spec.slots.items() if s.kind is SlotKind.MULTI}
    if _item_shaped(path, spec.items):
        try:  # records already in crsim's item format (the shipped movies): the fast reader
            return ItemCollection.from_jsonl(path, name=spec.name)
        except DataError:
            pass  # other fields or a bad record: the general reader below says where, for every record
    problems = ItemProblems(check, path)
    columns = ItemColumns()
    first_seen: list[str | int] = []  # per item: its record number, or its label when a CSV line
    shared = _Shared()
    replaced = 0
    try:
        for record in records(path, spec.items, problems):
            try:
                found = _item(record, spec.items, multi, shared)
            except RecordProblem as exc:
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


class RecordProblem(Exception):
    """One record's problem: the field and what is wrong (the reader adds file, record and id)."""


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
    record: Record, spec: ItemsSpec, multi: set[str], shared: _Shared
) -> Item | tuple[str, str, dict[str, Any]]:
    """One item from one record: id and title from the named fields, movie fields first-class, the
    rest in `extra` (names and short values shared, `_Shared`); a multi-valued slot's CSV cell split
    on the separator. A record of id, title and other fields only needs no validation beyond its
    title and is returned as (id, title, extra); one with movie fields (or lone surrogates to clean)
    as a validated `Item`. `RecordProblem` naming the field otherwise (the caller says where: file,
    record, id; only for a record with a problem)."""
    fields = record.fields
    for name in (spec.id, spec.title):
        if fields.get(name) in (None, ""):
            what = "id" if name == spec.id else "title"
            raise RecordProblem(f"field '{name}': missing; expected the item's {what}")
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
        raise RecordProblem("; ".join(found)) from None
