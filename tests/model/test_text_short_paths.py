"""Short paths of crsim.model.text give what the long ones give: `normalize` (ASCII path, cache)
against the tokenizer, `surely_clean` against `clean_value`."""

from __future__ import annotations

import random
from typing import Any

import pytest

from crsim.model.text import clean_value, normalize, surely_clean, tokenize

#: Characters that exercise every rule of the tokenizer: letters, digits, apostrophes inside and
#: outside words, "&", underscores (not word characters here), punctuation and white space.
ALPHABET = "abcXYZ019'&_-.,?! \t\n’éİßﬁΣ"


def by_tokens(text: str) -> str:
    """The definition: the tokens' texts joined by single spaces."""
    return " ".join(t.text for t in tokenize(text))


@pytest.mark.parametrize(
    "text",
    [
        "I haven't seen Ocean's Eleven & Heat.",
        "R&B, rock & roll",
        "'quoted' words' and 'apostrophes",
        "snake_case__words",
        "&&&",
        "",
        "   ",
        "Amélie (2001) & Léon",
        "ΟΔΟΣ İstanbul ﬁlm",
    ],
)
def test_normalize_is_the_tokens_joined(text: str) -> None:
    assert normalize(text) == by_tokens(text)


def test_normalize_agrees_with_the_tokens_on_random_text() -> None:
    rng = random.Random(21)
    ascii_only = "".join(c for c in ALPHABET if c.isascii())
    for alphabet in (ascii_only, ALPHABET):
        for _ in range(2000):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
            assert normalize(text) == by_tokens(text), repr(text)


def test_a_cached_result_is_the_same_text() -> None:
    first = normalize("The Matrix (1999)")
    assert normalize("The Matrix (1999)") == first == "the matrix 1999"


def random_value(rng: random.Random, depth: int = 0) -> Any:
    """A parsed-JSON-like value whose strings sometimes hold a lone surrogate (keys too)."""

    def text() -> str:
        return "".join(
            rng.choice(["a", "é", "\ud800", "\udfff", "\ufffd", "😀", " "]) for _ in range(rng.randint(0, 4))
        )

    kind = rng.randrange(6 if depth < 4 else 3)
    if kind == 0:
        return text()
    if kind == 1:
        return rng.choice([0, -3, 2.5, True, None, 10**30])
    if kind == 2:
        return (text(),)  # not JSON: `clean_value` leaves tuples alone
    if kind == 3:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {text(): random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def test_surely_clean_only_when_cleaning_changes_nothing() -> None:
    rng = random.Random(7)
    said_clean = 0
    for _ in range(3000):
        value = random_value(rng)
        cleaned, count = clean_value(value)
        if surely_clean(value):
            said_clean += 1
            assert count == 0 and cleaned is value, repr(value)
    assert said_clean > 300  # the short path is taken, not only refused


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"choices": [{"message": {"content": "Hi é 😀"}}]}, True),
        ({"choices": [{"message": {"content": "bad \ud800"}}]}, False),
        ({"k\udc00": 1}, False),
        ({"blob": b"bytes"}, False),  # not JSON: left to the long path
    ],
)
def test_surely_clean_on_answers(value: Any, expected: bool) -> None:
    assert surely_clean(value) is expected
