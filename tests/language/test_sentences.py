"""The one sentence rule (`crsim.language.sentences.sentence_ends`) that the CRS text
understanding, the `llm` CRS's cuts and the behaviour rules share."""

from __future__ import annotations

import pytest

from crsim.crs.llm_checks import shorten
from crsim.language.sentences import sentence_ends, sentences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I loved it. Show me another!", ["I loved it.", "Show me another!"]),
        (
            "Mr. Brooks (2007) is a thriller. It came out in 2007.",
            ["Mr. Brooks (2007) is a thriller.", "It came out in 2007."],
        ),
        ("Try J. Edgar (2011). Or Dr. Strangelove.", ["Try J. Edgar (2011).", "Or Dr. Strangelove."]),
        (
            "Something light, e.g. the comedies. Anything else?",
            ["Something light, e.g. the comedies.", "Anything else?"],
        ),
        ("It costs approx. twenty pounds. Fine?", ["It costs approx. twenty pounds.", "Fine?"]),
        ("No. I want another one.", ["No.", "I want another one."]),
        ("No. 5 is on the list.", ["No. 5 is on the list."]),
        ("I rate it 4. What about you?", ["I rate it 4.", "What about you?"]),
        ('He said "Go." Then he left…', ['He said "Go."', "Then he left…"]),
        ("1. Heat (1995)\n2. Up (2009)", ["1. Heat (1995)", "2. Up (2009)"]),
        ("Well... maybe. Sure!", ["Well...", "maybe.", "Sure!"]),
    ],
)
def test_sentences(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


def test_a_linked_title_is_never_cut() -> None:
    text = "You might like L.A. Confidential. It is a noir."
    start = text.index("L.A.")
    assert sentence_ends(text, [(start, start + len("L.A. Confidential"))]) == [text.index(" It"), len(text)]


def test_the_llm_crs_cuts_where_the_analysis_splits() -> None:
    text = "Mr. Brooks (2007) is a tense thriller. It stars Kevin Costner as a killer."
    assert shorten(text, 50) == "Mr. Brooks (2007) is a tense thriller."
