"""Item linking: recall on the ReDial test split, plus focused behaviour tests."""

from __future__ import annotations

import csv
import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from crsim.model.domain import Domain
from crsim.model.items import Item, ItemCollection
from crsim.model.linking import ItemLinker, ambiguous_links
from crsim.model.text import normalize, split_title_year, unarticle

REDIAL = Path(__file__).parents[1] / "fixtures" / "redial"
_MENTION = re.compile(r"@(\d+)")


@dataclass(frozen=True)
class RenderedMessage:
    text: str
    mentioned: tuple[str, ...]


def _redial_names() -> dict[str, str]:
    with gzip.open(REDIAL / "movies_with_mentions.csv.gz", "rt", encoding="utf-8") as handle:
        return {row["movieId"]: row["movieName"] for row in csv.DictReader(handle)}


def _redial_items(names: dict[str, str]) -> ItemCollection:
    """ReDial movies as items; the two names that are only a year cannot be items and are skipped."""
    items = []
    for movie_id, name in names.items():
        title, year = split_title_year(name)
        if title:
            items.append(Item(id=movie_id, title=title, year=year))
    return ItemCollection(items, name="redial")


def _rendered_messages(names: dict[str, str]) -> list[RenderedMessage]:
    """Every test message with each `@id` replaced by the title the dialogue gives (else the csv name)."""
    messages = []
    with gzip.open(REDIAL / "test_data.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            dialogue = json.loads(line)
            titles = {**names, **dialogue["movieMentions"]}
            for message in dialogue["messages"]:
                raw = message["text"]
                messages.append(RenderedMessage(_render(raw, titles), tuple(_MENTION.findall(raw))))
    return messages


def _render(raw: str, titles: dict[str, str]) -> str:
    return _MENTION.sub(lambda m: (titles.get(m.group(1)) or m.group(0)).strip(), raw)


def _duplicate_key(item: Item) -> str:
    """Titles that differ only in case, punctuation or a leading article name the same film."""
    words = normalize(unarticle(item.title)).split()
    return " ".join(words[1:] if len(words) > 1 and words[0] in ("the", "a", "an") else words)


def _same_film(items: ItemCollection, a: str, b: str) -> bool:
    first, second = items.get(a), items.get(b)
    if first is None or second is None or _duplicate_key(first) != _duplicate_key(second):
        return False
    return first.year is None or second.year is None or first.year == second.year


@dataclass
class Recall:
    mentions: int = 0
    strict: int = 0
    duplicate_aware: int = 0
    extra_links: int = 0
    messages: int = 0


def _measure(items: ItemCollection, messages: list[RenderedMessage]) -> Recall:
    result = Recall()
    for message in messages:
        linked = {m.item_id for m in items.linker.link(message.text)}
        result.messages += 1
        for movie_id in message.mentioned:
            result.mentions += 1
            result.strict += movie_id in linked
            result.duplicate_aware += any(_same_film(items, movie_id, x) or x == movie_id for x in linked)
        result.extra_links += sum(
            not any(x == m or _same_film(items, x, m) for m in message.mentioned) for x in linked
        )
    return result


@pytest.fixture(scope="module")
def redial() -> tuple[ItemCollection, list[RenderedMessage]]:
    names = _redial_names()
    return _redial_items(names), _rendered_messages(names)


def test_redial_test_split_recall(redial: tuple[ItemCollection, list[RenderedMessage]]) -> None:
    items, messages = redial
    result = _measure(items, messages)
    strict = result.strict / result.mentions
    aware = result.duplicate_aware / result.mentions
    extra = result.extra_links / result.messages
    summary = (
        f"ReDial test: {result.messages} messages, {result.mentions} mentions; strict recall {strict:.4f}, "
        f"duplicate-aware {aware:.4f}, extra links per message {extra:.4f}"
    )
    print(summary)  # noqa: T201
    assert result.mentions > 8000
    assert strict >= 0.95, summary
    assert aware >= strict
    assert extra < 0.1, summary


def _linker(*items: Item) -> ItemLinker:
    return ItemLinker(ItemCollection(items, name="test"))


def _ids(linker: ItemLinker, text: str) -> list[str]:
    return [m.item_id for m in linker.link(text)]


def test_year_picks_between_films_sharing_a_title() -> None:
    linker = _linker(
        Item(id="old", title="Total Recall", year=1990, extra={"num_ratings": 50}),
        Item(id="new", title="Total Recall", year=2012, extra={"num_ratings": 10}),
    )
    assert _ids(linker, "I prefer Total Recall (2012) to the original") == ["new"]
    assert _ids(linker, "Total Recall (1990) is a classic") == ["old"]
    assert _ids(linker, "Have you seen Total Recall?") == ["old"]  # no year: the more popular one
    assert _ids(linker, "Total Recall (2011) maybe") == ["new"]  # a wrong year: the nearest one
    (mention,) = linker.link("Try Total Recall (2012).")
    assert mention.surface == "Total Recall (2012)"


def test_catalogue_articles_are_turned_around() -> None:
    linker = _linker(Item(id="m", title="Matrix, The", year=1999), Item(id="c", title="The Conjuring"))
    assert _ids(linker, "Have you seen The Matrix? It is great.") == ["m"]
    assert _ids(linker, "the Matrix (1999) was great") == ["m"]
    assert _ids(linker, "Something like Conjuring would do") == ["c"]
    found = linker.match_title("Matrix, The (1999)")
    assert found is not None and found.item_id == "m"
    found = linker.match_title("The Matrix")
    assert found is not None and found.item_id == "m"


def test_an_added_the_still_finds_the_year() -> None:
    linker = _linker(
        Item(id="2009", title="The Hangover", year=2009), Item(id="2011", title="Hangover", year=2011)
    )
    assert _ids(linker, "I loved the Hangover (2011) too") == ["2011"]
    assert _ids(linker, "I loved The Hangover") == ["2009"]


def test_case_and_punctuation_do_not_matter() -> None:
    linker = _linker(
        Item(id="h", title="Harry Potter and the Sorcerer's Stone", year=2001),
        Item(id="w", title="Wall-E", year=2008),
        Item(id="a", title="Amélie", year=2001),
    )
    assert _ids(linker, "HARRY POTTER & THE SORCERERS STONE!!") == ["h"]
    assert _ids(linker, "harry potter and the sorcerer’s stone is fun") == ["h"]
    assert _ids(linker, "wall e and Amelie") == ["w", "a"]


def test_fuzzy_match_of_a_misspelt_title_before_a_year() -> None:
    linker = _linker(
        Item(id="p", title="Pirates of the Caribbean: The Curse of the Black Pearl", year=2003),
        Item(id="s", title="Silence of the Lambs, The", year=1991),
    )
    found = linker.link("I watched Pirates of the Carribean: The Curse of the Black Perl (2003) yesterday")
    assert [m.item_id for m in found] == ["p"]
    assert found[0].surface.endswith("(2003)") and found[0].score < 100
    assert _ids(linker, "I liked The Silense of the Lambs (1991).") == ["s"]
    assert _ids(linker, "I liked The Silense of the Lambs (1991).".replace("(1991)", "")) == []
    assert linker.link("Pirates of the Carribean (2003)", fuzzy=False) == []


def test_match_title() -> None:
    linker = _linker(
        Item(id="t", title="Toy Story", year=1995), Item(id="t2", title="Toy Story 2", year=1999)
    )
    exact = linker.match_title("Toy Story 2 (1999)")
    assert exact is not None and exact.item_id == "t2" and exact.score == 100.0
    fuzzy = linker.match_title("Toy Stroy")
    assert fuzzy is not None and fuzzy.item_id == "t" and fuzzy.score < 100
    assert linker.match_title("Completely Different Film") is None
    assert linker.match_title("  ") is None


def test_common_words_are_not_linked_in_ordinary_sentences() -> None:
    linker = _linker(
        Item(id="it", title="It", year=2017),
        Item(id="up", title="Up", year=2009),
        Item(id="her", title="Her", year=2013),
        Item(id="weekend", title="Weekend", year=2011),
        Item(id="get-out", title="Get Out", year=2017),
        Item(id="ben", title="Ben", year=1972),
        Item(id="m", title="M", year=1931),
    )
    assert _ids(linker, "I like it up here") == []
    assert _ids(linker, "I like it up here, tell her my weekend was nice, then get out") == []
    assert _ids(linker, "Awesome. It was fine. I'm glad I'd seen Ben Stiller in that") == []
    assert _ids(linker, "Have you seen Up? Or Her (2013), or 'it', or Get Out?") == [
        "up",
        "her",
        "it",
        "get-out",
    ]
    assert _ids(linker, "Weekend (2011) is sweet") == ["weekend"]


def test_offsets_index_the_original_text_when_folding_changes_length() -> None:
    from crsim.model.items import Item, ItemCollection
    from crsim.model.text import tokenize

    text = "엄마를 부탁해 and then ﬁnally Heat (1995)"
    tokens = tokenize(text)
    surfaces = [text[t.start : t.end] for t in tokens]
    assert surfaces == ["엄마를", "부탁해", "and", "then", "ﬁnally", "Heat", "1995"]
    assert tokens[4].text == "finally"
    collection = ItemCollection([Item(id="1", title="Heat", year=1995)])
    (mention,) = collection.linker.link(text)
    assert mention.surface == "Heat (1995)"


def _two_sabrinas() -> ItemLinker:
    """Two films share the title; the 1995 remake is the more popular one."""
    return ItemLinker(
        ItemCollection(
            [
                Item(id="remake", title="Sabrina", year=1995, extra={"num_ratings": 100}),
                Item(id="original", title="Sabrina", year=1954, extra={"num_ratings": 10}),
                Item(id="heat", title="Heat", year=1995),
            ],
            name="sabrinas",
        )
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("You could try Sabrina, the 1954 film.", "original"),
        ('You might enjoy "Sabrina", a charming 1950s romance.', "original"),
        ("Something from the '50s: you might enjoy Sabrina.", "original"),
        ("Sabrina (1954) is lovely.", "original"),
        ('You might enjoy "Sabrina", the 1995 remake.', "remake"),
        # no year or decade: the rule for yearless mentions (the more popular item) as before
        ('You might enjoy "Sabrina", a charming romance.', "remake"),
        # a cue that fits neither item is ignored
        ('You might enjoy "Sabrina" from the 1970s.', "remake"),
    ],
)
def test_a_year_or_decade_in_the_text_chooses_among_same_title_items(text: str, expected: str) -> None:
    assert [m.item_id for m in _two_sabrinas().link(text)] == [expected]


