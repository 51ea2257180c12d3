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

from crsim.language import message_rules as rules
from crsim.language.message_rules import user_voice_patterns
from crsim.model import annotations as keys
from crsim.model.items import Item
from crsim.model.text import normalize, split_title_year, unarticle


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


@dataclass(frozen=True)
class DraftChecker:
    """The checks of one dialogue: the recommender-voice cues in the domain's words and the titles
    the user must not name. The rules are `crsim.language.message_rules`, the ones `crsim analyze
    behaviour` counts (`role_flip`, `meta_text`, `target_leaked`)."""

    voice: tuple[re.Pattern[str], ...]
    forbidden: tuple[str, ...] = ()

    @classmethod
    def build(cls, words: Mapping[str, str], forbidden: Iterable[str] = ()) -> DraftChecker:
        voice = user_voice_patterns(words.get("item", "item"), words.get("items", "items"))
        return cls(tuple(voice), tuple(forbidden))

    def meta_text(self, text: str) -> str | None:
        """The phrase that narrates the user's part or talks about the message instead of saying it
        ("I'll ask about the postcode", "This person is looking for", an instruction echoed), or None."""
        return rules.meta_text(text)

    def role_flip(self, text: str) -> str | None:
        """The phrase that puts the draft in the recommender's (or an assistant's) voice, or None."""
        return rules.first_cue(text, list(self.voice))

    def named_titles(self, text: str, heard: Iterable[str] = ()) -> list[str]:
        """The forbidden titles the text names (`crsim.language.message_rules.title_named`), except
        those the recommender named first (`heard`: its messages), which the user may talk about."""
        said = list(heard)
        return [
            title
            for title in self.forbidden
            if rules.title_named(text, title) and not any(rules.title_named(other, title) for other in said)
        ]


def title_words(title: str) -> str:
    """A display title as it is matched in text: no year, the article in front, normalised."""
    return normalize(unarticle(split_title_year(title)[0]))


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


def parrots(draft: str, crs: Iterable[str]) -> str | None:
    """The CRS message the draft copies (`crsim.language.message_rules.parrots`, the behaviour
    report's `parroting` rule), or None."""
    return next((text for text in crs if rules.parrots(draft, text)), None)


def repeats(draft: str, earlier: Iterable[str]) -> str | None:
    """The user's earlier message the draft says again (`crsim.language.message_rules.repeats` with
    `USER_REPEAT_RUN_WORDS`, the behaviour report's `user_repeats` rule), or None."""
    return next((text for text in earlier if rules.repeats(text, draft, rules.USER_REPEAT_RUN_WORDS)), None)


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
