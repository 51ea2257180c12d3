"""The interaction model: which dialogue acts the user performs next, given the CRS's acts.

Following UserSimCRS v2 (section 4.2), the reply to a CRS turn falls in one of four cases:

1. elicitation -> `disclose` the elicited slot: value(s) from the need's constraints, else from
   the user's preferences (a liked value, else the best-rated value among their ratings), else
   `disclose(slot=None)` ("I don't mind"). A slot disclosed before is repeated as before. A
   disclosure removes pending disclosures of that slot from the agenda (cleaning).
2. recommendation -> feedback from the preference model: `seen` for rated items, `reject` for
   the others it does not accept. An acceptable item (a target, or a predicted rating above
   the threshold that meets the constraints) becomes the candidate: the agenda's requests are
   asked about it first, one `inquire` per turn, then the user accepts it and says goodbye in
   the same turn (`end=True`). A round without an acceptable item is a failed round; after
   `patience` of them the user says goodbye (`end=True`); otherwise it follows the rejection
   with the answer to a simultaneous elicitation, the violated constraint, the next pending
   disclosure, or a request for something else.
3. item talk (the CRS answers an inquiry or asks a yes/no question) -> the answer is
   acknowledged and the next request asked (or the item accepted); "Have you seen it?" gets
   `seen` or `deny`; "Would you like something else?" gets `affirm` and the next disclosure
   or a request.
4. other -> the next coherent agenda act: with a candidate, its next request or the accept;
   otherwise the next pending disclosure, or `request_recommendation`.

Progress: a CRS turn makes no progress when its text reports a setback (`crsim.sim.progress`: it
found nothing, or it cannot help), or when, while the user is still looking (no candidate), it
answers the user's request with no recommendation and nothing else the user can act on (no
elicitation, question or information). Once the user holds a candidate, a question the CRS leaves
unanswered is not counted: the user goes on to its next question or accepts, so those turns are
bounded by its requests. Turns without progress count toward
`patience` together with failed recommendation rounds; when they use it up the user says goodbye
(outcome `no_progress`). After "no results" the user relaxes its least important disclosed
constraint (`least_important`) and asks again: `disclose(slot=None)` ("I don't mind the slot") and
`request_recommendation`; the preference model stops requiring that slot.

Requests are never removed by cleaning; an inquiry leaves the agenda only when asked, or when
the CRS volunteers that information together with the (single) item the user goes for. A CRS
`goodbye` is answered with `goodbye` and `end=True`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from crsim.model.acts import DialogueAct, Intent
from crsim.model.domain import Domain
from crsim.model.text import normalize
from crsim.model.user import SimulatedUser
from crsim.sim.agenda.agenda import Agenda, disclose_act
from crsim.sim.agenda.preferences import Decision, Judgement, PreferenceModel
from crsim.sim.progress import Setback

#: The slot of a "no preference" answer to a question whose slot is unknown ("I don't mind.").
ANY_SLOT = "any"


def act(intent: str, **slots: str | None) -> DialogueAct:
    return DialogueAct(intent=intent, slots=list(slots.items()))


@dataclass
class PolicyTurn:
    """The acts of the next user utterance and what the NLG and the record need to know."""

    acts: list[DialogueAct]
    end: bool = False
    acknowledge: bool = False
    annotations: dict[str, Any] = field(default_factory=dict)


class InteractionModel:
    """Agenda and dialogue state of one simulated user for one dialogue."""

    def __init__(
        self,
        user: SimulatedUser,
        domain: Domain,
        preferences: PreferenceModel,
        rng: random.Random,
        *,
        patience: int = 3,
        opening_disclosure_prob: float = 0.5,
    ) -> None:
        self.need, self.profile, self.domain = user.need, user.profile, domain
        self.preferences, self.rng = preferences, rng
        self.patience, self.opening_disclosure_prob = patience, opening_disclosure_prob
        self.agenda = Agenda.from_need(user.need)
        self.disclosed: dict[str, DialogueAct] = {}
        self.judged: dict[str, Judgement] = {}
        self.recommended: list[str] = []
        self.last_items: list[str] = []
        self.candidate: str | None = None
        #: The item "it" refers to: the single item just recommended, or the one asked about.
        self.topic: str | None = None
        self.pending_inquiry: str | None = None
        self.accepted: str | None = None
        self.failed_rounds = 0
        #: CRS turns without progress (see the module docstring); they use up `patience` too.
        self.stalled_turns = 0
        self.ended = False

    # --- queries ------------------------------------------------------------------------------

    def items_hint(self) -> list[str]:
        """Items under discussion for the NLU, the one in focus (the candidate) last."""
        recent = [i for i in self.recommended[-5:] if i != self.candidate]
        return recent + ([self.candidate] if self.candidate else [])

    def title(self, item_id: str | None) -> str | None:
        item = self.domain.items.get(item_id) if item_id else None
        return item.display_title if item else None

    def focus_title(self) -> str | None:
        """The item an inquiry is about: the candidate, else the last one recommended."""
        return self.title(self.candidate or (self.last_items[-1] if self.last_items else None))

    def after_utterance(self, acts: list[DialogueAct]) -> None:
        """Once the user asked about the candidate by name, "it" refers to the candidate."""
        if any(a.intent == Intent.INQUIRE for a in acts):
            self.topic = self.candidate

    def patience_spent(self) -> bool:
        """Failed recommendation rounds and turns without progress together reached `patience`."""
        return self.failed_rounds + self.stalled_turns >= self.patience

    # --- entry points -------------------------------------------------------------------------

    def opening(self, crs_acts: list[DialogueAct] | None = None) -> PolicyTurn:
        """Greeting plus a request (sometimes with the first disclosure), or, when the CRS opened
        with a question or a recommendation, greeting plus the answer to it."""
        draw = self.rng.random()
        substantive = [a for a in crs_acts or [] if a.intent in (Intent.ELICIT, Intent.RECOMMEND, Intent.ASK)]
        if substantive:
            turn = self.respond(substantive)
            turn.acts.insert(0, act(Intent.GREETING))
            return turn
        acts = [act(Intent.GREETING), act(Intent.REQUEST_RECOMMENDATION)]
        if draw < self.opening_disclosure_prob:
            first = self.agenda.pop_intent(Intent.DISCLOSE)
            if first is not None:
                self._mark_disclosed(first)
                acts.append(first)
        return PolicyTurn(acts)

    def respond(self, crs_acts: list[DialogueAct], setback: Setback | None = None) -> PolicyTurn:
        """The four cases of the agenda update, after goodbye handling and the progress check;
        `setback` is what the CRS's text reported instead of helping (`crsim.sim.progress`)."""
        if self.ended:
            return PolicyTurn([act(Intent.GOODBYE)], end=True)
        intents = {a.intent for a in crs_acts}
        if Intent.GOODBYE in intents:
            return self._end([], "crs_goodbye")
        items = self._recommended_ids(crs_acts)
        if self._progress(intents, items, setback):
            return self._cases(crs_acts, intents, items)
        self.stalled_turns += 1
        notes: dict[str, Any] = {"stalled_turns": self.stalled_turns}
        if setback is not None:
            notes["setback"] = str(setback)
        if self.patience_spent():
            return self._end([], "no_progress", notes)
        slot = self.least_important() if setback is Setback.NO_RESULTS else None
        if slot is not None:
            notes["relaxed"] = {slot: [v for _, v in self.disclosed[slot].slots]}
            acts = [self._relax(slot), act(Intent.REQUEST_RECOMMENDATION)]
            return PolicyTurn(acts, annotations=notes)
        turn = self._cases(crs_acts, intents, items)
        turn.annotations = {**notes, **turn.annotations}
        return turn

    def _cases(self, crs_acts: list[DialogueAct], intents: set[str], items: list[str]) -> PolicyTurn:
        if items:
            return self._on_recommendation(items, crs_acts)
        elicited = [a for a in crs_acts if a.intent == Intent.ELICIT]
        if elicited:
            self.pending_inquiry = None
            return PolicyTurn(self._disclosures(elicited))
        if intents & {Intent.INFORM, Intent.ASK}:
            turn = self._on_item_talk(crs_acts)
            if turn is not None:
                return turn
        return self._on_other()

    def _progress(self, intents: set[str], items: list[str], setback: Setback | None) -> bool:
        """See the module docstring: a setback never is; with a candidate, the user's own questions
        move the dialogue on (each asked once), so anything else is."""
        if setback is not None:
            return False
        if items or self.candidate is not None:
            return True
        return bool(intents & {Intent.ELICIT, Intent.ASK, Intent.INFORM})

    def _relax(self, slot: str) -> DialogueAct:
        """Give up the constraint on `slot`: the user no longer minds it (said, and when judging)."""
        relaxed = self.disclosed[slot] = disclose_act(slot, [None])
        self.agenda.clean({slot})
        self.preferences.relax(slot)
        self.pending_inquiry = None
        return relaxed

    def least_important(self) -> str | None:
        """The disclosed constraint the user gives up first when the CRS finds nothing.

        Among the slots disclosed with a value: one the need does not constrain (said only to answer
        a question) before one it does; then the one the user's ratings back least
        (`PreferenceModel.support`); ties broken by the dialogue's seeded random draw. None when
        nothing with a value was disclosed.
        """
        ranked = sorted(
            (slot not in self.need.constraints, -self.preferences.support(slot, values), slot)
            for slot, values in (
                (slot, [v for _, v in disclosure.slots if v is not None])
                for slot, disclosure in self.disclosed.items()
            )
            if values
        )
        if not ranked:
            return None
        key = ranked[-1][:2]
        tied = [slot for *rank, slot in ranked if tuple(rank) == key]
        return tied[0] if len(tied) == 1 else self.rng.choice(tied)

    # --- the cases ----------------------------------------------------------------------------

    def _on_recommendation(self, items: list[str], crs_acts: list[DialogueAct]) -> PolicyTurn:
        self.last_items = items
        self.topic = items[0] if len(items) == 1 else None
        self.recommended.extend(i for i in items if i not in self.recommended)
        judgements = [self._judge(i) for i in items]
        notes: dict[str, Any] = {"judged": {j.item_id: _summary(j) for j in judgements}}
        feedback = [self._feedback(j) for j in judgements if j.decision != Decision.ACCEPT]
        acceptable = [j for j in judgements if j.decision == Decision.ACCEPT]
        if acceptable:
            best = max(acceptable, key=lambda j: (j.target, j.predicted or 0.0))
            self.candidate = best.item_id
            if len(items) == 1:
                notes["preempted"] = self._preempt(crs_acts)
        if self.candidate is not None:
            return self._advance(feedback, notes)
        self.failed_rounds += 1
        notes["failed_rounds"] = self.failed_rounds
        if self.patience_spent():
            return self._end(feedback, "patience", notes)
        return PolicyTurn(feedback + self._follow_up(judgements, crs_acts), annotations=notes)

    def _on_item_talk(self, crs_acts: list[DialogueAct]) -> PolicyTurn | None:
        answered = any(a.intent == Intent.INFORM for a in crs_acts)
        if answered and self.pending_inquiry is not None and self.candidate is not None:
            self.pending_inquiry = None
            return self._advance([], acknowledge=True)
        for question in (a for a in crs_acts if a.intent == Intent.ASK):
            offered = question.value("alternatives")
            if offered is not None:
                return PolicyTurn([self._choose(offered)])
            if question.has_slot("seen"):
                prefix = [self._seen_answer()]
                if self.candidate is not None:
                    return self._advance(prefix)
                return PolicyTurn([*prefix, act(Intent.REQUEST_RECOMMENDATION)])
            if self.candidate is not None:
                return self._advance([])
            return PolicyTurn([act(Intent.AFFIRM), *self._next_disclosure_or_request()])
        return None

    def _on_other(self) -> PolicyTurn:
        if self.candidate is not None:
            self.pending_inquiry = None
            return self._advance([])
        return PolicyTurn(self._next_disclosure_or_request())

    # --- building blocks ----------------------------------------------------------------------

    def _advance(
        self, prefix: list[DialogueAct], notes: dict[str, Any] | None = None, acknowledge: bool = False
    ) -> PolicyTurn:
        """With a candidate: ask its next request, or accept it and say goodbye."""
        notes = notes or {}
        inquiry = self.agenda.pop_intent(Intent.INQUIRE)
        if inquiry is not None:
            self.pending_inquiry = inquiry.slots[0][0] if inquiry.slots else None
            notes["inquired_about"] = self.candidate
            return PolicyTurn([*prefix, inquiry], acknowledge=acknowledge, annotations=notes)
        if self.candidate is None:
            raise RuntimeError("no candidate item to accept")
        self.accepted = self.candidate
        title = self.domain.items[self.candidate].display_title
        turn = self._end([*prefix, act(Intent.ACCEPT, title=title)], "accepted", notes)
        turn.acknowledge = acknowledge
        return turn

    def _end(self, acts: list[DialogueAct], outcome: str, notes: dict[str, Any] | None = None) -> PolicyTurn:
        self.ended = True
        goodbye = self.agenda.pop_intent(Intent.GOODBYE) or act(Intent.GOODBYE)
        return PolicyTurn([*acts, goodbye], end=True, annotations={**(notes or {}), "outcome": outcome})

    def _judge(self, item_id: str) -> Judgement:
        judgement = self.judged.get(item_id)
        if judgement is None:
            judgement = self.judged[item_id] = self.preferences.judge(item_id)
        return judgement

    def _feedback(self, judgement: Judgement) -> DialogueAct:
        title = self.domain.items[judgement.item_id].display_title
        if judgement.decision == Decision.SEEN:
            return act(Intent.SEEN, title=title, liked="yes" if judgement.liked else "no")
        return act(Intent.REJECT, title=title)

    def _follow_up(self, judgements: list[Judgement], crs_acts: list[DialogueAct]) -> list[DialogueAct]:
        """After a failed round: answer an elicitation, restate a violated constraint, or move on."""
        elicited = [a for a in crs_acts if a.intent == Intent.ELICIT]
        if elicited:
            return self._disclosures(elicited)
        violated = next((j.violated for j in judgements if j.violated), None)
        if violated is not None:
            return [self._disclose(violated)]
        return self._next_disclosure_or_request()

    def _disclosures(self, elicited: list[DialogueAct]) -> list[DialogueAct]:
        acts: list[DialogueAct] = []
        for elicit in elicited[:3]:
            slot = elicit.slots[0][0] if elicit.slots else None
            answer = self._disclose(slot) if slot else self._generic_disclosure()
            if answer is not None and answer not in acts:
                acts.append(answer)
        return acts or [act(Intent.REQUEST_RECOMMENDATION)]

    def _disclose(self, slot: str) -> DialogueAct:
        """The disclosure for `slot`: as before, from the need, from preferences, or "don't mind"."""
        previous = self.disclosed.get(slot)
        if previous is not None:
            return previous
        values: list[str | None] = list(self.need.constraint_values(slot))
        if not values:
            liked = self.profile.likes(slot)
            values = [self.rng.choice(liked) if liked else self.preferences.favourite(slot)]
        disclosure = disclose_act(slot, values)
        self._mark_disclosed(disclosure)
        return disclosure

    def _choose(self, question: str) -> DialogueAct:
        """The answer to a question offering alternatives: the user's value of the slot whose value
        (or a synonym) the question names, else "no preference" (never a bare yes)."""
        words = f" {normalize(question)} "
        named = [
            slot
            for phrase, meanings in self.domain.lexicon().items()
            if f" {normalize(phrase)} " in words
            for slot, _ in meanings
        ]
        for slot in dict.fromkeys(named):
            if self.need.constraint_values(slot) or slot in self.disclosed:
                return self._disclose(slot)
        if named:
            return self._disclose(named[0])
        return disclose_act(ANY_SLOT, [None])

    def _generic_disclosure(self) -> DialogueAct | None:
        """Answer to "What are you looking for?": the next pending constraint, one said before,
        or a favourite value of the domain's first informable slot (movies: a genre); None when there
        is nothing to say."""
        pending = self.agenda.pop_intent(Intent.DISCLOSE)
        if pending is not None:
            self._mark_disclosed(pending)
            return pending
        if self.disclosed:
            return next(iter(self.disclosed.values()))
        first = next(iter(self.domain.informable_slots), None)
        if first is not None:
            favourite = self._disclose(first)
            return favourite if favourite.value(first) is not None else None
        return None

    def _next_disclosure_or_request(self) -> list[DialogueAct]:
        pending = self.agenda.pop_intent(Intent.DISCLOSE)
        if pending is not None:
            self._mark_disclosed(pending)
            return [pending]
        return [act(Intent.REQUEST_RECOMMENDATION)]

    def _mark_disclosed(self, disclosure: DialogueAct) -> None:
        slots = {s for s, _ in disclosure.slots}
        for slot in slots:
            self.disclosed[slot] = disclosure
        self.agenda.clean(slots)

    def _seen_answer(self) -> DialogueAct:
        item_id = self.candidate or (self.last_items[-1] if self.last_items else None)
        rating = self.profile.item_ratings.get(item_id) if item_id else None
        if item_id is None or rating is None:
            return act(Intent.DENY)
        judgement = self._judge(item_id)
        return self._feedback(judgement)

    def _preempt(self, crs_acts: list[DialogueAct]) -> list[str]:
        """Requests the CRS answered unasked alongside the item the user goes for."""
        slots = [s for a in crs_acts if a.intent == Intent.INFORM for s, _ in a.slots]
        return [s for s in dict.fromkeys(slots) if self.agenda.remove_inquiry(s)]

    def _recommended_ids(self, crs_acts: list[DialogueAct]) -> list[str]:
        """Item ids of `recommend` acts: the linked id when given, else the title matched."""
        ids: list[str] = []
        for rec in (a for a in crs_acts if a.intent == Intent.RECOMMEND):
            item_id = rec.value("item")
            if item_id is None or item_id not in self.domain.items:
                title = rec.value("title")
                mention = self.domain.items.linker.match_title(title) if title else None
                item_id = mention.item_id if mention else None
            if item_id is not None and item_id not in ids:
                ids.append(item_id)
        return ids


def _summary(judgement: Judgement) -> dict[str, Any]:
    summary: dict[str, Any] = {"decision": str(judgement.decision)}
    if judgement.predicted is not None:
        summary["predicted_rating"] = judgement.predicted
    if judgement.rating is not None:
        summary["rating"] = judgement.rating
    if judgement.violated:
        summary["violated"] = judgement.violated
    if judgement.target:
        summary["target"] = True
    return summary