def test_the_cue_nearest_the_title_wins() -> None:
    linked = _two_sabrinas().link("Heat (1995) is tense; for romance, try Sabrina, the 1954 film.")
    assert [m.item_id for m in linked] == ["heat", "original"]
    linked = _two_sabrinas().link("A 1954 classic, Heat (1995) and Sabrina from the 1990s.")
    assert [m.item_id for m in linked] == ["heat", "remake"]


# --- the surface of a title before popularity; ambiguous links ---------------------------------

#: Titles of the shipped movie catalogue that share a linking key but are written differently,
#: the less popular one first (popularity alone picked the wrong item for it).
SURFACE_PAIRS = [
    (("Mother", 2009, 1), ("Mother!", 2017, 2)),
    (("Them", 2006, 1), ("Them!", 1954, 5)),
    (("Kicking & Screaming", 2005, 1), ("Kicking and Screaming", 1995, 9)),
    (("Pride and Prejudice", 1940, 1), ("Pride & Prejudice", 2005, 40)),
]


def _surface_items() -> ItemCollection:
    items = [
        Item(id=f"{title}|{year}", title=title, year=year, extra={"num_ratings": ratings})
        for pair in SURFACE_PAIRS
        for title, year, ratings in pair
    ]
    items.append(
        Item(id="Old Boy|2003", title="Old Boy", year=2003, extra={"num_ratings": 39, "aliases": ["Oldboy"]})
    )
    items.append(Item(id="Oldboy|2013", title="Oldboy", year=2013, extra={"num_ratings": 2}))
    return ItemCollection(items, name="surface")


