"""The `llm` CRS's model-free checks: sentence-end cuts and year claims."""

from __future__ import annotations

import pytest

from crsim.crs.llm_checks import complete_sentences, shorten, tidy_ending, year_conflicts
from crsim.model.items import Item, ItemCollection
from crsim.model.linking import ItemLinker


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("Short enough.", 20, "Short enough."),
        ("You might like Heat. It is tense and long, with a famous shootout", 40, "You might like Heat."),
        # an abbreviation's full stop ends no sentence
        ("Watch Dr. Strangelove tonight. It is a dark comedy about the bomb", 28, "Watch Dr. Strangelove…"),
        ("Try it! Or not? Maybe later, when you have time for it", 20, "Try it! Or not?"),
        # no sentence end within the limit: the last whole word, then an ellipsis
        ("A very long sentence without any end in sight at all", 20, "A very long…"),
        ("A very long, sentence", 13, "A very long…"),
        ("Supercalifragilistic", 10, "Supercali…"),
    ],
)
def test_shorten_cuts_at_a_sentence_end_else_a_word(text: str, limit: int, expected: str) -> None:
    assert shorten(text, limit) == expected
    assert len(shorten(text, limit)) <= limit


def test_year_conflicts_check_only_sentences_about_one_item() -> None:
    items = ItemCollection(
        [
            Item(id="heat", title="Heat", year=1995),
            Item(id="alien", title="Alien", year=1979, plot="In 2122, a crew meets a deadly creature."),
        ],
        name="t",
    )
    linker = ItemLinker(items)
    by_id = {"heat": items["heat"], "alien": items["alien"]}

    def conflicts(text: str) -> list[dict[str, str | int]]:
        return [c.record() for c in year_conflicts(text, linker.link(text), by_id)]

    assert conflicts("Heat (1985) is a 1980s thriller.") == [
        {"item": "heat", "claim": "1985", "year": 1995},
        {"item": "heat", "claim": "1980s", "year": 1995},
    ]
    assert conflicts("Try Heat (1995), a 1990s thriller.") == []
    assert conflicts("You could try Alien, a thriller from the '70s.") == []
    assert conflicts("You could try Alien, a thriller from the '80s.") == [
        {"item": "alien", "claim": "'80s", "year": 1979}
    ]
    # a year the plot gives is a fact of the item, not a claim about its release
    assert conflicts("You could try Alien, set in 2122.") == []
    # two items in one sentence: whose year it is cannot be told, so nothing is claimed
    assert conflicts("You might like Heat (1995) and Alien, from 1979.") == []
    # the year is in another sentence than the title
    assert conflicts("You asked for the 1980s. Heat (1995) is tense.") == []


@pytest.mark.parametrize(
    ("text", "tidied", "action"),
    [
        ("A man finds work as a singer. The mo…", "A man finds work as a singer.", "unfinished_dropped"),
        ("Try Heat! It is about a cop and a thief who...", "Try Heat!", "unfinished_dropped"),
        ("You could try Sense and Sensibility", "You could try Sense and Sensibility.", "stop_added"),
        ("A race is at the edge of…", "A race is at the edge of…", None),  # nothing whole to keep
        ("Try Heat (1995)", "Try Heat (1995)", None),
        ("Enjoy!", "Enjoy!", None),
        ("It stars Dr. No…", "It stars Dr. No…", None),  # an abbreviation is no sentence end
    ],
)
def test_a_bad_ending_is_tidied_without_inventing_words(text: str, tidied: str, action: str | None) -> None:
    assert tidy_ending(text) == (tidied, action)


def test_complete_sentences_drop_only_a_tail_cut_by_the_token_limit() -> None:
    assert complete_sentences("I love it. It is a perfect choice for") == "I love it."
    assert complete_sentences("Who is in it? I") == "Who is in it?"
    assert complete_sentences("I love it.") is None  # nothing cut
    assert complete_sentences("I love it") is None  # no whole sentence to keep
