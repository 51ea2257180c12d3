"""R-GCDF1: did the user request the goal's information, and only that, given the context?

The hypothesis is the multiset of `domain-slot` requests, one copy per user turn. The reference is
the goal's requests (none for a domain whose search failed), plus the booking reference the user
asks for in a domain that books, plus one copy per repetition the system explains (its NLU missed
the request, it asked something first, or it had not answered yet). Requests the system answered
before the user asked count as requested.
"""

from __future__ import annotations

from itertools import pairwise

from crsim.studies.gcdf1.behaviour import Behaviour, EventLog
from crsim.studies.gcdf1.config import RequestsConfig
from crsim.studies.gcdf1.constraints import Counts
from crsim.studies.gcdf1.dialogue import SLOT_VALUE_KINDS
from crsim.studies.gcdf1.rules import Rules
from crsim.studies.gcdf1.turns import DialogueView, TurnView

B = Behaviour


class RequestScorer:
    """Counts R-GCDF1's multisets for one dialogue; see the module docstring."""

    def __init__(
        self,
        view: DialogueView,
        rules: Rules,
        config: RequestsConfig,
        log: EventLog,
        failed_domains: set[str],
    ) -> None:
        self.view = view
        self.rules = rules
        self.config = config
        self.log = log
        self.failed = failed_domains

    def goal_requests(self, domain: str) -> list[str]:
        if domain in self.failed:
            return []
        return self.view.goal.requests.get(domain, [])

    def count(self) -> Counts:
        requested = self.view.user_requests()
        if self.config.missing_requests.system_provision:
            self._provided(requested)
        counts = Counts()
        for domain in self.view.goal.domains:
            reference, hypothesis = self._domain(domain, requested.get(domain, {}))
            counts.add(domain, list(reference), list(hypothesis))
        repeat = self.config.repetitions.count_fp
        for domain, requests in requested.items():
            if domain in self.view.goal.requests:
                continue
            hypothesis = [r for r, turns in requests.items() for _ in range(len(turns) if repeat else 1)]
            for request, turns in requests.items():
                self.log.add(B.REQUEST_DOMAIN_OUTSIDE_GOAL, domain, request, turns)
            counts.add(domain, [], list(hypothesis))
        return counts

    def _provided(self, requested: dict[str, dict[str, list[int]]]) -> None:
        """Add goal requests the system answered before the user asked them (one copy each)."""
        for domain in self.config.missing_requests.provision_domains:
            wanted = set(self.goal_requests(domain))
            if not wanted:
                continue
            first_seen: dict[str, dict[str, int]] = {}
            for turn in self.view.turns[1::2]:
                for service, acts in turn.services.items():
                    if service != domain and service != self.rules.booking:
                        continue
                    seen = first_seen.setdefault(service, {})
                    for slot in acts.slots(SLOT_VALUE_KINDS):
                        seen.setdefault(slot, turn.index)
            provided: dict[str, int] = {}
            for seen in first_seen.values():
                for slot, turn_index in seen.items():
                    if slot in wanted:
                        provided[f"{domain}-{slot}"] = turn_index
            if domain not in requested:
                if provided:
                    for request, turn_index in provided.items():
                        self.log.add(B.PROVIDED_DOMAIN_REQUESTS, domain, request, (turn_index,), True)
                    requested[domain] = {r: [t] for r, t in provided.items()}
                continue
            for request, turn_index in provided.items():
                if request not in requested[domain]:
                    self.log.add(B.PROVIDED_REQUEST, domain, request, (turn_index,), True)
                    requested[domain][request] = [turn_index]

    def _domain(self, domain: str, requests: dict[str, list[int]]) -> tuple[list[str], list[str]]:
        goal = self.goal_requests(domain)
        reference = [f"{domain}-{slot}" for slot in goal]
        if domain in self.failed and self.view.goal.requests.get(domain):
            self.log.add(B.DROPPED_REQUESTS, domain, ", ".join(self.view.goal.requests[domain]))
        hypothesis: list[str] = []
        repeat = self.config.repetitions.count_fp
        transactional = self.view.goal.transactional.get(domain, False)
        for request, turns in requests.items():
            n = len(turns)
            if n > 1:
                self.log.add(B.REPEATED_REQUEST, domain, request, turns)
            if n > self.config.repetitions_warning:
                self.log.add(B.REQUEST_REPETITION_WARNING, domain, request, turns)
            if not repeat:
                n = 1
            hypothesis += [request] * n
            if request not in reference and request in self.config.auto_add_to_ref and transactional:
                reference.append(request)
                self.log.add(B.AUTO_ADDED_REQUEST, domain, request, turns[:1], True)
            if repeat and n > 1:
                self._repetitions(domain, request, turns, reference)
        for request, turns in requests.items():
            if request not in reference:
                self.log.add(B.REQUEST_NOT_IN_GOAL, domain, request, turns, False)
        for request in dict.fromkeys(reference):
            if request not in requests:
                self.log.add(B.MISSED_REQUEST, domain, request)
        return reference, hypothesis

    def _repetitions(self, domain: str, request: str, turns: list[int], reference: list[str]) -> None:
        limit = self.config.repetitions.repeats_to_penalty
        for repetition, (first, second) in enumerate(pairwise(turns), start=1):
            between = self.view.system_turns_between(first, second)
            span = (first, second)
            if self._spurious(domain, request, between, (self.view.turns[first], self.view.turns[second])):
                self.log.add(B.REQUEST_REPEAT_SPURIOUS, domain, request, span, False)
                continue
            reasons = self._system_reasons(domain, request, between)
            excused = bool(reasons) and B.REQUEST_REPEAT_AFTER_ANSWER not in reasons and repetition <= limit
            if excused:
                reference.append(request)
            for reason in reasons:
                self.log.add(reason, domain, request, span, excused)

    def _spurious(
        self, domain: str, request: str, between: list[TurnView], users: tuple[TurnView, TurnView]
    ) -> bool:
        """A repetition across turns about other domains is likely an annotation error."""
        rules = self.rules
        if rules.ontology.is_ref(request):
            return False
        if rules.taxi is not None and domain == rules.taxi and rules.taxi in request:
            return False
        discussed = rules.span_domains(between) - {rules.booking, rules.general}
        if not discussed:
            return False
        if domain not in discussed and len(between) > 1:
            return True
        return any(rules.several_domains(u) for u in users) and len(between) > 3 and discussed != {domain}

    def _system_reasons(self, domain: str, request: str, between: list[TurnView]) -> list[Behaviour]:
        """Why the system may have caused the repetition (or that it had answered already)."""
        checks = self.config.repetitions.system_behaviour
        found: list[Behaviour] = []
        oldest = between[-1]
        if checks.validate_nlu and not self.rules.understood_request(oldest, domain, request):
            found.append(B.REQUEST_REPEAT_NLU_FAILURE)
        if checks.validate_policy:
            if any(self.rules.answered(turn, domain, request) for turn in between):
                found.append(B.REQUEST_REPEAT_AFTER_ANSWER)
            elif self.rules.requests_information(oldest, domain):
                found.append(B.REQUEST_REPEAT_USER_PREEMPTED)
            else:
                found.append(B.REQUEST_REPEAT_DELAYED_RESPONSE)
        return found