@pytest.mark.parametrize("title", [t for pair in SURFACE_PAIRS for t, _, _ in pair] + ["Old Boy", "Oldboy"])
def test_the_title_written_exactly_wins_over_a_more_popular_one(title: str) -> None:
    items = _surface_items()
    expected = next(i.id for i in items if i.title == title)
    (mention,) = items.linker.link(f"You might like {title} tonight.")
    assert (mention.item_id, mention.ambiguous) == (expected, False)
    assert items.linker.match_title(title) is not None
    assert items.linker.match_title(title).item_id == expected  # type: ignore[union-attr]


def test_punctuation_after_a_title_is_read_as_part_of_it_only_when_a_title_has_it() -> None:
    linker = _surface_items().linker
    assert [m.item_id for m in linker.link("Have you seen Them? It is scary.")] == ["Them|2006"]
    assert [m.item_id for m in linker.link("Have you seen Them! It is scary.")] == ["Them!|1954"]
    assert [m.item_id for m in linker.link('I recommend "Mother". Dark.')] == ["Mother|2009"]


def test_the_pairs_of_the_shipped_catalogue_link_to_the_title_written(domain: Domain) -> None:
    for pair in [*SURFACE_PAIRS, (("Old Boy", 2003, 0), ("Oldboy", 2013, 0))]:
        for title, year, _ in pair:
            (mention,) = domain.items.linker.link(f"You might like {title} tonight.")
            assert domain.items[mention.item_id].title == title
            assert domain.items[mention.item_id].year == year


