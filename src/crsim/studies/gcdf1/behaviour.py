"""The behaviour log: what happened in each dialogue that shaped its GCDF1 scores.

Every rule that fires leaves an `Event`: which behaviour, in which domain, about which constraint
(`slot=value`) or request (`domain-slot`), at which turns (0-based positions in the dialogue: user
turns are even, system turns odd), and whether it added a reference copy (`compensated`). The log
is written beside the scores and queried with `crsim gcdf1 query`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from crsim.core.errors import DataError

LOG_FORMAT = "crsim.studies.gcdf1.behaviour/1"


class Behaviour(StrEnum):
    # constraints (I-GCDF1)
    REPEATED_CONSTRAINT = "repeated_constraint"
    REPETITION_WARNING = "repetition_warning"
    REPEAT_SYSTEM_REQUEST = "repeat_system_request"
    REPEAT_BOOKING_FAILURE = "repeat_booking_failure"
    REPEAT_NO_OFFER = "repeat_no_offer"
    REPEAT_NLU_FAILURE = "repeat_nlu_failure"
    REPEAT_CONFIRMED_CHOICE = "repeat_confirmed_choice"
    REPEAT_REQUESTING_INFO = "repeat_requesting_info"
    REPEAT_WHILE_BOOKING = "repeat_while_booking"
    REPEAT_ANSWERING_REQUEST = "repeat_answering_request"
    REPEAT_DOMAIN_SWITCH = "repeat_domain_switch"
    REPEAT_UNEXPLAINED = "repeat_unexplained"
    REPEAT_BOOKING_CHECK_FAILED = "repeat_booking_check_failed"
    REPEAT_NO_OFFER_CHECK_FAILED = "repeat_no_offer_check_failed"
    NOT_IN_GOAL_AUTO_VALUE = "not_in_goal_auto_value"
    NOT_IN_GOAL_AUTO_SLOT = "not_in_goal_auto_slot"
    NOT_IN_GOAL_AUTO_PAIR = "not_in_goal_auto_pair"
    NOT_IN_GOAL_FIRST_TURN = "not_in_goal_first_turn"
    NOT_IN_GOAL_SYSTEM_REQUEST = "not_in_goal_system_request"
    NOT_IN_GOAL_SYSTEM_OFFER = "not_in_goal_system_offer"
    NOT_IN_GOAL_BOOKING_FAILURE = "not_in_goal_booking_failure"
    NOT_IN_GOAL_BOOKING_OFFER = "not_in_goal_booking_offer"
    NOT_IN_GOAL_RECOMMENDATION = "not_in_goal_recommendation"
    NOT_IN_GOAL_UNEXPLAINED = "not_in_goal_unexplained"
    NOT_IN_GOAL_TAXI_ANNOTATION = "not_in_goal_taxi_annotation"
    SINGLE_WRONG_CONSTRAINT = "single_wrong_constraint"
    PREEMPTED_CONSTRAINT = "preempted_constraint"
    MISSED_CONSTRAINT = "missed_constraint"
    WRONG_VALUE = "wrong_value"
    FAILED_DIALOGUE = "failed_dialogue"
    MISSED_DOMAIN = "missed_domain"
    CONSTRAINT_DOMAIN_OUTSIDE_GOAL = "constraint_domain_outside_goal"
    # requests (R-GCDF1)
    REPEATED_REQUEST = "repeated_request"
    REQUEST_REPETITION_WARNING = "request_repetition_warning"
    REQUEST_REPEAT_NLU_FAILURE = "request_repeat_nlu_failure"
    REQUEST_REPEAT_USER_PREEMPTED = "request_repeat_user_preempted"
    REQUEST_REPEAT_DELAYED_RESPONSE = "request_repeat_delayed_response"
    REQUEST_REPEAT_AFTER_ANSWER = "request_repeat_after_answer"
    REQUEST_REPEAT_SPURIOUS = "request_repeat_spurious"
    PROVIDED_REQUEST = "provided_request"
    PROVIDED_DOMAIN_REQUESTS = "provided_domain_requests"
    AUTO_ADDED_REQUEST = "auto_added_request"
    REQUEST_NOT_IN_GOAL = "request_not_in_goal"
    REQUEST_DOMAIN_OUTSIDE_GOAL = "request_domain_outside_goal"
    MISSED_REQUEST = "missed_request"
    DROPPED_REQUESTS = "dropped_requests"


#: behaviour -> (metric, what it means)
DESCRIPTIONS: dict[Behaviour, tuple[str, str]] = {
    Behaviour.REPEATED_CONSTRAINT: ("I-GCDF1", "a constraint stated in more than one user turn"),
    Behaviour.REPETITION_WARNING: ("I-GCDF1", "a constraint stated more often than repetitions_warning"),
    Behaviour.REPEAT_SYSTEM_REQUEST: ("I-GCDF1", "repeated because the system asked for the slot"),
    Behaviour.REPEAT_BOOKING_FAILURE: ("I-GCDF1", "repeated after the system reported a failed booking"),
    Behaviour.REPEAT_NO_OFFER: ("I-GCDF1", "repeated after the system found nothing that matches"),
    Behaviour.REPEAT_NLU_FAILURE: ("I-GCDF1", "repeated because the system NLU had not understood it"),
    Behaviour.REPEAT_CONFIRMED_CHOICE: ("I-GCDF1", "repeated to choose among options the system counted"),
    Behaviour.REPEAT_REQUESTING_INFO: ("I-GCDF1", "repeated while asking for information"),
    Behaviour.REPEAT_WHILE_BOOKING: ("I-GCDF1", "repeated while an entity or a booking was being discussed"),
    Behaviour.REPEAT_ANSWERING_REQUEST: ("I-GCDF1", "repeated while answering a system question"),
    Behaviour.REPEAT_DOMAIN_SWITCH: ("I-GCDF1", "repeated after the system dealt with another domain"),
    Behaviour.REPEAT_UNEXPLAINED: ("I-GCDF1", "a repetition no behaviour explains (false positive)"),
    Behaviour.REPEAT_BOOKING_CHECK_FAILED: (
        "I-GCDF1",
        "a booking failure came after a newer success or offer, so it does not excuse the repetition",
    ),
    Behaviour.REPEAT_NO_OFFER_CHECK_FAILED: (
        "I-GCDF1",
        "a no-offer came after a newer offer or booking, so it does not excuse the repetition",
    ),
    Behaviour.NOT_IN_GOAL_AUTO_VALUE: (
        "I-GCDF1",
        "slot outside the goal with a value always accepted (dontcare)",
    ),
    Behaviour.NOT_IN_GOAL_AUTO_SLOT: (
        "I-GCDF1",
        "slot outside the goal that is always accepted (taxi places)",
    ),
    Behaviour.NOT_IN_GOAL_AUTO_PAIR: ("I-GCDF1", "slot-value pair outside the goal listed as accepted"),
    Behaviour.NOT_IN_GOAL_FIRST_TURN: (
        "I-GCDF1",
        "slot outside the goal in the first user turn (false positive)",
    ),
    Behaviour.NOT_IN_GOAL_SYSTEM_REQUEST: ("I-GCDF1", "slot outside the goal the system had asked for"),
    Behaviour.NOT_IN_GOAL_SYSTEM_OFFER: ("I-GCDF1", "slot outside the goal the system had just offered"),
    Behaviour.NOT_IN_GOAL_BOOKING_FAILURE: ("I-GCDF1", "another entity chosen after a failed booking"),
    Behaviour.NOT_IN_GOAL_BOOKING_OFFER: ("I-GCDF1", "entity named when answering a booking offer"),
    Behaviour.NOT_IN_GOAL_RECOMMENDATION: ("I-GCDF1", "entity named after a system recommendation"),
    Behaviour.NOT_IN_GOAL_UNEXPLAINED: ("I-GCDF1", "slot outside the goal nothing elicited (false positive)"),
    Behaviour.NOT_IN_GOAL_TAXI_ANNOTATION: ("I-GCDF1", "entity slot in a taxi turn: likely annotation error"),
    Behaviour.SINGLE_WRONG_CONSTRAINT: ("I-GCDF1", "a goal slot stated once with a value not in the goal"),
    Behaviour.PREEMPTED_CONSTRAINT: ("I-GCDF1", "a goal constraint the user never stated but the system did"),
    Behaviour.MISSED_CONSTRAINT: ("I-GCDF1", "a goal constraint never stated"),
    Behaviour.WRONG_VALUE: ("I-GCDF1", "a goal constraint whose slot was stated with another value"),
    Behaviour.FAILED_DIALOGUE: (
        "I-GCDF1",
        "nothing matched after the last constraint: missing constraints leave the reference",
    ),
    Behaviour.MISSED_DOMAIN: ("I-GCDF1", "a goal domain in which the user stated no constraint"),
    Behaviour.CONSTRAINT_DOMAIN_OUTSIDE_GOAL: ("I-GCDF1", "constraints stated in a domain not in the goal"),
    Behaviour.REPEATED_REQUEST: ("R-GCDF1", "a slot requested in more than one user turn"),
    Behaviour.REQUEST_REPETITION_WARNING: ("R-GCDF1", "a slot requested more often than repetitions_warning"),
    Behaviour.REQUEST_REPEAT_NLU_FAILURE: ("R-GCDF1", "requested again: the system NLU missed the request"),
    Behaviour.REQUEST_REPEAT_USER_PREEMPTED: (
        "R-GCDF1",
        "requested before the system could answer (it asked something first), then again",
    ),
    Behaviour.REQUEST_REPEAT_DELAYED_RESPONSE: (
        "R-GCDF1",
        "requested again: the system had not answered yet",
    ),
    Behaviour.REQUEST_REPEAT_AFTER_ANSWER: ("R-GCDF1", "requested again after an answer (false positive)"),
    Behaviour.REQUEST_REPEAT_SPURIOUS: ("R-GCDF1", "repetition that is likely an annotation error (ignored)"),
    Behaviour.PROVIDED_REQUEST: ("R-GCDF1", "a goal request the system answered before the user asked"),
    Behaviour.PROVIDED_DOMAIN_REQUESTS: (
        "R-GCDF1",
        "the user requested nothing in the domain; the system gave goal requests unasked",
    ),
    Behaviour.AUTO_ADDED_REQUEST: ("R-GCDF1", "a booking reference request added to the reference"),
    Behaviour.REQUEST_NOT_IN_GOAL: ("R-GCDF1", "a requested slot the reference does not hold"),
    Behaviour.REQUEST_DOMAIN_OUTSIDE_GOAL: ("R-GCDF1", "requests in a domain not in the goal"),
    Behaviour.MISSED_REQUEST: ("R-GCDF1", "a goal request neither requested nor provided"),
    Behaviour.DROPPED_REQUESTS: ("R-GCDF1", "goal requests removed because the domain's search failed"),
}


@dataclass(frozen=True, slots=True)
class Event:
    behaviour: str
    domain: str | None = None
    item: str | None = None
    turns: tuple[int, ...] = ()
    compensated: bool | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"behaviour": self.behaviour}
        if self.domain is not None:
            out["domain"] = self.domain
        if self.item is not None:
            out["item"] = self.item
        if self.turns:
            out["turns"] = list(self.turns)
        if self.compensated is not None:
            out["compensated"] = self.compensated
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Event:
        return cls(
            behaviour=str(raw["behaviour"]),
            domain=raw.get("domain"),
            item=raw.get("item"),
            turns=tuple(raw.get("turns", ())),
            compensated=raw.get("compensated"),
        )


class EventLog(list[Event]):
    """The events of one dialogue, in the order the rules fired."""

    def add(
        self,
        behaviour: Behaviour,
        domain: str | None = None,
        item: str | None = None,
        turns: Iterable[int] = (),
        compensated: bool | None = None,
    ) -> None:
        self.append(Event(behaviour.value, domain, item, tuple(turns), compensated))


@dataclass
class BehaviourFile:
    """A saved log: events per dialogue and the dialogues that could not be scored."""

    dialogues: dict[str, list[Event]]
    errors: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": LOG_FORMAT,
            "dialogues": {d: [e.to_json() for e in events] for d, events in self.dialogues.items()},
            "errors": self.errors,
        }

    @classmethod
    def read(cls, path: str | Path) -> BehaviourFile:
        source = Path(path)
        try:
            raw = json.loads(source.read_text(encoding="utf-8"))
        except OSError as exc:
            raise DataError(
                f"cannot read the behaviour log ({exc.strerror or exc})", path=str(source)
            ) from None
        except ValueError as exc:
            raise DataError(f"not valid JSON ({exc})", path=str(source)) from None
        if not isinstance(raw, dict) or raw.get("format") != LOG_FORMAT:
            raise DataError(f"not a GCDF1 behaviour log (expected format {LOG_FORMAT!r})", path=str(source))
        try:
            dialogues = {d: [Event.from_json(e) for e in events] for d, events in raw["dialogues"].items()}
        except (KeyError, TypeError, AttributeError) as exc:
            raise DataError(f"malformed event ({exc})", path=str(source), field="dialogues") from None
        return cls(dialogues=dialogues, errors=dict(raw.get("errors", {})))

    def query(self, behaviour: str, domain: str | None = None) -> list[tuple[str, int]]:
        """Dialogues with `behaviour` (in `domain`, if given) and how often, most frequent first."""
        counts: Counter[str] = Counter()
        for dialogue_id, events in self.dialogues.items():
            for event in events:
                if event.behaviour == behaviour and (domain is None or event.domain == domain):
                    counts[dialogue_id] += 1
        return sorted(counts.items(), key=lambda pair: (-pair[1], pair[0]))

    def totals(self) -> Counter[str]:
        """How many events of each behaviour the log holds."""
        return Counter(e.behaviour for events in self.dialogues.values() for e in events)
