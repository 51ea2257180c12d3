"""The title linker keeps a catalogue position per title key (its entry made from the item's row when
the key is met) and pickles its keys as one text: it links exactly as a linker over item objects does,
before and after a pickle round trip (the domain cache)."""

from __future__ import annotations

import pickle

import numpy as np

from crsim.domains.movielens import movie_items
from crsim.model.items import Item, ItemCollection
from crsim.model.linking import ItemLinker

TEXTS = [
    "Have you seen The Matrix (1999)? I loved Heat and the matrix reloaded.",
    "How about Up? Or maybe Sabrina (1954), or Sabrina from the 1990s.",
    "I'd suggest clerks, mother! and Mother, then Alien (1979) and Aliens.",
    "Something like Toy Story 2 or toy story, or jumanji (1995), or The Hangover (2010).",
    "I liked it up here; my weekend was fine. Get Out was scary. Misspelt: Teh Matrx (1999).",
]


def _mentions(linker: ItemLinker) -> list[list[tuple[str, int, int, tuple[str, ...]]]]:
    found = []
    for text in TEXTS:
        found.append([(m.item_id, m.start, m.end, m.candidates) for m in linker.link(text)])
        found.append([(m.item_id, m.start, m.end, m.candidates) for m in linker.link(text, offers=True)])
    return found


def test_a_linker_over_columns_links_as_one_over_item_objects() -> None:
    items = movie_items()
    by_columns, by_objects = ItemLinker(items), ItemLinker(list(items))
    assert _mentions(by_columns) == _mentions(by_objects)
    assert any(mentions for mentions in _mentions(by_columns))
    for title in ("Sabrina", "Mother!", "the matrix (1999)", "Heat", "Toy Stroy 2"):
        assert by_columns.match_title(title) == by_objects.match_title(title)


def test_a_pickled_linker_links_the_same_and_holds_no_per_title_objects() -> None:
    items = movie_items()
    linker = ItemLinker(items)
    state = linker.__getstate__()
    assert isinstance(state["_keys"], str) and isinstance(state["_positions"], np.ndarray)
    assert len(state["_shared"]) < len(items) // 10  # only keys several items share keep entries
    again = pickle.loads(pickle.dumps(linker, protocol=pickle.HIGHEST_PROTOCOL))
    assert _mentions(again) == _mentions(linker)
    assert again._by_key == linker._by_key and again._lengths == linker._lengths


def test_shared_keys_keep_every_item_and_its_forms() -> None:
    items = ItemCollection(
        [
            Item(id="m1", title="Mother", year=2009, extra={"num_ratings": 5}),
            Item(id="m2", title="Mother!", year=2017, extra={"num_ratings": 50}),
            Item(id="o", title="Old Boy", year=2003, extra={"aliases": ["Oldboy"]}),
            Item(id="o2", title="Oldboy", year=2013),
            Item(id="t", title="The Room", year=2003),
        ]
    )
    linker = ItemLinker(items)
    assert [m.item_id for m in linker.link("I saw Mother. Then Mother! and Oldboy (2013).")] == [
        "m1",
        "m2",
        "o2",
    ]
    assert linker.link("Have you seen Oldboy?")[0].item_id == "o2"  # a title before an alias
    shared = linker._get(("oldboy",))
    assert shared is not None and [e.item_id for e in shared] == ["o", "o2"]
    assert isinstance(linker._by_key[("oldboy",)], list) and linker._by_key[("old", "boy")] == 2
    assert linker.link("Have you seen The Room (2003)?")[0].item_id == "t"
    single = linker._get(("the", "room"))
    assert single is not None and single[0].forms == (("the room", 0),)
