"""`popular`: a popularity baseline CRS, and the dialogue policy `retrieval` builds on.

The policy greets, asks for preferences, recommends the best-scoring item not yet shown, reacts to
acceptance, rejection and "seen", and closes on goodbye. Subclasses change what is asked, how items
are scored and how questions about an item are answered.

The item index is `item_index`, the ranked top-k walk `ranked_top`, a dialogue's state
`dialogue_state` (all three shared with `retrieval`).
"""

from __future__ import annotations

import random

import numpy as np
from pydantic import Field

from crsim.core.components import BuildContext
from crsim.core.plugins import Params as RegistryParams
from crsim.crs.base import BaseCRS, CRSReply, CRSSession, crs
from crsim.crs.dialogue_state import DialogueState
from crsim.crs.item_index import Positions, Scores, item_index, period_match
from crsim.crs.nlg import sentences_for
from crsim.crs.ranked_top import Evidence, top_ranked
from crsim.language.understanding import Understanding, lexicon_for, understand
from crsim.model.acts import DialogueAct, Intent


def _act(intent: str, slot: str | None = None, value: str | None = None) -> DialogueAct:
    return DialogueAct(intent=intent, slots=[(slot, value)] if slot else [])


@crs("popular")
class PopularCRS(BaseCRS):
    """Popularity baseline: asks for the domain's first slot, then recommends the items matching most
    of what it understood, ranked by the domain's popularity field (a count of ratings when the items
    carry one; else the catalogue's own order). It holds no item knowledge beyond attributes, so
    it answers questions about an item only generically, saying how it ranks."""

    class Params(RegistryParams):
        k: int = Field(1, ge=1, le=10, description="Items per recommendation turn.")
        max_questions: int = Field(
            1, ge=0, le=3, description="Preference questions (after the greeting) before recommending."
        )

    def __init__(self, params: Params, ctx: BuildContext) -> None:
        domain = ctx.require_domain(type(self).__name__)
        self.params, self.domain = params, domain
        self.index = item_index(domain)
        self.lexicon = lexicon_for(
            domain
        )  # build the shared understanding resources now, not in the first reply
        self.say = sentences_for(domain)
        _ = domain.items.linker

    def _new_state(self) -> DialogueState:
        return DialogueState(period_slot=self.lexicon.period_slot, replaceable=self.lexicon.value_slots)

    async def start(self, session: CRSSession) -> CRSReply:
        session.state = self._new_state()
        greeting = self.say.greeting(session.rng)
        return CRSReply(text=greeting, acts=[_act(Intent.GREETING), _act(Intent.ELICIT)], items_listed=True)

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        """The reply, with every item its text names listed: recommended or only mentioned."""
        reply = self._respond(session, text)
        reply.items_listed = True
        return reply

    def _respond(self, session: CRSSession, text: str) -> CRSReply:
        if not isinstance(session.state, DialogueState):
            session.state = self._new_state()
        state: DialogueState = session.state
        u = understand(text, self.domain, state.context())
        last = self.domain.items.get(state.last) if state.last else None
        state.absorb(u, last.year if last else None)
        if self._closing(state, u):
            state.pending = None
            text = self.say.closing(session.rng, accepted=bool(state.accepted))
            return CRSReply(text=text, acts=[_act(Intent.GOODBYE)], end=True)
        if u.accepted_items:
            state.pending = "more"
            text = f"{self.say.acknowledge('accept', session.rng)} {self.say.anything_else(session.rng)}"
            return CRSReply(text=text, acts=[_act(Intent.ASK)])
        return self._reply(session.rng, state, u)

    # --- policy --------------------------------------------------------------------------------

    def _closing(self, state: DialogueState, u: Understanding) -> bool:
        """Goodbye; thanks or 'no' once an item was accepted or 'anything else?' was asked."""
        if u.has(Intent.GOODBYE):
            return True
        moving_on = u.gives_preferences or u.has(Intent.REQUEST_RECOMMENDATION) or bool(u.inquiries)
        done = bool(state.accepted) or state.pending == "more"
        declined = u.has(Intent.DENY) or u.thanks or "any" in u.no_preference
        return done and declined and not moving_on and not u.rejected_items and not u.seen_items

    def _reply(self, rng: random.Random, state: DialogueState, u: Understanding) -> CRSReply:
        """The next move; an answer about the item under discussion names it without recommending it."""
        about = state.last if u.inquiries else None
        reply = self._next_move(rng, state, u)
        if about is not None and about not in reply.recommended_items:
            reply.mentioned_items = [about]
        return reply

    def _next_move(self, rng: random.Random, state: DialogueState, u: Understanding) -> CRSReply:
        parts: list[str] = []
        acts: list[DialogueAct] = []
        if not u.understood and state.recommended and state.pending != "more":
            state.pending = "more"
            text = f"{self.say.acknowledge('not_understood', rng)} {self.say.offer_more(rng)}"
            return CRSReply(text=text, acts=[_act(Intent.ASK)])
        if u.inquiries:
            answer_text, answer_acts = self._answers(rng, state, u.inquiries)
            parts.append(answer_text)
            acts += answer_acts
        if u.seen_items or u.rejected_items:
            parts.append(self.say.acknowledge("seen" if u.seen_items else "reject", rng))
        elif u.gives_preferences and state.recommended and not u.inquiries:
            parts.append(self.say.acknowledge("noted", rng))
        only_asked = bool(u.inquiries) and not (u.gives_preferences or u.rejected_items or u.seen_items)
        if only_asked and not u.has(Intent.REQUEST_RECOMMENDATION) and state.last:
            state.pending = None
            return CRSReply(text=" ".join(parts), acts=acts)
        slot = self._next_slot(state)
        if self._should_recommend(state, u, slot) or slot is None:
            return self._recommend(rng, state, parts, acts)
        if not u.understood:
            parts.append(self.say.acknowledge("not_understood", rng))
        parts.append(self.say.question(slot, rng, repeat=slot in state.asked))
        state.asked.append(slot)
        state.pending = slot
        return CRSReply(text=" ".join(parts), acts=[*acts, _act(Intent.ELICIT, slot)])

    def _should_recommend(self, state: DialogueState, u: Understanding, slot: str | None) -> bool:
        if u.rejected_items or u.seen_items or (state.recommended and u.gives_preferences):
            return True
        if state.pending == "more" and (u.has(Intent.AFFIRM) or not u.understood):
            return True
        # a request in the opening line is the reason for the chat, not an answer to a question
        return u.has(Intent.REQUEST_RECOMMENDATION) and bool(state.asked or state.recommended)

    def _next_slot(self, state: DialogueState) -> str | None:
        if len(state.asked) >= self.params.max_questions:
            return None
        for slot in self._slot_order():
            if not state.filled(slot) and state.asked.count(slot) < 2:
                return slot
        return None

    def _recommend(
        self, rng: random.Random, state: DialogueState, parts: list[str], acts: list[DialogueAct]
    ) -> CRSReply:
        chosen = self._top(state)
        if not chosen:
            state.pending = "more"
            return CRSReply(text=" ".join([*parts, self.say.exhausted()]), acts=[*acts, _act(Intent.ASK)])
        items = [self.domain.items[i] for i in chosen]
        state.recommended += chosen
        state.excluded.update(chosen)
        state.last, state.pending = chosen[0], None
        parts.append(self.say.recommendation([item.display_title for item in items], rng))
        reason = self._explain(state, chosen[0])
        parts += [reason] if reason else []
        acts += [_act(Intent.RECOMMEND, "title", item.display_title) for item in items]
        return CRSReply(text=" ".join(parts), recommended_items=chosen, acts=acts)

    def _top(self, state: DialogueState) -> list[str]:
        """The k best items not shown, seen or mentioned yet (ties: more popular, then catalogue order),
        found by scoring the popular items and those holding liked values first (`top_ranked`)."""
        index = self.index
        excluded = np.array([index.position[i] for i in state.excluded if i in index.position], dtype=np.intp)
        chosen = top_ranked(
            index, self._evidence(state), lambda at: self._scores(state, at), self.params.k, excluded
        )
        return [index.ids[p] for p in chosen]

    # --- hooks ---------------------------------------------------------------------------------

    def _slot_order(self) -> tuple[str, ...]:
        """Slots this CRS asks about, in order: the domain's first informable slot."""
        return tuple(self.domain.informable_slots)[:1]

    def _scores(self, state: DialogueState, at: Positions) -> Scores:
        """Scores of the items at positions `at`: the number of stated preferences an item matches
        (dislikes count against), then popularity."""
        index, lex = self.index, self.lexicon
        scores: Scores = index.popularity[at] * 0.99
        years = index.years[at]
        for slot in (*lex.value_slots, *lex.numeric_slots, *lex.people_slots):
            for value in state.likes.get(slot, []):
                scores[index.holds(slot, value, at)] += 1.0
            for value in state.dislikes.get(slot, []):
                scores[index.holds(slot, value, at)] -= 2.0
        if state.periods:
            scores += np.floor(np.max([period_match(years, p) for p in state.periods], axis=0))
        if state.newer_than:
            scores += years > state.newer_than
        if state.older_than:
            scores += (years > 0) & (years < state.older_than)
        return scores

    def _evidence(self, state: DialogueState) -> Evidence:
        """The most each stated preference adds to a score (`_scores`), for `top_ranked`."""
        index, lex = self.index, self.lexicon
        evidence = Evidence(popularity_weight=0.99)
        for slot in (*lex.value_slots, *lex.numeric_slots, *lex.people_slots):
            for value in state.likes.get(slot, []):
                if index.holds_by_bound(slot, value):
                    evidence.rest += 1.0
                else:
                    evidence.lists.append((index.ranks(slot, value), 1.0))
        evidence.rest += float(bool(state.periods)) + bool(state.newer_than) + bool(state.older_than)
        return evidence

    def _answers(
        self, rng: random.Random, state: DialogueState, slots: list[str]
    ) -> tuple[str, list[DialogueAct]]:
        """Popularity only: a generic line, whatever was asked."""
        if state.last is None:
            return self.say.acknowledge("no_item", rng), [_act(Intent.OTHER)]
        title = self.domain.items[state.last].display_title
        return self.say.generic_answer(title, self.index.ranked_by), [_act(Intent.OTHER)]

    def _explain(self, state: DialogueState, item_id: str) -> str:
        """Why the item was chosen; the baseline does not say."""
        return ""
