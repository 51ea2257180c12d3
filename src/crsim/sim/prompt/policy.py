"""What the prompt-based users know besides the text: what was recommended and what they asked.

A small model forgets the need it was given halfway through a dialogue: it accepts an item from the
wrong decade and never asks the questions its need lists. `NeedTracker` follows the dialogue from
the CRS replies' item ids (not from the text) and the user's own messages, and turns that into
per-turn guidance: the facts of the item just recommended that bear on the user's constraints,
whether it fits them, and which of the user's requests are still to ask. The simulators show the
guidance to the model and hold it to the requests deterministically (`question`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from crsim.crs.base import CRSReply
from crsim.language.cues import REJECT, bare_question
from crsim.language.domain_cues import domain_cues
from crsim.language.sentences import sentences
from crsim.model.domain import Domain
from crsim.model.linking import heard_titles
from crsim.model.mentions import split_linked
from crsim.model.text import normalize
from crsim.sim.shared.checks import item_facts, mismatches
from crsim.sim.shared.nlg import DomainWords, domain_template_set, load_templates

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Shown:
    """The item the recommender just suggested, as the user's guidance shows it."""

    title: str
    facts: list[tuple[str, list[str]]]
    mismatched: list[str]
    #: (slot, wanted values) of the mismatched slots.
    wanted: list[tuple[str, list[str]]] = field(default_factory=list)


@dataclass
class NeedTracker:
    """Items recommended so far (ids, first mention order), the latest ones, and the requests asked."""

    domain: Domain
    constraints: dict[str, list[str]]
    requests: list[str]
    recommended: list[str] = field(default_factory=list)
    latest: list[str] = field(default_factory=list)
    asked: set[str] = field(default_factory=set)
    #: CRS replies whose first recommended item missed the need (`Shown.mismatched`).
    misses: int = 0

    def __post_init__(self) -> None:
        cues = domain_cues(self.domain)
        self._inquiries, self._accept = cues.inquiries, cues.accept

    def heard(self, reply: CRSReply) -> None:
        """A CRS reply: the items it recommends are its ids, or for a reply that gives none and does
        not say it listed them all, the titles linked in its text that were not named before (as the
        dialogue loop records them)."""
        ids = list(reply.recommended_items)
        if not ids and not reply.items_listed and reply.text:
            linked = [m.item_id for m in heard_titles(self.domain.items, reply.text)]
            ids, _ = split_linked(linked, set(self.recommended))
        self.latest = [i for i in dict.fromkeys(ids) if i in self.domain.items]
        self.recommended.extend(i for i in self.latest if i not in self.recommended)
        shown = self.shown()
        self.misses += shown is not None and bool(shown.mismatched)

    def said(self, text: str) -> None:
        """The user's message: the requests it asks about count as asked."""
        self.asked.update(slot for slot in self.requests if self.asks_about(text, slot))

    def asks_about(self, text: str, slot: str) -> bool:
        """A question about the slot as the rule-based understanding reads one (so the behaviour report
        counts it asked too): the domain's inquiry cues, or a bare question naming the slot ("Its
        director?", `crsim.language.cues.bare_question`)."""
        pattern = self._inquiries.get(slot)
        for sentence in _SENTENCE.split(text.strip()):
            norm = normalize(sentence)
            if pattern is not None and pattern.search(norm):
                return True
            if sentence.rstrip().endswith("?") and bare_question(norm, [slot]) == slot:
                return True
        return False

    def titles(self) -> list[str]:
        """Display titles of every item recommended so far."""
        return [self.domain.items[i].display_title for i in self.recommended]

    def shown(self) -> Shown | None:
        """The first item of the latest reply with its constraint facts, or None."""
        if not self.latest:
            return None
        item = self.domain.items[self.latest[0]]
        attributes = {slot: self.domain.attribute(slot) for slot in self.constraints}
        unfit = mismatches(item, self.constraints, attributes)
        wanted = [(slot, self.constraints[slot]) for slot in unfit]
        return Shown(item.display_title, item_facts(item, attributes), unfit, wanted)

    def accepts_unfit(self, text: str) -> str | None:
        """The constraint slots an item just recommended contradicts, when the text accepts it (the
        domain's acceptance cues, no rejection) although it does not fit; else None."""
        shown = self.shown()
        if shown is None or not shown.mismatched:
            return None
        norm = normalize(text)
        if self._accept.search(norm) and not REJECT.search(norm):
            return f"{shown.title}: {', '.join(shown.mismatched)}"
        return None

    def pending(self) -> list[str]:
        """Requests still to ask about the item just recommended (none when it does not fit the need:
        the user turns it down instead)."""
        shown = self.shown()
        if shown is None or shown.mismatched:
            return []
        return [slot for slot in self.requests if slot not in self.asked]

    def without_own_answers(self, text: str, slots: list[str]) -> str:
        """`text` without the sentences that state the just-recommended item's value of one of
        `slots` (a small model answers the question it is about to ask: "The year of Monsters, Inc.
        is 2001."). Values shorter than 4 characters or longer than `_ANSWER_CHARS` (a plot) are not
        looked for: too easy to hit by accident, or never said word for word."""
        if not self.latest:
            return text
        item = self.domain.items[self.latest[0]]
        values = [
            normalize(value)
            for slot in slots
            for value in item.values(self.domain.attribute(slot))
            if 4 <= len(value) <= _ANSWER_CHARS
        ]
        if not values:
            return text
        patterns = [re.compile(rf"\b{re.escape(v)}\b") for v in values if v]
        kept = [s for s in sentences(text) if not any(p.search(normalize(s)) for p in patterns)]
        return " ".join(kept)


#: The longest value `NeedTracker.without_own_answers` looks for (names and years, not plots).
_ANSWER_CHARS = 60


def question(slot: str, domain: Domain) -> str:
    """The deterministic question about one requested slot: the first inquiry phrasing of the domain's
    template set (the one `abus` speaks, so crsim's rule-based understanding and the behaviour report
    read it as a question about the slot), with the item as "it"; the generic set's phrasing for a
    slot its set leaves out."""
    templates = load_templates(domain_template_set(domain))
    inquiries = templates.phrases.get("inquire", {})
    label = DomainWords.of(domain).labels.get(slot, slot.replace("_", " "))
    options = inquiries.get(slot) or load_templates("generic").phrases["inquire"]["default"]
    return options[0].format(ref="it", label=label)
