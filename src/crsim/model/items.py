"""Items, item collections and their attribute index."""

from __future__ import annotations

import gzip
import json
import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from crsim.core.collector import collector_paused
from crsim.core.errors import DataError
from crsim.core.jsonl import jsonl_lines
from crsim.model.text import JSONTextError, clean_value, loads_clean, may_hold_surrogates

if TYPE_CHECKING:
    from crsim.model.linking import ItemLinker

logger = logging.getLogger(__name__)

#: Attributes whose values are lists of names, indexed for lookup.
LIST_ATTRIBUTES = ("genres", "directors", "actors", "keywords")


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
        raw = self.extra.get(attribute)
        if raw is None:
            return []
        return [str(v) for v in raw] if isinstance(raw, list) else [str(raw)]


class ItemCollection:
    """An immutable set of items with an attribute index and a text linker.

    Shared read-only by all dialogues of a run; build it once and pass it around. Items come from
    files (item collections, dataset catalogues): text in them that cannot be written (lone
    surrogates) is replaced with U+FFFD here, counted in `replaced_code_points` and logged.
    """

    def __init__(
        self, items: Iterable[Item], name: str = "items", *, clean: bool = True, replaced: int = 0
    ) -> None:
        """`clean=False` skips the check for readers that cleaned the items themselves and counted
        `replaced` code points."""
        self.name = name
        self._items: dict[str, Item] = {}
        self._indexes: dict[str, dict[str, frozenset[str]]] = {}
        self.replaced_code_points = replaced
        for item in items:
            if item.id in self._items:
                raise DataError(f"duplicate item id {item.id!r}", path=name)
            if clean:
                item, count = writable_item(item)
                self.replaced_code_points += count
            self._items[item.id] = item
        self._report_replaced()

    def _report_replaced(self) -> None:
        if self.replaced_code_points:
            logger.warning(
                "%s: %d unwritable code point(s) (lone surrogates) in item text replaced with U+FFFD",
                self.name,
                self.replaced_code_points,
            )

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Item]:
        return iter(self._items.values())

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._items

    def __getitem__(self, item_id: str) -> Item:
        return self._items[item_id]

    def get(self, item_id: str) -> Item | None:
        return self._items.get(item_id)

    @property
    def ids(self) -> list[str]:
        return list(self._items)

    def _index(self, attribute: str) -> dict[str, frozenset[str]]:
        """Lower-cased value -> ids of the items holding it, for one attribute; built on first use.

        Any attribute can be looked up (a domain's slots name movie fields or `extra` keys alike)."""
        cached = self._indexes.get(attribute)
        if cached is None:
            index: dict[str, set[str]] = defaultdict(set)
            for item in self._items.values():
                for value in item.values(attribute):
                    index[value.lower()].add(item.id)
            cached = self._indexes[attribute] = {v: frozenset(ids) for v, ids in index.items()}
        return cached

    def with_value(self, attribute: str, value: str) -> frozenset[str]:
        """Ids of items whose `attribute` has `value` (case-insensitive)."""
        return self._index(attribute).get(value.lower(), frozenset())

    def vocabulary(self, attribute: str) -> list[str]:
        """All distinct (lower-cased) values of an attribute."""
        return sorted(self._index(attribute))

    def value_counts(self, attribute: str) -> dict[str, int]:
        return {v: len(ids) for v, ids in self._index(attribute).items()}

    @cached_property
    def linker(self) -> ItemLinker:
        from crsim.model.linking import ItemLinker

        with collector_paused():
            return ItemLinker(self)

    # --- persistence -------------------------------------------------------------------------

    @classmethod
    def from_jsonl(cls, path: str | Path, name: str | None = None) -> ItemCollection:
        """Read one item per line from a `.jsonl` or `.jsonl.gz` file."""
        path = Path(path)
        if not path.exists():
            raise DataError(
                "file not found; expected an item collection (.jsonl or .jsonl.gz)", path=str(path)
            )
        items, replaced, first = [], 0, dict[str, int]()
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
                items.append(item)
                replaced += in_line
        except (OSError, EOFError) as exc:  # a truncated or non-gzip .gz file
            raise DataError(f"cannot read the file ({exc})", path=str(path)) from None
        collection = cls(items, name=name or path.name, clean=False)
        collection.replaced_code_points = replaced
        collection._report_replaced()
        return collection

    def to_jsonl(self, path: str | Path) -> None:
        path = Path(path)
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "wt", encoding="utf-8") as handle:
            for item in self._items.values():
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
