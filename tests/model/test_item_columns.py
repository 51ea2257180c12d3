"""The columnar item collection gives back exactly the items it was given, reads every item's values
without making items, and pickles into packed columns (a domain cache entry holds no per-item objects)."""

from __future__ import annotations

import pickle
import pickletools
from pathlib import Path

import numpy as np
import pytest

from crsim.domains.loader import read_domain_file
from crsim.domains.movielens import movie_items
from crsim.model.items import Item, ItemCollection
from crsim.model.packed_columns import PackedColumn

ATTRIBUTES = ("genres", "directors", "actors", "keywords", "year", "decade", "title", "plot")
ATTRIBUTES += ("studio", "tags", "flag", "score", "nested", "empty", "none", "missing", "id")


def _items() -> list[Item]:
    """Items with every kind of field: first-class ones set and unset (a year 0, an empty plot), extra
    values that are strings, numbers, booleans, lists (shared and repeated), None, a mapping."""
    return [
        Item(id="a", title="Alien", year=1979, genres=["horror", "sci-fi"], directors=["Ridley Scott"]),
        Item(id="b", title="Aliens", year=1986, genres=["Action", "sci-fi", "action"], plot="More."),
        Item(id="c", title="Heat", year=0, plot="", extra={"studio": "Warner", "tags": ["a"], "flag": True}),
        Item(id="d", title="Untitled", extra={"tags": ["a", "b"], "flag": 1, "score": 2.5, "none": None}),
        Item(
            id="e", title="Odd", extra={"nested": {"k": [1, 2]}, "empty": "", "studio": "WARNER", "score": 2}
        ),
        Item(id="f", title="Plain", keywords=["heist"], actors=["Al Pacino", "Robert De Niro"]),
    ]


def test_the_collection_gives_back_the_items_it_was_given() -> None:
    given = _items()
    items = ItemCollection(given, name="test")
    assert list(items) == given
    assert [items[i.id] for i in given] == given
    assert [i.model_dump() for i in items] == [i.model_dump() for i in given]
    assert [list(i.extra) for i in items] == [list(i.extra) for i in given]  # key order kept
    assert items.get("zzz") is None and "a" in items and "zzz" not in items


def test_made_items_do_not_share_lists_with_the_columns() -> None:
    items = ItemCollection(_items(), name="test")
    items.at(0).genres.append("western")
    next(iter(items)).genres.append("musical")
    assert items.with_value("genres", "western") == frozenset()
    assert ItemCollection(_items()).at(2).extra["tags"] == ["a"]
    assert next(iter(ItemCollection(_items()))).genres == ["horror", "sci-fi"]


@pytest.mark.parametrize("attribute", ATTRIBUTES)
def test_columns_read_as_the_items_do(attribute: str) -> None:
    given = _items()
    items = ItemCollection(given, name="test")
    assert list(items.values_of(attribute)) == [i.values(attribute) for i in given]
    expected: dict[str, set[str]] = {}
    for item in given:
        for value in item.values(attribute):
            expected.setdefault(value.lower(), set()).add(item.id)
    assert items.vocabulary(attribute) == sorted(expected)
    assert list(items.value_index(attribute)) == list(expected)  # values in order of first occurrence
    for value, ids in expected.items():
        assert items.with_value(attribute, value.upper()) == ids
        positions = items.positions(attribute, value)
        assert positions.tolist() == sorted(items.positions_by_id[i] for i in ids)


def test_display_titles_and_years() -> None:
    given = _items()
    items = ItemCollection(given, name="test")
    assert list(items.display_titles()) == [i.display_title for i in given]
    assert items.years == [i.year for i in given]
    assert items.ids == [i.id for i in given] and items.titles == [i.title for i in given]


