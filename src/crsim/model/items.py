"""Items, item collections and their attribute index.

An `ItemCollection` keeps its items as columns (ids, titles, one list per field, shared strings and
value lists), not as one `Item` object per item: a million items as pydantic objects took about two
kilobytes each and a pickled object graph the domain cache had to memoise. An `Item` is made when one
is asked for (`collection[id]`, iteration); code that reads every item reads the columns instead
(`values_of`, `extra_column`, `titles`, `years`). Pickled, the columns are packed (strings joined,
repeated values coded; `packed_columns`), so a cache entry holds no per-item objects. The attribute
index is built by `value_index`.
"""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import Collection, Iterable, Iterator, Mapping
from functools import cache, cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from crsim.core.collector import collector_paused
from crsim.core.errors import DataError
from crsim.core.jsonl import jsonl_lines
from crsim.model.packed_columns import PackedColumn, PositionMap, StringColumn
from crsim.model.text import JSONTextError, clean_value, loads_clean, may_hold_surrogates
from crsim.model.value_index import value_index

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from crsim.model.linking import ItemLinker

    #: Catalogue positions of items, ascending (numpy is imported where arrays are made, so that
    #: reading the format does not import it).
    Positions = npt.NDArray[np.intp]

logger = logging.getLogger(__name__)


@cache
def _no_positions() -> Positions:
    import numpy as np

    return np.zeros(0, dtype=np.intp)


#: Attributes whose values are lists of names, indexed for lookup.
LIST_ATTRIBUTES = ("genres", "directors", "actors", "keywords")
#: The optional first-class fields of an item (beside id, title and extra), in declaration order.
FIRST_FIELDS = ("year", "genres", "directors", "actors", "plot", "keywords")

#: Items an `ItemCollection` keeps once made (see `ItemCollection._item`).
MADE_ITEMS = 16_384


class Item(BaseModel):
    """A recommendable item. Movie-shaped attributes are first-class; anything else goes in `extra`."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    title: str
    year: int | None = None
    genres: list[str] = Field(default_factory=list)
    directors: list[str] = Field(default_factory=list)
    actors: list[str] = Field(default_factory=list)
    plot: str | None = None
    keywords: list[str] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("title")
    @classmethod
    def _title_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("an item needs a non-empty title")
        return value

    @property
    def display_title(self) -> str:
        """Title with the year in parentheses, the way people write movie titles."""
        return f"{self.title} ({self.year})" if self.year else self.title

    def values(self, attribute: str) -> list[str]:
        """The values of an attribute as a list of strings (empty if absent)."""
        if attribute in LIST_ATTRIBUTES:
            return list(getattr(self, attribute))
        if attribute == "year":
            return [str(self.year)] if self.year else []
        if attribute == "decade":
            return [f"{self.year // 10 * 10}s"] if self.year else []
        if attribute in ("title", "plot"):
            value = getattr(self, attribute)
            return [value] if value else []
        return _extra_values(self.extra.get(attribute))


def _extra_values(raw: Any) -> list[str]:
    """`Item.values` of an `extra` field's raw value."""
    if raw is None:
        return []
    return [str(v) for v in raw] if isinstance(raw, list) else [str(raw)]


class ItemColumns:
    """Items added one by one into columns; `build` makes the `ItemCollection`.

    Values are kept as given (shared: equal lists of strings are stored once); the caller validates
    (an `Item`, or a record read by `crsim.domains.item_reader` that needs no validation beyond its id and
    title)."""

    def __init__(self) -> None:
        self.ids = StringColumn()
        self.titles = StringColumn()
        self.position = PositionMap()
        self.position.ids = self.ids
        self.first: dict[str, list[Any]] = {}
        self.extra: dict[str, list[Any]] = {}
        self.layouts: list[tuple[str, ...]] = []
        self._layouts: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._lists: dict[tuple[Any, ...], list[Any]] = {}

    def __contains__(self, item_id: object) -> bool:
        return item_id in self.position

    def __len__(self) -> int:
        return len(self.ids)

    def add(
        self, item_id: str, title: str, extra: Mapping[str, Any], first: Mapping[str, Any] | None = None
    ) -> None:
        """One item: its id (not yet added), title, `extra` fields and non-default first-class fields."""
        n = len(self.ids)
        self.position[item_id] = n
        self.ids.append(item_id)
        self.titles.append(title)
        for name, value in (first or {}).items():
            _put(self.first, name, n, self._shared(value))
        keys = tuple(extra)
        self.layouts.append(self._layouts.setdefault(keys, keys))
        for key, value in extra.items():
            _put(self.extra, key, n, self._shared(value))

    def add_item(self, item: Item) -> None:
        first = {}
        for name in FIRST_FIELDS:
            value = getattr(item, name)
            if value is not None and value != []:  # not the default
                first[name] = value
        self.add(item.id, item.title, item.extra, first)

    def _shared(self, value: Any) -> Any:
        """Equal lists of strings stored once (a multi-valued slot has few distinct combinations)."""
        if type(value) is list and len(value) <= 8 and all(type(v) is str for v in value):
            return self._lists.setdefault(tuple(value), value)
        return value

    def build(self, name: str, replaced: int = 0) -> ItemCollection:
        n = len(self.ids)
        for columns in (self.first, self.extra):
            for column in columns.values():
                column.extend([None] * (n - len(column)))
        return ItemCollection._from_columns(self, name, replaced)