def test_identical_titles_without_a_year_are_linked_as_ambiguous() -> None:
    popularity = [3, 11, 7]
    items = ItemCollection(
        [
            Item(id=f"h{n}", title="Hamlet", year=1948 + 42 * n, extra={"num_ratings": r})
            for n, r in enumerate(popularity)
        ]
        + [Item(id="x", title="Heat", year=1995)],
        name="same",
    )
    (mention,) = items.linker.link("You might like Hamlet tonight.")
    assert mention.item_id == "h1"  # the most popular among equals
    assert mention.ambiguous and mention.candidates == ("h1", "h0", "h2")
    assert ambiguous_links(items.linker.link('"Hamlet" or "Heat"?')) == {"h1": ["h1", "h0", "h2"]}
    (dated,) = items.linker.link("You might like Hamlet (1990) tonight.")
    assert (dated.item_id, dated.ambiguous) == ("h1", False)
    (cued,) = items.linker.link("The 1948 Hamlet is the one.")
    assert (cued.item_id, cued.ambiguous) == ("h0", False)
    assert items.linker.match_title("Hamlet").candidates == ("h1", "h0", "h2")  # type: ignore[union-attr]


def test_identical_titles_of_the_shipped_catalogue_are_marked_ambiguous(domain: Domain) -> None:
    groups: dict[str, set[str]] = {}
    for item in domain.items:
        key = " ".join(unarticle(split_title_year(item.title)[0]).lower().split())
        groups.setdefault(key, set()).add(item.id)
    same = {key: ids for key, ids in groups.items() if len(ids) > 1}
    assert len(same) > 90
    for ids in same.values():
        title = unarticle(split_title_year(domain.items[next(iter(ids))].title)[0])
        (mention, *_) = domain.items.linker.link(f"You might like {title} tonight.")
        assert set(mention.candidates) == ids, title
