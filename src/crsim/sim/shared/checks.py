"""Checks on what an LLM-played user drafts, shared by the prompt-based and the PEPPER simulators.

A small model playing a user slips in recurring ways: it answers in the recommender's voice, repeats
the recommender's (or its own last) message, names the target items it was told to keep to itself,
or likes and dislikes the same thing. Each check here is deterministic and cheap (regular
expressions and string similarity, no model call); the simulators re-ask once when a check fails and
then fall back to a deterministic answer, and record what they did under the `draft_checks`
annotation (`DraftCheck`), so the behaviour report and the researcher can see every rewrite.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from rapidfuzz import fuzz

from crsim.model import annotations as keys
from crsim.model.items import Item
from crsim.model.text import normalize, split_title_year, unarticle

#: Token-sort similarity (0-100) from which two messages count as the same message.
DUPLICATE_SIMILARITY = 85.0
#: Partial similarity (0-100) from which a longer title counts as named in a text despite typos.
FUZZY_TITLE_SIMILARITY = 92.0


def note(
    notes: MutableMapping[str, Any],
    check: str,
    action: str,
    draft: str | None = None,
    detail: str | None = None,
) -> None:
    """Append one check result to the turn's `draft_checks` annotation."""
    entry: dict[str, Any] = {"check": check, "action": action}
    if draft is not None:
        entry["draft"] = draft
    if detail is not None:
        entry["detail"] = detail
    keys.DRAFT_CHECKS.put(notes, [*notes.get(keys.DRAFT_CHECKS.name, []), entry])


def _voice_pattern(words: Mapping[str, str]) -> re.Pattern[str]:
    """Phrases of someone who recommends, not someone who asks for recommendations."""
    item, items, consume = (
        re.escape(words.get(k, d)) for k, d in (("item", "item"), ("items", "items"), ("consume", "try"))
    )
    nouns = rf"(?:{item}|{items}|one|ones|option|options|recommendations?|suggestions?)"
    cues = [
        r"\b(?:i|we)(?:'d| would| can| could)? (?:highly )?(?:recommend|suggest)\b",
        rf"\bhere (?:are|is) (?:some|a few|my|the|a|an|another) (?:\w+ )?{nouns}",
        rf"\byou (?:might|may|will|would|should|could) (?:also )?(?:like|love|enjoy|want to {consume})\b",
        r"\b(?:how|what) can i (?:help|do for you|assist)\b",
        r"\bif you (?:need|want) any (?:more|other|further)\b",
        r"\bfeel free to (?:ask|let me know|reach out)\b",
        r"\blet me know if you(?:'d| would)? (?:like|want|need)\b",
        r"\b(?:glad|happy) (?:i could|to) help\b",
        r"\bi(?:'m| am) glad you (?:found|liked|like|enjoy|enjoyed)\b",
        rf"\bwhat (?:kind|type|sort) of {nouns} (?:are you|do you|would you)\b",
        r"\bare you (?:in the mood|looking) for\b",
        r"\b(?:do|would) you like me to\b",
        r"\bwhat you(?:'re| are) looking for\b",
        rf"(?:^|[.!]\s+)enjoy (?:the|your) {nouns}\b",
        r"\bi(?:'m| am) (?:an ai|a recommender|here to help)\b",
        r"\bas an ai\b",
    ]
    return re.compile("|".join(f"(?:{c})" for c in cues), re.IGNORECASE)


