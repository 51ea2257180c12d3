"""What the recommender's last message did, computed without an LLM, for the rating and action steps.

A small model asked "rate the recommender's message" rates almost everything at the top of the scale,
also "I don't have details about X" after the user asked for X's director. So before rating, the
simulator states the facts of the turn in plain words: which items the message recommended (and
whether they were recommended before), whether it recommended anything after the user asked for a
recommendation, which of the details the user asked about it gave (the detail's value appears in the
text: a name, the year; for a plot, at least `PLOT_WORDS` of its content words), and which recommended
items contradict a constraint of the user's need (an item value of the constrained attribute is known
and none equals a wanted value). The same facts drive the consistency rules of `rating.check_ratings`
and the action guard (`guard.py`), and are recorded on the user utterance under `facts`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from crsim.model.domain import Domain, SlotKind
from crsim.model.items import Item

#: Shared content words of a plot that count as telling it.
PLOT_WORDS = 3
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_SMALL = frozenset(
    {
        "about", "after", "again", "also", "among", "around", "because", "been", "before", "being",
        "between", "both", "could", "does", "from", "have", "into", "just", "like", "made", "make",
        "more", "most", "much", "other", "over", "some", "such", "than", "that", "their", "them",
        "then", "there", "these", "they", "this", "those", "through", "under", "very", "were", "what",
        "when", "where", "which", "while", "with", "would", "your",
    }
)  # fmt: skip


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 4 and w not in _SMALL}


def detail_values(domain: Domain, item: Item, detail: str) -> list[str]:
    """The item's values of a requestable detail (a slot name such as `director`), [] when unknown."""
    slot = domain.slots.get(detail)
    return item.values(slot.attribute if slot else detail)


def tells(domain: Domain, item: Item, detail: str, text: str) -> bool:
    """Whether `text` gives the item's value of `detail`: a plot by shared content words, anything
    else by one of its values appearing as words (case-insensitive)."""
    values = detail_values(domain, item, detail)
    if not values:
        return False
    slot = domain.slots.get(detail)
    if slot is not None and slot.kind == SlotKind.TEXT:
        plot = _content_words(values[0]) - _content_words(item.title)
        return len(plot & _content_words(text)) >= min(PLOT_WORDS, len(plot))
    lowered = text.lower()
    return any(re.search(rf"(?<!\w){re.escape(v.lower())}(?!\w)", lowered) for v in values if v.strip())


def conflicts(domain: Domain, item: Item, constraints: dict[str, list[str]]) -> list[str]:
    """The constraints `item` contradicts, as "slot is not value": its values of the slot are known and
    none is wanted."""
    found = []
    for slot_name, wanted in constraints.items():
        slot = domain.slots.get(slot_name)
        have = {v.lower() for v in item.values(slot.attribute if slot else slot_name)}
        if have and wanted and not have & {w.lower() for w in wanted}:
            found.append(f"{slot_name.replace('_', ' ')} is not {' or '.join(wanted)}")
    return found


@dataclass(frozen=True)
class Inquiry:
    """What the user asked about: an item and the details wanted."""

    item_id: str
    title: str
    details: list[str]


@dataclass
class TurnFacts:
    """The facts of one recommender message, relative to what the user's previous message did."""

    recommended: list[str] = field(default_factory=list)
    repeated: list[str] = field(default_factory=list)
    asked_for_recommendation: bool = False
    #: The message asks the user something (a question mark in it).
    asks_user: bool = False
    inquiry: Inquiry | None = None
    answered: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)
    contradicts: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ignored_inquiry(self) -> bool:
        """The user asked about details and the message gave none of them."""
        return bool(self.unanswered) and not self.answered

    def lines(self) -> list[str]:
        """The facts as sentences for the prompts (second person: the user reads them)."""
        out = []
        if self.recommended:
            out.append(f"It recommended: {'; '.join(self.recommended)}.")
        elif self.asked_for_recommendation:
            out.append("You asked for a recommendation, and it recommended nothing.")
        else:
            out.append("It recommended nothing.")
        if self.repeated:
            out.append(f"It had already recommended {'; '.join(self.repeated)} before.")
        if self.asks_user:
            out.append("It asked you a question.")
        if self.inquiry is not None:
            title = self.inquiry.title
            if self.answered:
                out.append(f"You asked about the {_join(self.answered)} of {title}, and it told you.")
            if self.unanswered:
                out.append(
                    f"You asked about the {_join(self.unanswered)} of {title}, and it did NOT tell you."
                )
        for title, problems in self.contradicts.items():
            out.append(f"{title} does not match what you are looking for: {'; '.join(problems)}.")
        return out

    def record(self) -> dict[str, Any]:
        """The facts for the utterance's annotations."""
        data: dict[str, Any] = {
            "recommended": self.recommended,
            "asked_for_recommendation": self.asked_for_recommendation,
            "asks_user": self.asks_user,
        }
        if self.repeated:
            data["repeated"] = self.repeated
        if self.inquiry is not None:
            data["inquiry"] = {"item": self.inquiry.title, "details": self.inquiry.details}
            data["answered"], data["unanswered"] = self.answered, self.unanswered
        if self.contradicts:
            data["contradicts"] = self.contradicts
        return data


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def turn_facts(
    domain: Domain,
    text: str,
    recommended: list[Item],
    *,
    before: list[str],
    asked_for_recommendation: bool,
    inquiry: Inquiry | None,
    constraints: dict[str, list[str]],
) -> TurnFacts:
    """The facts of a recommender message `text` that recommends `recommended`; `before` holds the ids
    recommended earlier, `inquiry` what the user's previous message asked about (None: nothing)."""
    facts = TurnFacts(
        recommended=[i.display_title for i in recommended],
        repeated=[i.display_title for i in recommended if i.id in before],
        asked_for_recommendation=asked_for_recommendation,
        asks_user="?" in text,
        inquiry=inquiry,
    )
    asked = domain.items.get(inquiry.item_id) if inquiry is not None else None
    if inquiry is not None and asked is not None:
        for detail in inquiry.details:
            told = tells(domain, asked, detail, text)
            (facts.answered if told else facts.unanswered).append(detail)
    for item in recommended:
        problems = conflicts(domain, item, constraints)
        if problems:
            facts.contradicts[item.display_title] = problems
    return facts
