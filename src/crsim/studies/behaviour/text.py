"""Text rules shared by the behaviour measures: titles in text, a CRS message's body, sentences, cues.

Everything here is a deterministic rule over one message; docs/behaviour.md states each rule with its
known false positives and negatives.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from itertools import pairwise

from rapidfuzz import fuzz

from crsim.model.domain import Domain
from crsim.model.items import Item
from crsim.model.text import STOPWORDS, near_duplicate, normalize, unarticle

#: rapidfuzz `fuzz.partial_ratio` from which a long user message counts as copied out of the CRS message.
PARROT_PARTIAL = 95.0
#: Characters a user message needs before the partial (substring) parroting rule applies.
PARROT_MIN_CHARS = 30
#: rapidfuzz `fuzz.partial_ratio` from which a long title counts as named in a text (spelling slips).
TITLE_FUZZY = 90.0
#: Characters (normalised, without the year) from which a title may match fuzzily rather than exactly.
TITLE_FUZZY_MIN_CHARS = 12

#: A closing "Label: Title (Year); Title (Year)." that a CRS appended to name its listed items (crsim's
#: `llm` CRS writes "Suggestion: X." when its text did not name X). It is a label, not the message.
_LABEL_START = re.compile(r"\s+[A-Z][a-z]+:(?=\s)")  # the space after it stays for the next label
#: End-of-dialogue markers a simulator's model may write into the message itself.
END_MARKER = re.compile(r"\[\s*(?:end|stop|done|exit|quit)\s*\]|<\|?\s*end(?:oftext)?\s*\|?>", re.I)
#: A message ends complete on one of these (after trailing spaces): sentence punctuation, closing
#: quotes and brackets. An ellipsis is a cut mark, not an ending (see `ends_cut`).
_COMPLETE_END = set(".!?\"')]}»”’*")
_ELLIPSIS = ("…", "...")


def fold_spaces(text: str) -> str:
    """Case-, accent- and punctuation-insensitive form of a message (for duplicate checks)."""
    return normalize(text)


def repeated(texts: list[str]) -> list[int]:
    """1-based positions (among `texts`) of the messages that near-duplicate the one before them."""
    return [n + 2 for n, (a, b) in enumerate(pairwise(texts)) if near_duplicate(a, b)]


def parrots(user: str, crs: str) -> bool:
    """Whether a user message repeats the CRS message before it: a near-duplicate, or a user message of
    at least PARROT_MIN_CHARS characters found almost verbatim inside the CRS message."""
    if near_duplicate(user, crs):
        return True
    x, y = fold_spaces(user), fold_spaces(crs)
    return len(x) >= PARROT_MIN_CHARS and len(y) >= len(x) and fuzz.partial_ratio(x, y) >= PARROT_PARTIAL


def _only_titles(tail: str, listed: list[Item]) -> bool:
    """Whether `tail` is nothing but titles of listed items ("Heat (1995); Up (2009)."), each with or
    without its year."""
    names = {normalize(item.display_title) for item in listed} | {normalize(item.title) for item in listed}
    parts = [normalize(part) for part in tail.strip().rstrip(".").split(";")]
    return all(part in names for part in parts)


def body(text: str, listed: list[Item]) -> str:
    """A CRS message without a closing label that lists its items' titles ("... Suggestion: Heat
    (1995)."): what the CRS wrote itself. The label is a capitalised word and a colon followed by
    nothing but titles of listed items, separated by ';' (a title may hold a colon: "Suggestion: Star
    Wars: Episode IV - A New Hope (1977)."); unchanged when there is none."""
    if not listed:
        return text
    for match in _LABEL_START.finditer(text):
        if _only_titles(text[match.end() :], listed):
            return text[: match.start()]
    return text


def ends_cut(text: str) -> bool:
    """Whether a message stops without a complete ending: its last character is a letter, digit or a
    mid-sentence mark (comma, colon, dash, opening bracket), or it ends on an ellipsis."""
    stripped = text.rstrip()
    if not stripped:
        return False
    if stripped.endswith(_ELLIPSIS):
        return True
    last = stripped[-1]
    if last in _COMPLETE_END:
        return False
    # Emoji and other symbols close a chat message as well as a full stop does.
    return not unicodedata.category(last).startswith("S")


@lru_cache(maxsize=65536)
def _title_key(title: str) -> tuple[str, bool]:
    """The normalised title (catalogue 'Matrix, The' read as 'The Matrix', the year left out) and
    whether it is weak: one short word or only function words, easy to hit by accident."""
    words = normalize(unarticle(title)).split()
    content = [w for w in words if w not in STOPWORDS and w not in ("the", "a", "an")]
    weak = not content or (len(words) == 1 and len(words[0]) < 6)
    return " ".join(words), weak


def title_in(text: str, item: Item, *, fuzzy: bool = True) -> bool:
    """Whether `text` names `item`: its normalised title as whole words; a weak title (one short word,
    or only function words) only with the catalogue's capitalisation; a title of TITLE_FUZZY_MIN_CHARS
    characters or more also by `fuzz.partial_ratio` >= TITLE_FUZZY against a longer text (a slip in
    spelling), unless not `fuzzy`."""
    key, weak = _title_key(item.title)
    if not key:
        return False
    if weak:
        shown = unarticle(item.title).strip()
        return re.search(rf"(?<!\w){re.escape(shown)}(?!\w)", text) is not None
    normal = normalize(text)
    if f" {key} " in f" {normal} ":
        return True
    if not fuzzy or len(key) < TITLE_FUZZY_MIN_CHARS or len(normal) < len(key):
        return False
    return fuzz.partial_ratio(key, normal) >= TITLE_FUZZY


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'“(])")


def sentences(text: str) -> list[str]:
    """The message cut after '.', '!' or '?' followed by a space and a capital (or quote/bracket)."""
    return [s for s in _SENTENCE.split(text.strip()) if s]


# --- the recommender's voice -----------------------------------------------------------------------


def role_flip_patterns(domain: Domain) -> list[re.Pattern[str]]:
    """The cues of a message in the recommender's voice, with the domain's item nouns
    (docs/behaviour.md lists them)."""
    nouns = "|".join(re.escape(n) for n in dict.fromkeys((domain.item_noun, domain.item_noun_plural)))
    kinds = r"(?:kind|kinds|type|types|sort|genre)s?"
    seeking = r"(?:looking for|in the mood for|hoping for|into)\b"
    cues = [
        r"\bi(?: would|'d| can| could)? (?:highly )?(?:recommend|suggest)\b",
        r"\blet me (?:recommend|suggest)\b",
        r"\bhere (?:are|is) (?:some|a few|a couple|my|a list|an? (?:great|good))\b",
        r"\byou (?:might|may|would|will|could) (?:also )?(?:like|enjoy|love)\b",
        r"\byou should (?:watch|try|check out|see|read|visit|listen to)\b",
        rf"\bwhat {kinds} of (?:{nouns}) (?:do|would) you "
        r"(?:like|enjoy|prefer|want|usually|feel like|have in mind)\b",
        rf"\bwhat {kinds} of (?:{nouns}) (?:are you|you're|you are) {seeking}",
        rf"\bwhat you(?:'re| are) {seeking}",
        rf"\bwhat (?:{nouns}) (?:do|would) you (?:like|enjoy|prefer|want)\b",
        r"\bdo you have (?:any )?(?:preferences|a preference|a favou?rite)\b",
        r"\bwhat are your (?:preferences|favou?rite)\b",
        r"\b(?:are|were) you (?:looking for|in the mood for|interested in)\b",
        r"\bhow (?:can|may) i (?:help|assist)\b",
        r"\bi(?:'m| am) here to help\b",
        r"\bis there (?:a|an|any) (?:\w+ )?(?:you|that you) (?:like|enjoy|prefer)\b",
        rf"\bi (?:have|found) (?:some|a few) (?:great |good )?(?:recommendations|suggestions|{nouns})\b",
    ]
    return [re.compile(cue, re.I) for cue in cues]


#: Text about the message rather than the message: a model's preamble, a speaker label, its own role.
META_TEXT = [
    re.compile(p, re.I)
    for p in (
        r"\b(?:here'?s|here is) (?:my|the|a) (?:next |revised |new |rewritten |final )?"
        r"(?:message|response|reply|answer|utterance)\b",
        r"\b(?:my|the) (?:next |revised |new )?(?:message|response|reply) (?:is|would be|could be)\b",
        r"^\W*(?:user|seeker|recommender|assistant|system|crs|customer)\s*:",
        r"\bas an ai\b",
        r"\bas (?:the|a) (?:user|seeker|simulated user|customer)\b",
    )
]


def first_cue(text: str, patterns: list[re.Pattern[str]]) -> str | None:
    """The first of `patterns` found in `text` (apostrophes made straight), or None."""
    plain = text.replace("’", "'")
    for pattern in patterns:
        match = pattern.search(plain)
        if match is not None:
            return match.group()
    return None
