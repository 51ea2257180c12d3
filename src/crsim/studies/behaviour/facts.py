"""One dialogue as the measures see it: its messages in order, the items the CRS named so far, and
the rule-based understanding of each user message (computed once, on demand)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from crsim.eval.annotators.rules import user_context
from crsim.language.understanding import Understanding, understand
from crsim.model.acts import Intent
from crsim.model.dialogue import Dialogue, Fault, Role, TerminationReason, Utterance
from crsim.model.domain import Domain
from crsim.model.items import Item

UNNAMED = "(unnamed)"
#: Intents that make an understood acceptance a hedge ("sounds good, anything else?").
_NOT_ACCEPTING = frozenset({Intent.REQUEST_RECOMMENDATION, Intent.REJECT, Intent.INQUIRE, Intent.SEEN})


@dataclass
class Facts:
    """A dialogue and its domain, with what several measures derive from them."""

    dialogue: Dialogue
    domain: Domain

    @property
    def simulator(self) -> str:
        return self.dialogue.simulator_id or UNNAMED

    @property
    def crs(self) -> str:
        return self.dialogue.crs_id or UNNAMED

    @property
    def utterances(self) -> list[Utterance]:
        return self.dialogue.utterances

    def user_indices(self) -> list[int]:
        return [i for i, u in enumerate(self.utterances) if u.role is Role.USER]

    def crs_indices(self) -> list[int]:
        return [i for i, u in enumerate(self.utterances) if u.role is Role.CRS]

    def item(self, item_id: str) -> Item | None:
        return self.domain.items.get(item_id)

    @property
    def user_ended(self) -> bool:
        term = self.dialogue.termination
        return term is not None and term.reason is TerminationReason.USER_ENDED

    @property
    def broken(self) -> str | None:
        """Why the dialogue cannot show what a whole dialogue of the user would (the simulator or the
        infrastructure broke it, or it holds no user message), or None."""
        term = self.dialogue.termination
        if term is not None and term.fault in (Fault.USER, Fault.INFRASTRUCTURE):
            return f"the dialogue broke ({term.reason.value})"
        return None if self.user_indices() else "no user message"

    @cached_property
    def understood(self) -> dict[int, Understanding]:
        """Utterance index -> crsim's rule-based understanding of that user message (the parser the
        built-in CRSs use), read with the CRS message before it as context."""
        items = self.domain.items
        return {
            i: understand(self.utterances[i].text, self.domain, user_context(self.utterances[:i], items))
            for i in self.user_indices()
        }

    def stated(self, index: int) -> set[tuple[str, str]]:
        """(slot, lower-cased value) pairs a user message states: its recorded inform/disclose acts
        and what the rule-based understanding reads in its text."""
        acts = [*self.utterances[index].acts, *self.understood[index].acts]
        return {
            (slot, value.lower())
            for act in acts
            if act.intent in (Intent.DISCLOSE, Intent.INFORM)
            for slot, value in act.slots
            if value
        }

    def asked(self, index: int) -> set[str]:
        """Slots a user message asks about: recorded inquire/request acts and understood inquiries."""
        recorded = {
            slot
            for act in self.utterances[index].acts
            if act.intent in (Intent.INQUIRE, "request")
            for slot, value in act.slots
            if value is None
        }
        return recorded | set(self.understood[index].inquiries)

    def accepted(self, index: int) -> list[str]:
        """Item ids a user message accepts: recorded accept acts naming an item, and what the rule-based
        understanding reads as accepting the item the CRS last recommended, unless the same message
        also asks for other recommendations, rejects, asks about the item or says it was seen."""
        understood = self.understood[index]
        hedged = understood.intents & _NOT_ACCEPTING
        found = [] if hedged else list(understood.accepted_items)
        for act in self.utterances[index].acts:
            if act.intent == Intent.ACCEPT:
                found += [v for s, v in act.slots if s == "item" and v]
        return list(dict.fromkeys(found))

    def named_before(self, index: int) -> set[str]:
        """Item ids the CRS recommended or mentioned in the messages before `index`."""
        return {
            item_id
            for u in self.utterances[:index]
            if u.role is Role.CRS
            for item_id in (*u.recommended_items, *u.mentioned_items)
        }
