"""Items and item collections: attribute index, JSONL round trip, errors that say where, shipped movies."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from crsim.core.errors import DataError
from crsim.domains.movielens import movie_items
from crsim.model.items import Item, ItemCollection


def _collection() -> ItemCollection:
    return ItemCollection(
        [
            Item(id="a", title="Alien", year=1979, genres=["horror", "sci-fi"], directors=["Ridley Scott"]),
            Item(id="b", title="Aliens", year=1986, genres=["Action", "sci-fi"], directors=["James Cameron"]),
            Item(id="c", title="Heat", year=1995, genres=["crime"], extra={"studio": "Warner"}),
            Item(id="d", title="Untitled"),
        ],
        name="test",
    )


def test_attribute_index_lookup_is_case_insensitive() -> None:
    items = _collection()
    assert items.with_value("genres", "sci-fi") == {"a", "b"}
    assert items.with_value("genres", "ACTION") == {"b"}
    assert items.with_value("directors", "ridley scott") == {"a"}
    assert items.with_value("genres", "western") == frozenset()
    assert items.with_value("no_such_attribute", "x") == frozenset()


def test_vocabulary_and_value_counts() -> None:
    items = _collection()
    assert items.vocabulary("genres") == ["action", "crime", "horror", "sci-fi"]
    assert items.value_counts("genres")["sci-fi"] == 2
    assert items.vocabulary("year") == ["1979", "1986", "1995"]


def test_decade_and_values() -> None:
    items = _collection()
    assert items.with_value("decade", "1980s") == {"b"}
    assert items.vocabulary("decade") == ["1970s", "1980s", "1990s"]
    assert items["c"].values("studio") == ["Warner"]
    assert items["d"].values("decade") == []
    assert items["a"].values("plot") == []


def test_collection_basics() -> None:
    items = _collection()
    assert len(items) == 4 and items.ids == ["a", "b", "c", "d"]
    assert "a" in items and "z" not in items
    assert items.get("z") is None and items["c"].title == "Heat"
    with pytest.raises(DataError, match="duplicate item id 'a'"):
        ItemCollection([Item(id="a", title="X"), Item(id="a", title="Y")], name="dups")


def test_display_title() -> None:
    items = _collection()
    assert items["a"].display_title == "Alien (1979)"
    assert items["d"].display_title == "Untitled"


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_jsonl_round_trip(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"items{suffix}"
    _collection().to_jsonl(path)
    loaded = ItemCollection.from_jsonl(path)
    assert loaded.name == path.name
    assert [i.model_dump() for i in loaded] == [i.model_dump() for i in _collection()]


def test_from_jsonl_reads_a_hand_written_file(tmp_path: Path) -> None:
    path = tmp_path / "handmade.jsonl"
    records = [
        {"id": "1", "title": "Up", "year": 2009, "genres": ["animation"]},
        {},
        {"id": "2", "title": "Her"},
    ]
    path.write_text("\n".join(json.dumps(r) if r else "" for r in records) + "\n", encoding="utf-8")
    items = ItemCollection.from_jsonl(path, name="hand")
    assert items.name == "hand" and items.ids == ["1", "2"]
    assert items.with_value("genres", "animation") == {"1"}


@pytest.mark.parametrize("bad", [{"id": "2"}, {"id": "2", "title": ""}, {"id": "2", "title": "   "}])
def test_record_without_title_names_file_record_and_field(tmp_path: Path, bad: dict[str, str]) -> None:
    path = tmp_path / "broken.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(json.dumps({"id": "1", "title": "Alien"}) + "\n")
        handle.write(json.dumps(bad) + "\n")
    with pytest.raises(DataError) as info:
        ItemCollection.from_jsonl(path)
    message = str(info.value)
    assert str(path) in message and "record 2" in message and "field 'title'" in message
    assert (info.value.path, info.value.record, info.value.field) == (str(path), 2, "title")


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "items.jsonl"
    with pytest.raises(DataError) as info:
        ItemCollection.from_jsonl(path)
    assert str(path) in str(info.value) and "not found" in str(info.value)


def test_shipped_movie_items() -> None:
    items = movie_items()
    assert len(items) == 4041
    assert all(item.title.strip() for item in items)
    toy_story = items["1"]
    assert toy_story.display_title == "Toy Story (1995)"
    assert "animation" in toy_story.genres
    assert "1" in items.with_value("decade", "1990s")
    assert items.linker.match_title("Toy Story (1995)") is not None


def test_unreadable_bytes_name_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_bytes(b'{"id": "1", "title": "Alien"}\n{"id": "2", "title": "Caf\xe9"}\n')
    with pytest.raises(DataError, match=r"items.jsonl, record 2: not UTF-8 text"):
        ItemCollection.from_jsonl(path)
    broken = tmp_path / "items.jsonl.gz"
    broken.write_bytes(gzip.compress(path.read_bytes())[:-12])
    with pytest.raises(DataError, match=r"items.jsonl.gz: cannot read the file"):
        ItemCollection.from_jsonl(broken)
    broken.write_bytes(b"plain text, not gzip\n")
    with pytest.raises(DataError, match=r"items.jsonl.gz: cannot read the file"):
        ItemCollection.from_jsonl(broken)
