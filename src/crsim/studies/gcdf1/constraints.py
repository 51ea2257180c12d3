"""I-GCDF1: did the user state the goal's constraints, and only those, given the context?

The hypothesis is the multiset of (canonical) constraints the user informed, one copy per user
turn stating it. The reference starts as the goal's constraints (one copy each) and grows by one
copy for each repetition or out-of-goal mention the context explains: the system asked, a booking
failed, nothing matched, the system NLU missed it, or the user was picking an option, booking,
requesting, answering or switching domains. Constraints the system stated first count as stated;
when a search ends in "nothing matches", the constraints the user never got to state leave the
reference, and the domain's requests leave R-GCDF1's reference (`failed_domains`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

from crsim.studies.gcdf1.behaviour import Behaviour, EventLog
from crsim.studies.gcdf1.config import ConstraintsConfig
from crsim.studies.gcdf1.rules import Rules
from crsim.studies.gcdf1.turns import DialogueView, Param, TurnView

B = Behaviour


def describe(param: Param) -> str:
    """`slot=value` (or just `slot`) for logs."""
    slot, value = param
    return slot if value is None else f"{slot}={value}"


def _text(param: Param) -> str:
    slot, value = param
    return slot if value is None else f"{slot}==={value}"


@dataclass
class Counts:
    """Reference and hypothesis multisets per scored domain, and pooled."""

    domains: dict[str, tuple[list[object], list[object]]] = field(default_factory=dict)
    reference: list[object] = field(default_factory=list)
    hypothesis: list[object] = field(default_factory=list)
    failed_domains: set[str] = field(default_factory=set)

    def add(self, domain: str, reference: list[object], hypothesis: list[object]) -> None:
        self.reference += reference
        self.hypothesis += hypothesis
        if reference or hypothesis:
            self.domains[domain] = (reference, hypothesis)


class ConstraintScorer:
    """Counts I-GCDF1's multisets for one dialogue; see the module docstring."""

    def __init__(self, view: DialogueView, rules: Rules, config: ConstraintsConfig, log: EventLog) -> None:
        self.view = view
        self.rules = rules
        self.config = config
        self.log = log

    def count(self) -> Counts:
        counts = Counts()
        informed = self.view.user_params()
        for domain in self.view.goal.domains:
            reference, hypothesis = self._domain(domain, informed.get(domain, {}), counts)
            counts.add(domain, list(reference), list(hypothesis))
        for domain, params in informed.items():
            if domain in self.view.goal.constraints:
                continue
            repeat = self.config.repetitions.count_fp
            hypothesis = [p for p, turns in params.items() for _ in range(len(turns) if repeat else 1)]
            for param, turns in params.items():
                self.log.add(B.CONSTRAINT_DOMAIN_OUTSIDE_GOAL, domain, describe(param), turns)
            counts.add(domain, [], list(hypothesis))
        return counts

    # -- one goal domain ----------------------------------------------------------------------

    def _domain(
        self, domain: str, informed: dict[Param, list[int]], counts: Counts
    ) -> tuple[list[Param], list[Param]]:
        goal = self.view.goal.constraints[domain]
        goal_slots = {slot for slot, _ in goal}
        reference = list(dict.fromkeys(goal))
        hypothesis: list[Param] = []
        repeat = self.config.repetitions.count_fp
        for param, turns in informed.items():
            n = len(turns)
            if n > 1:
                self.log.add(B.REPEATED_CONSTRAINT, domain, describe(param), turns)
            if n > self.config.repetitions_warning:
                self.log.add(B.REPETITION_WARNING, domain, describe(param), turns)
            if not repeat:
                n = 1
            hypothesis += [param] * n
            if param[0] not in goal_slots:
                self._outside_goal(domain, param, turns, n, reference)
            elif repeat and n > 1:
                self._repetitions(domain, param, turns, reference)
            elif n == 1 and param not in reference:
                self.log.add(B.SINGLE_WRONG_CONSTRAINT, domain, describe(param), turns[:1])
        if not hypothesis and reference:
            self.log.add(B.MISSED_DOMAIN, domain)
        missing = [p for p in dict.fromkeys(reference) if p not in set(hypothesis)]
        if missing:
            missing = self._preempted(domain, missing, hypothesis)
        self._missing(domain, informed, reference, missing, counts)
        return reference, hypothesis

    def _preempted(self, domain: str, missing: list[Param], hypothesis: list[Param]) -> list[Param]:
        """Goal constraints the system stated although the user never did count as stated."""
        spoken = self.view.system_params()
        in_domain = spoken.get(domain, {})
        in_booking = spoken.get(self.rules.booking, {})
        left: list[Param] = []
        for param in missing:
            turns = in_domain.get(param) or in_booking.get(param)
            if turns is None:
                left.append(param)
                continue
            self.log.add(
                B.PREEMPTED_CONSTRAINT, domain, describe(param), turns, self.config.compensate_preemption
            )
            if self.config.compensate_preemption:
                hypothesis.append(param)
        return left

    def _missing(
        self,
        domain: str,
        informed: dict[Param, list[int]],
        reference: list[Param],
        missing: list[Param],
        counts: Counts,
    ) -> None:
        """Log missed or wrongly valued constraints; detect a search that failed (nothing matched
        after the user's last constraint, no choice offered) and apply its compensations."""
        if not missing:
            return
        failed = False
        if informed:
            last = max(turn for turns in informed.values() for turn in turns)
            if last + 1 < len(self.view.turns):
                answer = self.view.turns[last + 1]
                failed = self.rules.no_offer(answer, domain) and not self.rules.offered_choice(answer, domain)
        settings = self.config.empty_db_result
        for param in missing:
            if failed:
                drop = settings.compensate_missed_constraints
                self.log.add(B.FAILED_DIALOGUE, domain, describe(param), (last + 1,), drop)
                if drop:
                    reference.remove(param)
                continue
            wrong = self._stated_instead(param, informed, reference)
            if wrong is None:
                self.log.add(B.MISSED_CONSTRAINT, domain, describe(param))
            else:
                self.log.add(
                    B.WRONG_VALUE, domain, f"{describe(param)} (stated {describe(wrong)})", informed[wrong]
                )
        if failed and settings.compensate_request:
            counts.failed_domains.add(domain)

    @staticmethod
    def _stated_instead(
        param: Param, informed: dict[Param, list[int]], reference: list[Param]
    ) -> Param | None:
        """A stated constraint mentioning the missing slot that the reference does not hold.

        The slot is searched in the `slot===value` text, as the reference does, so a missing day
        is also found in `leaveat===monday`.
        """
        for stated in informed:
            if param[0] in _text(stated):
                if stated in reference:
                    continue
                return stated
        return None

    # -- constraints outside the goal ----------------------------------------------------------

    def _outside_goal(
        self, domain: str, param: Param, turns: list[int], n: int, reference: list[Param]
    ) -> None:
        settings = self.config.constraints_not_in_goal
        auto = self._auto_matched(domain, param)
        if auto is not None:
            reference += [param] * min(n, settings.auto_matching.max_repetitions_matched)
            self.log.add(auto, domain, describe(param), turns, True)
            return
        slot = param[0]
        answers = 0
        for mention, turn in enumerate(turns, start=1):
            if turn == 0:
                self.log.add(B.NOT_IN_GOAL_FIRST_TURN, domain, describe(param), (turn,), False)
                continue
            reasons = self._elicited(domain, slot, self.view.system_turns_before(turn))
            if not reasons:
                self.log.add(B.NOT_IN_GOAL_UNEXPLAINED, domain, describe(param), (turn,), False)
                continue
            if slot in self.rules.ontology.entities(domain) and self._taxi_turn(self.view.turns[turn]):
                self.log.add(B.NOT_IN_GOAL_TAXI_ANNOTATION, domain, describe(param), (turn,), False)
                continue
            if B.NOT_IN_GOAL_SYSTEM_REQUEST in reasons:
                answers += 1
            only_answer = reasons == [B.NOT_IN_GOAL_SYSTEM_REQUEST]
            excused = mention <= settings.max_repetitions and not (
                only_answer and answers > settings.max_user_responses
            )
            if excused:
                reference.append(param)
            for reason in reasons:
                self.log.add(reason, domain, describe(param), (turn,), excused)
            if not self.config.repetitions.count_fp:
                break

    def _auto_matched(self, domain: str, param: Param) -> Behaviour | None:
        rules = self.config.constraints_not_in_goal.auto_matching
        slot, value = param
        if value in rules.vals:
            return B.NOT_IN_GOAL_AUTO_VALUE
        if slot in rules.slots.get(domain, ()):
            return B.NOT_IN_GOAL_AUTO_SLOT
        if value in rules.slot_value_pairs.get(domain, {}).get(slot, ()):
            return B.NOT_IN_GOAL_AUTO_PAIR
        return None

    def _elicited(self, domain: str, slot: str, before: list[TurnView]) -> list[Behaviour]:
        """System behaviours that make stating `slot` (outside the goal) legitimate."""
        checks = self.config.constraints_not_in_goal.sys_checks
        recent = before[: checks.sys_context_size]
        rules = self.rules
        found: list[Behaviour] = []
        if checks.requests and rules.requested_slot(before[0], domain, slot):
            found.append(B.NOT_IN_GOAL_SYSTEM_REQUEST)
        if checks.offers and rules.offered_slot(recent, domain, slot):
            found.append(B.NOT_IN_GOAL_SYSTEM_OFFER)
        if checks.booking_failure_response and rules.booking_failure_for_entity(recent, domain, slot):
            found.append(B.NOT_IN_GOAL_BOOKING_FAILURE)
        if checks.booking_request_response and rules.booking_offer_for_entity(before[:1], domain, slot):
            found.append(B.NOT_IN_GOAL_BOOKING_OFFER)
        if checks.recommendations and rules.recommended_entity(before, domain, slot):
            found.append(B.NOT_IN_GOAL_RECOMMENDATION)
        return found

    def _taxi_turn(self, turn: TurnView) -> bool:
        taxi = self.rules.taxi
        return taxi is not None and (self.rules.taxi_active(turn) or taxi in turn.utterance)

    # -- repeated goal constraints ------------------------------------------------------------

    def _repetitions(self, domain: str, param: Param, turns: list[int], reference: list[Param]) -> None:
        limit = self.config.repetitions.max_repetitions
        for repetition, (first, second) in enumerate(pairwise(turns), start=1):
            between = self.view.system_turns_between(first, second)
            span = (first, second)
            reasons, refuted = self._system_reasons(domain, param, between)
            for check in refuted:
                self.log.add(check, domain, describe(param), span, False)
            if not reasons:
                reasons = self._user_reasons(domain, self.view.turns[second], between)
            if not reasons:
                self.log.add(B.REPEAT_UNEXPLAINED, domain, describe(param), span, False)
                continue
            excused = repetition <= limit
            if excused:
                reference.append(param)
            for reason in reasons:
                self.log.add(reason, domain, describe(param), span, excused)

    def _system_reasons(
        self, domain: str, param: Param, between: list[TurnView]
    ) -> tuple[list[Behaviour], list[Behaviour]]:
        """System behaviours explaining a repetition, and failure notices a newer turn refutes."""
        checks = self.config.repetitions.sys_behaviours
        rules = self.rules
        found: list[Behaviour] = []
        refuted: list[Behaviour] = []
        if checks.requests and rules.requested_slot(between[0], domain, param[0]):
            found.append(B.REPEAT_SYSTEM_REQUEST)
        notices = []
        if checks.booking_failure_response:
            notices.append((rules.booking_failed, B.REPEAT_BOOKING_FAILURE, B.REPEAT_BOOKING_CHECK_FAILED))
        if checks.no_offers:
            notices.append((rules.no_offer, B.REPEAT_NO_OFFER, B.REPEAT_NO_OFFER_CHECK_FAILED))
        settled: int | None = None  # the most recent turn with a booking or an offer (0 = latest)
        looked = False
        for notice, reason, check in notices:
            noticed = next((i for i, turn in enumerate(between) if notice(turn, domain)), None)
            if noticed is None:
                continue
            if not looked:
                settled, looked = self._latest_offer(domain, between), True
            if settled is None or noticed <= settled:
                found.append(reason)  # the failure is at least as recent as any success
            else:
                refuted.append(check)
        understood = (param in self.view.nlu_params(turn, domain) for turn in between)
        if checks.nlu and self.view.system_nlu and not any(understood):
            found.append(B.REPEAT_NLU_FAILURE)
        return found, refuted

    def _latest_offer(self, domain: str, between: list[TurnView]) -> int | None:
        """Index (most recent first) of the latest turn confirming a booking or offering one/an entity."""
        rules = self.rules
        for index, turn in enumerate(between):
            if rules.confirms_booking(turn, domain) or rules.offers_entity_or_booking(turn, domain):
                return index
        return None

    def _user_reasons(self, domain: str, user: TurnView, between: list[TurnView]) -> list[Behaviour]:
        """User behaviours explaining a repetition (`between[0]` is the system turn just before)."""
        checks = self.config.repetitions.user_behaviours
        rules = self.rules
        found: list[Behaviour] = []
        if checks.offer_checks and rules.offered_choice(between[0], domain):
            found.append(B.REPEAT_CONFIRMED_CHOICE)
        if checks.repeats_while_requesting_info and rules.requests_information(user, domain):
            found.append(B.REPEAT_REQUESTING_INFO)
        if checks.repeats_while_booking and rules.offers_entity_or_booking(between[0], domain):
            found.append(B.REPEAT_WHILE_BOOKING)
        if checks.repeats_when_answering_request and rules.requests_information(between[0], domain):
            found.append(B.REPEAT_ANSWERING_REQUEST)
        if checks.proposes_multiple_domains and rules.switched_domain(user, between, domain):
            found.append(B.REPEAT_DOMAIN_SWITCH)
        return found