def test_a_pickled_collection_is_the_same_collection() -> None:
    items = ItemCollection(_items(), name="test")
    items.with_value("genres", "sci-fi")  # an index built before pickling travels with it
    again = pickle.loads(pickle.dumps(items, protocol=pickle.HIGHEST_PROTOCOL))
    assert list(again) == list(items) and again.name == "test"
    assert again.with_value("genres", "SCI-FI") == {"a", "b"}
    assert again["d"] == items["d"] and again.positions_by_id == items.positions_by_id


def test_a_pickled_catalogue_holds_packed_columns(tmp_path: Path) -> None:
    """5,000 items with distinct names and descriptions pickle as a few strings and arrays: no
    string object per item (a pickle memoises every one, which held a million-item entry back)."""
    lines = [
        f'{{"id": "v{n}", "name": "Place {n}", "cuisine": "{("thai", "indian")[n % 2]}", '
        f'"features": {["wifi"] if n % 3 else ["wifi", "parking"]}, "rating": {n % 5}, '
        f'"description": "quiet room number {n}", "reviews": {n * 7}}}'.replace("'", '"')
        for n in range(5000)
    ]
    (tmp_path / "items.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "domain.yaml").write_text(
        "name: places\nitems: {path: items.jsonl, id: id, title: name}\n"
        "slots:\n  cuisine: {kind: categorical}\n  features: {kind: multi}\n  rating: {kind: numeric}\n"
        "  description: {kind: text}\n",
        encoding="utf-8",
    )
    items = read_domain_file(tmp_path / "domain.yaml").items
    payload = pickle.dumps(items, protocol=pickle.HIGHEST_PROTOCOL)
    strings = sum(1 for op, _, _ in pickletools.genops(payload) if "UNICODE" in op.name)
    assert strings < 100
    again = pickle.loads(payload)
    assert list(again) == list(items)
    assert again["v7"].extra == {
        "cuisine": "indian",
        "features": ["wifi"],
        "rating": 2,
        "description": "quiet room number 7",
        "reviews": 49,
    }


@pytest.mark.parametrize(
    "column",
    [
        ["a", "b", "a", "a", "a", "a", "b", "a"],
        ["x\x00y", "z"],
        [f"unique {n}" for n in range(10)],
        [1, 2, 3, 2**70],
        [1, None, 1, 1, 1, 1, 1, 1],
        [True, 1, 1.0, "1"],
        [["a"], ["a"], ["a"], ["a", "b"], ["a"], ["a"], ["a"], ["a"]],
        [{"k": 1}, [{"k": 2}], None],
        [("t",), ("t",), ("t",), ("t",), ("u",)],
        [],
    ],
)
def test_packed_columns_unpack_to_the_same_values(column: list[object]) -> None:
    again = pickle.loads(pickle.dumps(PackedColumn.pack(column))).unpack()
    assert again == column
    assert [type(v) for v in again] == [type(v) for v in column]


def test_the_shipped_movies_read_by_columns() -> None:
    items = movie_items()
    first = next(iter(items))
    assert items[first.id] == first
    genres = np.concatenate(list(items.value_index("genres").values()))
    assert len(np.unique(genres)) == sum(1 for values in items.values_of("genres") if values)


def test_among_is_with_value_and_the_given_ids() -> None:
    items = ItemCollection(
        [Item(id=f"i{n}", title=f"T{n}", genres=["even" if n % 2 == 0 else "odd"]) for n in range(200)]
    )
    for ids in (frozenset({"i2", "i3", "i4", "nope"}), frozenset(f"i{n}" for n in range(0, 200, 3))):
        for value in ("even", "ODD", "none"):
            assert items.among("genres", value, ids) == items.with_value("genres", value) & ids


def test_a_pickled_position_map_shares_the_id_column() -> None:
    items = ItemCollection(_items(), name="test")
    again = pickle.loads(pickle.dumps((items, items.positions_by_id), protocol=pickle.HIGHEST_PROTOCOL))
    assert again[1] is again[0].positions_by_id
    assert next(iter(again[1])) is again[0].ids[0]  # one string per id, not one for each structure
