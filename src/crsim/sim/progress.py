"""Whether a CRS reply moved the conversation on, as a simulated user notices it.

A reply reports a *setback* when its text says, in general words, that the CRS found nothing
(`no_results`: "Sorry, I couldn't find any comedy films", "No results match", "There are no
movies like that") or cannot go on (`cannot_help`: "Sorry I can't help you with that", "I believe
I am stuck", "I did not understand"). The phrasings are the table `SETBACK_PATTERNS` below: words
of any domain, not one system's strings. A reply with a setback never counts as progress; the
simulators decide what else counts (docs/buttons-and-progress.md).
"""

from __future__ import annotations

import re
from enum import StrEnum

from crsim.model.text import normalize


class Setback(StrEnum):
    """What a CRS reply said instead of helping."""

    NO_RESULTS = "no_results"
    CANNOT_HELP = "cannot_help"


_NOT = (
    r"(?:can ?not|cant|could ?not|couldnt|was not able to|wasnt able to|am not able to|unable to"
    r"|did not|didnt|do not|dont)"
)

#: Setback kind -> patterns matched on the text as `crsim.model.text.normalize` gives it (lower case,
#: punctuation dropped, apostrophes removed: "can't" -> "cant").
SETBACK_PATTERNS: dict[Setback, tuple[str, ...]] = {
    Setback.NO_RESULTS: (
        rf"\b{_NOT} (?:find|locate|get) (?:any|a|an|anything|something|what|results?|matches)\b",
        r"\bno (?:results?|matches|match(?:ing)? \w+|hits)\b",
        r"\b(?:found|find|returned|there is|theres|there are|have) "
        r"(?:nothing|no \w+ (?:that|which|like|matching|with|for))\b",
        r"\bnothing (?:matches|matched|was found|found|fits|that matches|like that)\b",
        r"\bzero results?\b",
        r"\b(?:dont|do not) have any (?:other |more )?(?:\w+ ){0,3}?"
        r"(?:films?|movies?|items?|results?|matches|options|that match|like that)\b",
    ),
    Setback.CANNOT_HELP: (
        rf"\b{_NOT} help\b",
        r"\b(?:am|im|got|be|seem to be) stuck\b",
        rf"\b{_NOT} (?:understand|follow|get) (?:you|that|what you|your)\b",
        r"\bnot sure what you mean\b",
        r"\b(?:could|can) you (?:please )?(?:rephrase|say that again)\b",
        r"\bdo not know how to (?:help|answer|respond)\b",
    ),
}

_COMPILED = {kind: [re.compile(p) for p in patterns] for kind, patterns in SETBACK_PATTERNS.items()}


def setback(text: str) -> Setback | None:
    """The setback a reply's text reports (found nothing before cannot help), or None."""
    folded = normalize(text)
    for kind, patterns in _COMPILED.items():
        if any(p.search(folded) for p in patterns):
            return kind
    return None
