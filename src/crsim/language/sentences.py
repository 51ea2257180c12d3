"""The one sentence rule of crsim: where sentences end in a text (full stops after abbreviations,
initials, list numbers and before lower-case words are no ends; linked titles are kept whole), used
by the CRS text understanding, the `llm` CRS's cuts, and the claim and voice rules."""

from __future__ import annotations

import re
from collections.abc import Sequence

#: A candidate sentence end: '.', '!', '?' or '…' (closing quotes or brackets may follow) before a
#: space or the end of the text, or a line break.
_SENTENCE_END = re.compile(r"[.!?…]+[\"')\]”’]*(?=\s|$)|\n+")
#: Words whose full stop ends no sentence ("Dr. Strangelove", "Mr. Smith").
_ABBREVIATIONS = frozenset({"dr", "mr", "mrs", "ms", "st", "jr", "sr", "vs", "vol", "pt", "ft"})
_WORD_BEFORE = re.compile(r"(\w+)$")
_LOWER_NEXT = re.compile(r"\s+[a-z]")
_DIGIT_NEXT = re.compile(r"\s+\d")


def sentence_ends(text: str, keep_whole: Sequence[tuple[int, int]] = ()) -> list[int]:
    """Offsets just past each sentence end of `text`: the one sentence rule of crsim (the CRS text
    understanding, the `llm` CRS's cuts, the claim and voice rules). An end is '.', '!', '?' or '…'
    (with closing quotes or brackets) before a space or the end, or a line break; a full stop is no
    end after an abbreviation ("Mr.") or a one-letter word ("J. Smith", "e.g."), before a lower-case
    word ("approx. two") or after a list item's number ("1. Heat"); nothing inside a `keep_whole`
    span (start, end) ends a sentence (a linked title such as "L.A. Confidential")."""
    ends = []
    for match in _SENTENCE_END.finditer(text):
        if any(start < match.start() < end for start, end in keep_whole):
            continue
        if match.group()[0] == "." and not match.group().startswith("..") and not _ends_here(text, match):
            continue
        ends.append(match.end())
    return ends


def _ends_here(text: str, stop: re.Match[str]) -> bool:
    """Whether a full stop ends its sentence: not after an abbreviation or a one-letter word, not
    before a lower-case word, nor after the number opening a line ("1. Heat"); "no." only before a
    number ("No. 5")."""
    word = _WORD_BEFORE.search(text[: stop.start()])
    if word is not None:
        before = word.group(1).lower()
        if before in _ABBREVIATIONS or (len(before) == 1 and before.isalpha()):
            return False
        if before == "no" and _DIGIT_NEXT.match(text, stop.end()):
            return False
        if before.isdigit() and not text[: word.start()].rsplit("\n", 1)[-1].strip():
            return False  # the number of a list item ("1. Heat")
    return not _LOWER_NEXT.match(text, stop.end())


def sentences(text: str) -> list[str]:
    """`text` split after each sentence end (`sentence_ends`), each sentence stripped."""
    starts = [0, *sentence_ends(text)]
    pieces = [text[a:b].strip() for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]
    return [p for p in pieces if p]
