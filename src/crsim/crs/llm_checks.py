"""Checks of the `llm` CRS's messages that need no model: length cuts at sentence ends, and year or
decade claims about a recommended item compared with its catalogue year.

Both are conservative and recorded by the caller in the reply's annotations: a message is cut only
when it is longer than the limit, and a claim counts as contradicting an item only when it sits in a
sentence that names that item and no other, and neither its year nor its decade fits the item's year.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from crsim.language.sentences import sentence_ends
from crsim.model.items import Item
from crsim.model.linking import Mention
from crsim.model.title_cues import year_cues

_ELLIPSIS = "…"


def shorten(text: str, limit: int) -> str:
    """`text` if it fits in `limit` characters; else cut after its last sentence end within the
    limit, or, without one, at its last word boundary with an ellipsis (inside a word only when the text
    has no space within the limit)."""
    if len(text) <= limit:
        return text
    ends = [end for end in sentence_ends(text) if end <= limit]
    if ends:
        return text[: ends[-1]].rstrip()
    head = text[: limit - len(_ELLIPSIS)]
    if not text[len(head)].isspace() and re.search(r"\s", head):
        head = re.split(r"\s+(?=\S*$)", head)[0]  # drop the word the limit falls in
    return head.rstrip(" ,;:-–—") + _ELLIPSIS


#: A trailing ellipsis ("…" or three dots), the mark of a cut, possibly after a space.
_TRAILING_ELLIPSIS = re.compile(r"\s*(?:…|\.{3})\s*$")
#: A last character that ends a message as it stands: sentence marks, closing quotes and brackets.
_ENDING = frozenset(".!?\"')]”’")


def tidy_ending(text: str) -> tuple[str, str | None]:
    """(text, what was done) for a message the model ended badly: a trailing ellipsis (copied from a
    plot shown cut, or a sentence left unfinished) drops the unfinished sentence when a complete one
    precedes it (`"unfinished_dropped"`); a message whose last word lacks a full stop ("... such as
    Heat") gets one (`"stop_added"`). Anything else, including a lone unfinished sentence, is left
    as it is (None): there is nothing true to put in its place."""
    stripped = text.rstrip()
    if _TRAILING_ELLIPSIS.search(stripped):
        head = _TRAILING_ELLIPSIS.sub("", stripped)
        ends = [end for end in sentence_ends(head) if end < len(head)]
        if ends:
            return head[: ends[-1]].rstrip(), "unfinished_dropped"
        return text, None
    if stripped and stripped[-1].isalnum():
        return f"{stripped}.", "stop_added"
    return text, None


def ends_unfinished(text: str) -> bool:
    """Whether a message, as it would be shown, still stops mid-sentence: on an ellipsis (what
    `tidy_ending` leaves of a lone unfinished sentence) or on a comma, colon, semicolon or dash."""
    stripped = text.rstrip()
    return bool(_TRAILING_ELLIPSIS.search(stripped)) or stripped[-1:] in (",", ":", ";", "-", "–", "—")


def complete_sentences(text: str) -> str | None:
    """`text` up to its last complete sentence when it has one and more follows (the tail a token
    limit cut off), else None."""
    stripped = text.rstrip()
    ends = sentence_ends(stripped)
    if not ends or ends[-1] >= len(stripped):
        return None
    if stripped[ends[-1] :].strip() and stripped[-1] not in _ENDING:
        return stripped[: ends[-1]].rstrip()
    return None


@dataclass(frozen=True)
class YearClaim:
    """A year or decade in the message that does not fit the catalogue year of the item it is about."""

    item_id: str
    claim: str
    year: int

    def record(self) -> dict[str, str | int]:
        return {"item": self.item_id, "claim": self.claim, "year": self.year}


def year_conflicts(text: str, mentions: list[Mention], items: dict[str, Item]) -> list[YearClaim]:
    """Years and decades in `text` that contradict the item of `items` their sentence is about.

    Only sentences naming exactly one item of `items` (by `mentions`) and no other are checked; a
    year inside the mention itself ("Heat (1995)") counts as a claim too, a year or decade its plot
    gives ("set in 1930s Illinois") does not.
    """
    conflicts: list[YearClaim] = []
    start = 0
    for end in [*sentence_ends(text), len(text)]:
        inside = [m for m in mentions if start <= m.start < end]
        ids = {m.item_id for m in inside}
        if len(ids) == 1 and (item := items.get(next(iter(ids)))) is not None and item.year is not None:
            for cue in year_cues(text[start:end]):
                claim = _claim_text(text[start:end], cue.start)
                if not cue.fits(item.year) and claim not in (item.plot or ""):
                    conflicts.append(YearClaim(item.id, claim, item.year))
        start = end
    return conflicts


def _claim_text(sentence: str, at: int) -> str:
    """The cue as written ("1980s", "'80s", "1994")."""
    match = re.match(r"['’]?\d+s?", sentence[at:])
    return match.group(0) if match else sentence[at : at + 4]