#: Words a user says about the conversation rather than in it: the other side named in the third
#: person, or the prompt's instructions repeated.
_META = re.compile(
    r"\b(?:the recommender(?:'s)?|the user(?:'s)?|say why|in your own words|as the (?:user|person)"
    r"|(?:my|your) (?:next|first) message)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class DraftChecker:
    """The checks of one dialogue: the recommender-voice cues in the domain's words and the titles
    the user must not name."""

    voice: re.Pattern[str]
    forbidden: tuple[str, ...] = ()

    @classmethod
    def build(cls, words: Mapping[str, str], forbidden: Iterable[str] = ()) -> DraftChecker:
        return cls(_voice_pattern(words), tuple(forbidden))

    def meta_text(self, text: str) -> str | None:
        """The phrase that narrates the user's part instead of saying it ("I'll ask the recommender
        about ...", an instruction echoed), or None."""
        match = _META.search(text.replace("’", "'"))
        return match.group(0) if match else None

    def role_flip(self, text: str) -> str | None:
        """The phrase that puts the draft in the recommender's voice, or None."""
        match = self.voice.search(text.replace("’", "'"))
        return match.group(0) if match else None

    def named_titles(self, text: str, heard: Iterable[str] = ()) -> list[str]:
        """The forbidden titles the text names (exactly, or longer ones with small typos), except
        those the recommender named first (`heard`: its messages), which the user may talk about."""
        said = list(heard)
        return [
            title
            for title in self.forbidden
            if names_title(text, title) and not any(names_title(other, title) for other in said)
        ]


def title_words(title: str) -> str:
    """A display title as it is matched in text: no year, the article in front, normalised."""
    return normalize(unarticle(split_title_year(title)[0]))


def names_title(text: str, title: str) -> bool:
    """Whether `text` names `title`: its words in a row (a one-word title capitalised as in the
    catalogue, so "heat" in "I like the heat" is not the film Heat), or for titles of at least two
    words and ten characters a close partial match."""
    wanted = title_words(title)
    if not wanted:
        return False
    norm = normalize(text)
    if f" {wanted} " in f" {norm} ":
        if " " in wanted:
            return True
        plain = unarticle(split_title_year(title)[0])
        return re.search(rf"\b{re.escape(plain)}\b", text) is not None
    if " " in wanted and len(wanted) >= 10 and len(norm) >= len(wanted):
        return fuzz.partial_ratio(wanted, norm) >= FUZZY_TITLE_SIMILARITY
    return False


def redact_titles(text: str, titles: Iterable[str], replacement: str) -> str | None:
    """`text` with every exact mention of the titles replaced, or None when a mention is only fuzzy
    (nothing to cut out precisely)."""
    for title in titles:
        plain = unarticle(split_title_year(title)[0])
        parts = [re.escape(w) for w in re.findall(r"\w+", plain)]
        if not parts:
            continue
        year = r"(?:\s*\(\d{4}\))?"
        pattern = re.compile(r"\b" + r"\W+".join(parts) + rf"\b{year}", re.IGNORECASE)
        text, count = pattern.subn(replacement, text)
        if count == 0:
            return None
    return text


def near_duplicate(draft: str, other: str) -> bool:
    """Whether two messages say the same thing in nearly the same words (word order aside)."""
    a, b = normalize(draft), normalize(other)
    if len(a.split()) < 4 or len(b.split()) < 4:
        return a == b and bool(a)
    return fuzz.token_sort_ratio(a, b) >= DUPLICATE_SIMILARITY


def repeats(draft: str, earlier: Iterable[str]) -> str | None:
    """The earlier message the draft repeats, or None."""
    for text in earlier:
        if near_duplicate(draft, text):
            return text
    return None


#: Words that say nothing about which side of an item a like or a dislike is about.
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "it",
        "its",
        "it's",
        "is",
        "are",
        "was",
        "of",
        "to",
        "and",
        "or",
        "but",
        "in",
        "on",
        "for",
        "with",
        "too",
        "very",
        "so",
        "that",
        "this",
        "i",
        "my",
        "me",
        "you",
        "your",
        "they",
        "their",
        "them",
        "be",
        "been",
        "being",
        "has",
        "have",
        "had",
        "not",
        "no",
        "just",
        "really",
        "quite",
        "bit",
    ]
)


def content_words(text: str) -> frozenset[str]:
    return frozenset(w for w in normalize(text).split() if w not in _STOP)


def contradictory(like: str, dislike: str, title: str) -> bool:
    """Whether a like and a dislike of one item cancel out: the same words, or both naming the item
    itself rather than a side of it."""
    a, b = content_words(like), content_words(dislike)
    if not a or not b:
        return False
    named = content_words(title_words(title))
    if named and named <= a and named <= b:
        return True
    return len(a & b) / len(a | b) >= 0.6


def item_facts(item: Item, attributes: Mapping[str, str]) -> list[tuple[str, list[str]]]:
    """(slot, the item's values) for each slot -> attribute given, the slots without values left out."""
    facts = []
    for slot, attribute in attributes.items():
        values = item.values(attribute)
        if values:
            facts.append((slot, values[:4]))
    return facts


def mismatches(item: Item, constraints: Mapping[str, list[str]], attributes: Mapping[str, str]) -> list[str]:
    """Constraint slots the item's known values contradict (no value in common with the wanted ones);
    a slot the item has no value for is not a mismatch (unknown)."""
    found = []
    for slot, wanted in constraints.items():
        have = {v.lower() for v in item.values(attributes.get(slot, slot))}
        if have and not have & {w.lower() for w in wanted}:
            found.append(slot)
    return found
