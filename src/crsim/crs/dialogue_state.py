"""What one dialogue with a built-in CRS (`popular`, `retrieval`) has established: preferences,
questions asked, items shown; merged turn by turn from what the user said."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from crsim.language.understanding import Context, Period, Understanding


@dataclass
class DialogueState:
    """Everything one dialogue has established: preferences, questions asked, items shown."""

    likes: dict[str, list[str]] = field(default_factory=dict)
    dislikes: dict[str, list[str]] = field(default_factory=dict)
    periods: list[Period] = field(default_factory=list)
    disliked_periods: list[Period] = field(default_factory=list)
    no_preference: set[str] = field(default_factory=set)
    topic_words: list[str] = field(default_factory=list)
    disliked_topic_words: list[str] = field(default_factory=list)
    free_words: list[str] = field(default_factory=list)
    liked_items: list[str] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)
    recommended: list[str] = field(default_factory=list)
    excluded: set[str] = field(default_factory=set)
    accepted: list[str] = field(default_factory=list)
    last: str | None = None
    pending: str | None = None
    newer_than: int | None = None
    older_than: int | None = None
    #: Per-dialogue caches of derived values (e.g. text-similarity scores), owned by the CRS.
    memo: dict[str, Any] = field(default_factory=dict)
    #: The domain's period slot (filled by periods, not values) and the slots whose newly stated value
    #: replaces the earlier one once recommendations started (the user steers away from what was shown).
    period_slot: str | None = None
    replaceable: tuple[str, ...] = ()

    def context(self) -> Context:
        elicited = self.pending if self.pending not in (None, "more") else None
        return Context(elicited=elicited, recommended=self.last, yes_no=self.pending == "more")

    def filled(self, slot: str) -> bool:
        if slot in self.no_preference or "any" in self.no_preference:
            return True
        return bool(self.periods) if slot == self.period_slot else bool(self.likes.get(slot))

    def absorb(self, u: Understanding, year_of_last: int | None) -> None:
        """Merge what the user said. After recommendations started, a newly stated value of a
        replaceable slot (a genre, a cuisine) or period replaces the earlier one: the user is steering
        away from what was shown."""
        steering = bool(self.recommended)
        for slot, values in u.likes.items():
            current = [] if steering and slot in self.replaceable else self.likes.get(slot, [])
            self.likes[slot] = current + [v for v in values if v not in current]
            self.dislikes[slot] = [v for v in self.dislikes.get(slot, []) if v not in values]
        for slot, values in u.dislikes.items():
            self.dislikes[slot] = self.dislikes.get(slot, []) + values
            self.likes[slot] = [v for v in self.likes.get(slot, []) if v not in values]
        if u.periods:
            self.periods = list(u.periods) if steering else self.periods + u.periods
            self.newer_than = self.older_than = None
        self.disliked_periods += u.disliked_periods
        if year_of_last and (u.newer or u.older):
            self.newer_than, self.older_than = (year_of_last, None) if u.newer else (None, year_of_last)
        self.no_preference.update(u.no_preference)
        self.topic_words += u.topic_words
        self.disliked_topic_words += u.disliked_topic_words
        self.free_words += u.free_words
        self.liked_items += u.liked_items
        self.excluded.update(u.liked_items, u.seen_items, u.rejected_items, u.accepted_items)
        self.accepted += [i for i in u.accepted_items if i not in self.accepted]