def _put(columns: dict[str, list[Any]], key: str, n: int, value: Any) -> None:
    column = columns.get(key)
    if column is None:
        column = columns[key] = []
    if len(column) < n:
        column.extend([None] * (n - len(column)))
    column.append(value)


class ItemCollection:
    """An immutable set of items with an attribute index and a text linker.

    Shared read-only by all dialogues of a run; build it once and pass it around. Items come from
    files (item collections, dataset catalogues): text in them that cannot be written (lone
    surrogates) is replaced with U+FFFD here, counted in `replaced_code_points` and logged.
    """

    name: str
    replaced_code_points: int
    _ids: StringColumn
    _titles: StringColumn
    _position: PositionMap
    _first: dict[str, list[Any]]
    _extra: dict[str, list[Any]]
    _layouts: list[tuple[str, ...]]
    _indexes: dict[str, dict[str, Positions]]

    def __init__(
        self, items: Iterable[Item], name: str = "items", *, clean: bool = True, replaced: int = 0
    ) -> None:
        """`clean=False` skips the check for readers that cleaned the items themselves and counted
        `replaced` code points."""
        columns = ItemColumns()
        for item in items:
            if item.id in columns:
                raise DataError(f"duplicate item id {item.id!r}", path=name)
            if clean:
                item, count = writable_item(item)
                replaced += count
            columns.add_item(item)
        for column in (*columns.first.values(), *columns.extra.values()):
            column.extend([None] * (len(columns) - len(column)))
        self._adopt(columns, name, replaced)

    @classmethod
    def _from_columns(cls, columns: ItemColumns, name: str, replaced: int) -> ItemCollection:
        collection = cls.__new__(cls)
        collection._adopt(columns, name, replaced)
        return collection

    def _adopt(self, columns: ItemColumns, name: str, replaced: int) -> None:
        self.name = name
        self.replaced_code_points = replaced
        self._ids, self._titles, self._position = columns.ids, columns.titles, columns.position
        self._first, self._extra, self._layouts = columns.first, columns.extra, columns.layouts
        self._indexes = {}
        self._report_replaced()

    def _report_replaced(self) -> None:
        if self.replaced_code_points:
            logger.warning(
                "%s: %d unwritable code point(s) (lone surrogates) in item text replaced with U+FFFD",
                self.name,
                self.replaced_code_points,
            )

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[Item]:
        return (self._make(p) for p in range(len(self._ids)))

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._position

    def __getitem__(self, item_id: str) -> Item:
        return self._item(self._position[item_id])

    def get(self, item_id: str) -> Item | None:
        position = self._position.get(item_id)
        return None if position is None else self._item(position)

    def at(self, position: int) -> Item:
        """The item at a catalogue position (0 for the first)."""
        return self._item(position)

    def _item(self, p: int) -> Item:
        """The item at position `p`, made from the columns (the last `MADE_ITEMS` made are kept: a
        dialogue reads the same few items again and again)."""
        made = self.__dict__.get("_made")
        if made is None:
            made = self.__dict__["_made"] = {}
        item = made.get(p)
        if item is None:
            if len(made) >= MADE_ITEMS:
                made.clear()
            item = made[p] = self._make(p)
        return item

    def _make(self, p: int) -> Item:
        fields: dict[str, Any] = {"id": self._ids[p], "title": self._titles[p]}
        given = {"id", "title", "extra"}
        for name in FIRST_FIELDS:
            column = self._first.get(name)
            value = None if column is None else column[p]
            if value is None:
                fields[name] = [] if name in LIST_ATTRIBUTES else None
            else:
                fields[name] = list(value) if type(value) is list else value
                given.add(name)
        extra = self._extra
        fields["extra"] = {
            key: (list(value) if type(value) is list else value)
            for key in self._layouts[p]
            for value in (extra[key][p],)
        }
        # every field given: pydantic's construct calls no default factory (slow: it inspects them)
        return Item.model_construct(_fields_set=given, **fields)

    # --- columns: every item at once, in catalogue order -----------------------------------------

    @property
    def ids(self) -> list[str]:
        """The ids in catalogue order (shared: do not modify)."""
        return self._ids

    @property
    def titles(self) -> list[str]:
        """The titles in catalogue order (shared: do not modify)."""
        return self._titles

    @property
    def positions_by_id(self) -> Mapping[str, int]:
        """Item id -> catalogue position (shared: do not modify)."""
        return self._position

    @property
    def years(self) -> list[int | None]:
        return self._first.get("year") or [None] * len(self._ids)

    def field_column(self, name: str) -> list[Any] | None:
        """A first-class field's values (None where an item has the default), or None if no item has it."""
        return self._first.get(name)

    def extra_column(self, key: str) -> list[Any] | None:
        """`extra[key]` of every item (None where absent), or None when no item has the key."""
        return self._extra.get(key)

    @property
    def extra_keys(self) -> list[str]:
        return list(self._extra)

    def has_extra(self, position: int, key: str) -> bool:
        """Whether the item at `position` has `key` in `extra` (its value may be None)."""
        return key in self._layouts[position]

    def display_titles(self) -> Iterator[str]:
        """`Item.display_title` of every item."""
        for title, year in zip(self._titles, self.years, strict=True):
            yield f"{title} ({year})" if year else title

    def values_of(self, attribute: str) -> Iterator[list[str]]:
        """`Item.values(attribute)` of every item, in catalogue order, without making the items."""
        n = len(self._ids)
        if attribute in LIST_ATTRIBUTES:
            column = self._first.get(attribute)
            return (list(v) if v else [] for v in column) if column else ([] for _ in range(n))
        if attribute in ("year", "decade"):
            years = self.years
            if attribute == "year":
                return ([str(y)] if y else [] for y in years)
            return ([f"{y // 10 * 10}s"] if y else [] for y in years)
        if attribute == "title":
            return ([t] if t else [] for t in self._titles)
        if attribute == "plot":
            column = self._first.get("plot")
            return ([v] if v else [] for v in column) if column else ([] for _ in range(n))
        column = self._extra.get(attribute)
        return (_extra_values(v) for v in column) if column else ([] for _ in range(n))

    # --- the attribute index ---------------------------------------------------------------------

    def _index(self, attribute: str) -> dict[str, Positions]:
        """Lower-cased value -> positions of the items holding it (ascending), for one attribute, in
        the order values first occur; built on first use.

        Any attribute can be looked up (a domain's slots name movie fields or `extra` keys alike)."""
        cached = self._indexes.get(attribute)
        if cached is None:
            with collector_paused():
                column = self.extra_column(attribute)
                single = column is not None and attribute not in (
                    *LIST_ATTRIBUTES,
                    "year",
                    "decade",
                    "title",
                    "plot",
                )
                cached = self._indexes[attribute] = value_index(self, attribute, single)
        return cached

    def positions(self, attribute: str, value: str) -> Positions:
        """Catalogue positions (ascending) of the items whose `attribute` has `value` (case-insensitive)."""
        return self._index(attribute).get(value.lower(), _no_positions())

    def with_value(self, attribute: str, value: str) -> frozenset[str]:
        """Ids of items whose `attribute` has `value` (case-insensitive); made once per value asked
        for (`among` finds the few of a small set without making it)."""
        sets = self.__dict__.setdefault("_sets", {})
        key = (attribute, value.lower())
        found: frozenset[str] | None = sets.get(key)
        if found is None:
            ids = self._ids
            found = sets[key] = frozenset([ids[p] for p in self.positions(attribute, value).tolist()])
        return found

    def among(self, attribute: str, value: str, ids: Collection[str]) -> frozenset[str]:
        """The ids in `ids` whose `attribute` has `value`: `with_value(attribute, value) & ids`, in time
        that grows with `ids` (a user's few rated items against a value a million items hold)."""
        import numpy as np

        positions = self.positions(attribute, value)
        if len(ids) * 16 >= len(positions):
            return self.with_value(attribute, value) & frozenset(ids)
        at = self._position
        wanted = [i for i in ids if i in at]
        mine = np.fromiter((at[i] for i in wanted), dtype=np.intp, count=len(wanted))
        slot = np.minimum(np.searchsorted(positions, mine), len(positions) - 1)
        hit = positions[slot] == mine if len(positions) else np.zeros(len(mine), dtype=bool)
        return frozenset(i for i, yes in zip(wanted, hit.tolist(), strict=True) if yes)

    def vocabulary(self, attribute: str) -> list[str]:
        """All distinct (lower-cased) values of an attribute."""
        return sorted(self._index(attribute))

    def value_counts(self, attribute: str) -> dict[str, int]:
        return {v: len(positions) for v, positions in self._index(attribute).items()}

    def value_index(self, attribute: str) -> Mapping[str, Positions]:
        """Lower-cased value -> positions (ascending) of the items holding it (shared: do not modify)."""
        return self._index(attribute)

    @cached_property
    def linker(self) -> ItemLinker:
        from crsim.model.linking import ItemLinker

        with collector_paused():
            return ItemLinker(self)

    # --- pickling: packed columns, no per-item objects --------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        left = ("_first", "_extra", "_layouts", "_made", "_sets")
        state = {k: v for k, v in self.__dict__.items() if k not in left}
        state["_first"] = {k: PackedColumn.pack(v) for k, v in self._first.items()}
        state["_extra"] = {k: PackedColumn.pack(v) for k, v in self._extra.items()}
        state["_layouts"] = PackedColumn.pack(self._layouts)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state["_first"] = {k: v.unpack() for k, v in state["_first"].items()}
        state["_extra"] = {k: v.unpack() for k, v in state["_extra"].items()}
        state["_layouts"] = state["_layouts"].unpack()
        self.__dict__.update(state)

    # --- persistence -------------------------------------------------------------------------

    @classmethod
    def from_jsonl(cls, path: str | Path, name: str | None = None) -> ItemCollection:
        """Read one item per line from a `.jsonl` or `.jsonl.gz` file."""
        path = Path(path)
        if not path.exists():
            raise DataError(
                "file not found; expected an item collection (.jsonl or .jsonl.gz)", path=str(path)
            )
        columns, replaced, first = ItemColumns(), 0, dict[str, int]()
        try:
            for number, raw in jsonl_lines(path):
                item, in_line = _item_from_line(raw, str(path), number)
                if item.id in first:
                    raise DataError(
                        f"duplicate item id {item.id!r}; expected each id once (first at record "
                        f"{first[item.id]})",
                        path=str(path),
                        record=number,
                        field="id",
                    )
                first[item.id] = number
                columns.add_item(item)
                replaced += in_line
        except (OSError, EOFError) as exc:  # a truncated or non-gzip .gz file
            raise DataError(f"cannot read the file ({exc})", path=str(path)) from None
        return columns.build(name or path.name, replaced)

    def to_jsonl(self, path: str | Path) -> None:
        path = Path(path)
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "wt", encoding="utf-8") as handle:
            for item in self:
                handle.write(json.dumps(item.model_dump(exclude_defaults=True), ensure_ascii=False) + "\n")


def writable_item(item: Item) -> tuple[Item, int]:
    """`item`, or a copy with lone surrogates in its text replaced by U+FFFD, and how many."""
    fields, replaced = clean_value(dict(item))
    return (Item.model_validate(fields) if replaced else item), replaced


def _item_from_line(raw: bytes, path: str, number: int) -> tuple[Item, int]:
    """One item from one line of a JSONL file and the lone surrogates replaced in it; DataError
    naming the file, line and field otherwise."""
    try:
        text = raw.decode("utf-8")
        if not may_hold_surrogates(text):
            return Item.model_validate_json(text), 0
        # pydantic's parser refuses lone-surrogate escapes: read them, replace them, count them
        fields, replaced = _loads(text, path, number)
        return Item.model_validate(fields), replaced
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text (byte {exc.start})", path=path, record=number) from None
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or None
        raise DataError(err["msg"], path=path, record=number, field=field) from None


def _loads(text: str, path: str, number: int) -> tuple[Any, int]:
    try:
        return loads_clean(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"not valid JSON ({exc.msg})", path=path, record=number) from None
    except JSONTextError as exc:
        raise DataError(f"not readable JSON ({exc})", path=path, record=number) from None
