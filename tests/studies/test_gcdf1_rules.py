"""Each behaviour rule and each switch of the GCDF1 configuration, on small hand-made dialogues.

Every scenario is scored twice, with the switch as in the published configuration and flipped,
and both results are checked: a switch turned off must change the score the way it says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from crsim.studies.gcdf1 import CanonicalMap, Gcdf1Scorer, parse_sgd_dialogue
from crsim.studies.gcdf1.config import Gcdf1Config, parse_config
from crsim.studies.gcdf1.scoring import DialogueScores

AUTO = object()  # the system NLU understood the previous user turn's informs


def A(act: str, slot: str = "", *values: str) -> dict[str, Any]:
    """An action; its service is the act's domain prefix (`Restaurant-Inform` -> restaurant)."""
    return {"act": act, "slot": slot, "values": list(values)}


def U(*acts: dict[str, Any], req: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"speaker": "USER", "acts": acts, "req": req}


def S(*acts: dict[str, Any], nlu: Any = AUTO) -> dict[str, Any]:
    return {"speaker": "SYSTEM", "acts": acts, "nlu": nlu}


def _frames(acts: Any, requested: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    frames: dict[str, dict[str, Any]] = {}
    for action in acts:
        service = action["act"].split("-")[0].lower()
        frames.setdefault(service, {"service": service, "actions": []})["actions"].append(action)
    for slot in requested:
        frame = frames.setdefault(slot.split("-")[0], {"service": slot.split("-")[0], "actions": []})
        frame.setdefault("state", {"requested_slots": []})["requested_slots"].append(slot)
    return list(frames.values())


def build(goal: dict[str, Any], *turns: dict[str, Any]) -> dict[str, Any]:
    raw_turns = []
    for index, turn in enumerate(turns):
        raw: dict[str, Any] = {"speaker": turn["speaker"], "turn_id": str(index), "utterance": ""}
        if turn["speaker"] == "USER":
            raw["frames"] = _frames(turn["acts"], turn["req"])
        else:
            raw["frames"] = _frames(turn["acts"])
            nlu = turn["nlu"]
            if nlu is AUTO:
                nlu = [a for a in turns[index - 1]["acts"] if "Inform" in a["act"]]
            if nlu is not None:
                raw["nlu"] = {"frames": _frames(nlu)}
        raw_turns.append(raw)
    return {"dialogue_id": "test", "goal": goal, "turns": raw_turns}


def config(overrides: dict[str, Any]) -> Gcdf1Config:
    raw: dict[str, Any] = {}
    for key, value in overrides.items():
        node = raw
        *path, last = key.split(".")
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return parse_config(raw)


@lru_cache(maxsize=1)
def canonical_map() -> CanonicalMap:
    return CanonicalMap.load(
        Path(__file__).parents[1] / "fixtures" / "gcdf1" / "multiwoz21_canonical_map.json.gz"
    )


def score(raw: dict[str, Any], overrides: dict[str, Any]) -> DialogueScores:
    return Gcdf1Scorer(config(overrides), canonical_map()).score(parse_sgd_dialogue(raw))


def summary(scores: DialogueScores) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for prefix, table in (("I", scores.inform), ("R", scores.request)):
        combined = table.get("combined")
        for letter, attr in (("P", "precision"), ("R", "recall"), ("F", "f1")):
            out[prefix + letter] = None if combined is None else round(getattr(combined, attr), 6)
    return out


@dataclass
class Case:
    name: str
    dialogue: dict[str, Any]
    switch: dict[str, Any]  #: the flipped setting(s)
    on: dict[str, float | None]  #: expected with the published configuration
    off: dict[str, float | None]  #: expected with `switch` applied
    base: dict[str, Any] = field(default_factory=dict)  #: settings for both runs (isolate the rule)
    behaviour: str | None = None  #: logged with the published configuration only


NO_MAP = {"igcd_f1.value_matching.use_canonical_map": False}
FOOD = {"restaurant": {"info": {"food": "indian"}}}
POLICY_ONLY = {"rgcd_f1.repetitions.system_behaviour.validate_nlu": False}
INDIAN = A("Restaurant-Inform", "food", "indian")
NAME = A("Restaurant-Inform", "name", "golden house")
BYE = A("general-bye")
QUIET = {  # user behaviours off, to isolate the system behaviours
    "igcd_f1.repetitions.user_behaviours.offer_checks": False,
    "igcd_f1.repetitions.user_behaviours.repeats_while_requesting_info": False,
    "igcd_f1.repetitions.user_behaviours.repeats_while_booking": False,
    "igcd_f1.repetitions.user_behaviours.repeats_when_answering_request": False,
    "igcd_f1.repetitions.user_behaviours.proposes_multiple_domains": False,
}
REPEAT_OK = {"IP": 1.0, "IR": 1.0}
REPEAT_FP = {"IP": 0.5, "IR": 1.0}  # one copy of the goal constraint, stated twice

CASES = [
    # -- repeated goal constraints: system behaviours
    Case(
        "no_offer",
        build(FOOD, U(INDIAN), S(A("Restaurant-NoOffer", "food", "indian")), U(INDIAN)),
        {"igcd_f1.repetitions.sys_behaviours.no_offers": False},
        REPEAT_OK,
        REPEAT_FP,
        NO_MAP,
        "repeat_no_offer",
    ),
    Case(
        "system_request",
        build(FOOD, U(INDIAN), S(A("Restaurant-Request", "food")), U(INDIAN)),
        {"igcd_f1.repetitions.sys_behaviours.requests": False},
        REPEAT_OK,
        REPEAT_FP,
        {**NO_MAP, **QUIET},
        "repeat_system_request",
    ),
    Case(
        "booking_failure",
        build(FOOD, U(INDIAN), S(A("Booking-NoBook")), U(INDIAN)),
        {"igcd_f1.repetitions.sys_behaviours.booking_failure_response": False},
        REPEAT_OK,
        REPEAT_FP,
        NO_MAP,
        "repeat_booking_failure",
    ),
    Case(
        "nlu_failure",
        build(FOOD, U(INDIAN), S(nlu=[]), U(INDIAN)),
        {"igcd_f1.repetitions.sys_behaviours.nlu": False},
        REPEAT_OK,
        REPEAT_FP,
        NO_MAP,
        "repeat_nlu_failure",
    ),
    # -- repeated goal constraints: user behaviours
    Case(
        "confirmed_choice",
        build(FOOD, U(INDIAN), S(A("Restaurant-Inform", "choice", "3")), U(INDIAN)),
        {"igcd_f1.repetitions.user_behaviours.offer_checks": False},
        REPEAT_OK,
        REPEAT_FP,
        NO_MAP,
        "repeat_confirmed_choice",
    ),
    Case(
        "requesting_info",
        build(FOOD, U(INDIAN), S(), U(INDIAN, A("Restaurant-Request", "phone"))),
        {"igcd_f1.repetitions.user_behaviours.repeats_while_requesting_info": False},
        REPEAT_OK,
        REPEAT_FP,
        NO_MAP,
        "repeat_requesting_info",
    ),
    Case(
        "while_booking",
        build(FOOD, U(INDIAN), S(A("Restaurant-Recommend", "name", "golden house")), U(INDIAN)),
        {"igcd_f1.repetitions.user_behaviours.repeats_while_booking": False},
        REPEAT_OK,
        REPEAT_FP,
        NO_MAP,
        "repeat_while_booking",
    ),
    Case(
        "answering_request",
        build(FOOD, U(INDIAN), S(A("Restaurant-Request", "area")), U(INDIAN)),
        {"igcd_f1.repetitions.user_behaviours.repeats_when_answering_request": False},
        REPEAT_OK,
        REPEAT_FP,
        NO_MAP,
        "repeat_answering_request",
    ),
    Case(
        "domain_switch",
        build(FOOD, U(INDIAN), S(A("Hotel-Inform", "area", "north")), U(INDIAN)),
        {"igcd_f1.repetitions.user_behaviours.proposes_multiple_domains": False},
        REPEAT_OK,
        REPEAT_FP,
        NO_MAP,
        "repeat_domain_switch",
    ),
    Case(
        "count_fp",
        build(FOOD, U(INDIAN), S(), U(INDIAN)),
        {"igcd_f1.repetitions.count_fp": False},
        REPEAT_FP,
        REPEAT_OK,
        NO_MAP,
        "repeat_unexplained",
    ),
    Case(
        "max_repetitions",
        build(FOOD, U(INDIAN), S(A("Restaurant-NoOffer")), U(INDIAN), S(A("Restaurant-NoOffer")), U(INDIAN)),
        {"igcd_f1.repetitions.max_repetitions": 1},
        REPEAT_OK,
        {"IP": 2 / 3, "IR": 1.0},
        NO_MAP,
    ),
    # -- constraints outside the goal
    Case(
        "nig_offer",
        build(FOOD, U(INDIAN), S(NAME), U(NAME)),
        {"igcd_f1.constraints_not_in_goal.sys_checks.offers": False},
        {"IP": 1.0},
        {"IP": 0.5},
        NO_MAP,
        "not_in_goal_system_offer",
    ),
    Case(
        "nig_question",
        build(
            FOOD,
            U(INDIAN),
            S(A("Restaurant-Request", "pricerange")),
            U(A("Restaurant-Inform", "pricerange", "cheap")),
        ),
        {"igcd_f1.constraints_not_in_goal.sys_checks.requests": True},
        {"IP": 0.5},
        {"IP": 1.0},
        NO_MAP,
        "not_in_goal_unexplained",
    ),
    Case(
        "nig_max_user_responses",
        build(
            FOOD,
            U(INDIAN),
            S(A("Restaurant-Request", "pricerange")),
            U(A("Restaurant-Inform", "pricerange", "cheap")),
        ),
        {"igcd_f1.constraints_not_in_goal.max_user_responses": 0},
        {"IP": 1.0},
        {"IP": 0.5},
        {**NO_MAP, "igcd_f1.constraints_not_in_goal.sys_checks.requests": True},
        "not_in_goal_system_request",
    ),
    Case(
        "nig_booking_failure",
        build(FOOD, U(INDIAN), S(A("Booking-NoBook")), U(NAME)),
        {"igcd_f1.constraints_not_in_goal.sys_checks.booking_failure_response": False},
        {"IP": 1.0},
        {"IP": 0.5},
        NO_MAP,
        "not_in_goal_booking_failure",
    ),
    Case(
        "nig_booking_offer",
        build(FOOD, U(INDIAN), S(A("Booking-Inform")), U(NAME)),
        {"igcd_f1.constraints_not_in_goal.sys_checks.booking_request_response": False},
        {"IP": 1.0},
        {"IP": 0.5},
        NO_MAP,
        "not_in_goal_booking_offer",
    ),
    Case(
        "nig_recommendation",
        build(
            FOOD,
            U(INDIAN),
            S(A("Restaurant-Recommend", "area", "centre")),
            U(BYE),
            S(BYE),
            U(BYE),
            S(BYE),
            U(NAME),
        ),
        {"igcd_f1.constraints_not_in_goal.sys_checks.recommendations": False},
        {"IP": 1.0},
        {"IP": 0.5},
        NO_MAP,
        "not_in_goal_recommendation",
    ),
    Case(
        "nig_context_size",
        build(FOOD, U(INDIAN), S(NAME), U(BYE), S(BYE), U(NAME)),
        {"igcd_f1.constraints_not_in_goal.sys_checks.sys_context_size": 1},
        {"IP": 1.0},
        {"IP": 0.5},
        NO_MAP,
    ),
    Case(
        "nig_max_repetitions",
        build(FOOD, U(INDIAN), S(NAME), U(NAME), S(NAME), U(NAME)),
        {"igcd_f1.constraints_not_in_goal.max_repetitions": 1},
        {"IP": 1.0},
        {"IP": 2 / 3},
        NO_MAP,
    ),
    Case(
        "nig_first_turn",
        build(FOOD, U(INDIAN, NAME)),
        {"igcd_f1.constraints_not_in_goal.max_repetitions": 6},
        {"IP": 0.5},
        {"IP": 0.5},
        NO_MAP,
        "not_in_goal_first_turn",
    ),
    Case(
        "auto_value",
        build(FOOD, U(INDIAN, A("Restaurant-Inform", "pricerange", "dontcare"))),
        {"igcd_f1.constraints_not_in_goal.auto_matching.vals": []},
        {"IP": 1.0},
        {"IP": 0.5},
        NO_MAP,
        "not_in_goal_auto_value",
    ),
    Case(
        "auto_slot",
        build(
            {"taxi": {"info": {"leaveAt": "10:00"}}},
            U(A("Taxi-Inform", "leaveAt", "10:00"), A("Taxi-Inform", "departure", "museum")),
        ),
        {"igcd_f1.constraints_not_in_goal.auto_matching.slots": {}},
        {"IP": 1.0},
        {"IP": 0.5},
        NO_MAP,
        "not_in_goal_auto_slot",
    ),
    Case(
        "auto_pair",
        build(FOOD, U(INDIAN, A("Restaurant-Inform", "pricerange", "cheap"))),
        {"igcd_f1.constraints_not_in_goal.auto_matching.slot_value_pairs": {}},
        {"IP": 1.0},
        {"IP": 0.5},
        {
            **NO_MAP,
            "igcd_f1.constraints_not_in_goal.auto_matching.slot_value_pairs": {
                "restaurant": {"pricerange": ["cheap"]}
            },
        },
    ),
    Case(
        "auto_max_matched",
        build(
            FOOD,
            U(INDIAN, A("Restaurant-Inform", "area", "dontcare")),
            S(BYE),
            U(A("Restaurant-Inform", "area", "dontcare")),
        ),
        {"igcd_f1.constraints_not_in_goal.auto_matching.max_repetions_matched": 1},
        {"IP": 1.0},
        {"IP": 2 / 3},
        NO_MAP,
    ),
    # -- missing constraints
    Case(
        "preemption",
        build(
            {"restaurant": {"info": {"food": "indian", "area": "centre"}}},
            U(INDIAN),
            S(A("Restaurant-Inform", "area", "centre")),
        ),
        {"igcd_f1.compensate_preemption": False},
        {"IR": 1.0},
        {"IR": 0.5},
        NO_MAP,
        "preempted_constraint",
    ),
    Case(
        "failed_constraints",
        build(
            {"restaurant": {"info": {"food": "indian", "area": "centre"}}},
            U(INDIAN),
            S(A("Restaurant-NoOffer", "food", "indian")),
        ),
        {"igcd_f1.empty_db_result.compensate_missed_constraints": False},
        {"IR": 1.0},
        {"IR": 0.5},
        NO_MAP,
        "failed_dialogue",
    ),
    Case(
        "failed_requests",
        build(
            {"restaurant": {"info": {"food": "indian", "area": "centre"}, "reqt": {"phone": "?"}}},
            U(INDIAN),
            S(A("Restaurant-NoOffer", "food", "indian")),
        ),
        {"igcd_f1.empty_db_result.compensate_request": False},
        {"RF": None},
        {"RP": 1.0, "RR": 0.0},
        NO_MAP,
        "dropped_requests",
    ),
    Case(
        "no_failure_with_choice",
        build(
            {"restaurant": {"info": {"food": "indian", "area": "centre"}}},
            U(INDIAN),
            S(A("Restaurant-NoOffer", "food", "indian"), A("Restaurant-Inform", "choice", "2")),
        ),
        {"igcd_f1.empty_db_result.compensate_missed_constraints": False},
        {"IR": 0.5},
        {"IR": 0.5},
        NO_MAP,
        "missed_constraint",
    ),
    # -- value matching
    Case(
        "fuzzy",
        build(
            {"restaurant": {"info": {"name": "golden house"}}},
            U(A("Restaurant-Inform", "name", "golden hous")),
        ),
        {"igcd_f1.value_matching.use_fuzzy_match": False},
        {"IF": 1.0},
        {"IF": 0.0},
        NO_MAP,
    ),
    Case(
        "threshold",
        build(
            {"restaurant": {"info": {"name": "golden house"}}},
            U(A("Restaurant-Inform", "name", "golden hous")),
        ),
        {"igcd_f1.value_matching.fuzzy_match_threshold": 0.99},
        {"IF": 1.0},
        {"IF": 0.0},
        NO_MAP,
    ),
    Case(
        "canonical_map",
        build({"restaurant": {"info": {"area": "centre"}}}, U(A("Restaurant-Inform", "area", "center"))),
        {"igcd_f1.value_matching.use_canonical_map": False},
        {"IF": 1.0},
        {"IF": 0.0},
    ),
    Case(
        "merge_values",
        build(FOOD, U(A("Restaurant-Inform", "food", "indian", "chinese"))),
        {"igcd_f1.multiple_values_for_slot_in_turn.merge": True},
        {"IP": 0.5, "IR": 1.0},
        {"IP": 0.0, "IR": 0.0},
        NO_MAP,
        "single_wrong_constraint",
    ),
    Case(
        "lowercase",
        build(FOOD, U(A("Restaurant-Inform", "food", "Indian"))),
        {"use_lowercase": False},
        {"IF": 1.0},
        {"IF": 0.0},
        {"igcd_f1.value_matching.use_fuzzy_match": False},
    ),
    # -- requests
    Case(
        "request_nlu",
        build(
            {"restaurant": {"info": {"food": "indian"}, "reqt": {"phone": "?"}}},
            U(INDIAN, req=("restaurant-phone",)),
            S(BYE, nlu=[]),
            U(req=("restaurant-phone",)),
        ),
        {"rgcd_f1.repetitions.system_behaviour.validate_nlu": False},
        {"RP": 1.0},
        {"RP": 0.5},
        {"rgcd_f1.repetitions.system_behaviour.validate_policy": False},
        "request_repeat_nlu_failure",
    ),
    Case(
        "request_delayed",
        build(
            {"restaurant": {"info": {"food": "indian"}, "reqt": {"phone": "?"}}},
            U(INDIAN, req=("restaurant-phone",)),
            S(BYE),
            U(req=("restaurant-phone",)),
        ),
        {"rgcd_f1.repetitions.system_behaviour.validate_policy": False},
        {"RP": 1.0},
        {"RP": 0.5},
        POLICY_ONLY,
        "request_repeat_delayed_response",
    ),
    Case(
        "request_preempted",
        build(
            {"restaurant": {"info": {"food": "indian"}, "reqt": {"phone": "?"}}},
            U(INDIAN, req=("restaurant-phone",)),
            S(A("Restaurant-Request", "area")),
            U(req=("restaurant-phone",)),
        ),
        {"rgcd_f1.repetitions.system_behaviour.validate_policy": False},
        {"RP": 1.0},
        {"RP": 0.5},
        POLICY_ONLY,
        "request_repeat_user_preempted",
    ),
    Case(
        "request_after_answer",
        build(
            {"restaurant": {"info": {"food": "indian"}, "reqt": {"phone": "?"}}},
            U(INDIAN, req=("restaurant-phone",)),
            S(A("Restaurant-Inform", "phone", "0123")),
            U(req=("restaurant-phone",)),
        ),
        {"rgcd_f1.repetitions.count_fp": False},
        {"RP": 0.5},
        {"RP": 1.0},
        {},
        "request_repeat_after_answer",
    ),
    Case(
        "repeats_to_penalty",
        build(
            {"restaurant": {"info": {"food": "indian"}, "reqt": {"phone": "?"}}},
            U(INDIAN, req=("restaurant-phone",)),
            S(BYE),
            U(req=("restaurant-phone",)),
            S(BYE),
            U(req=("restaurant-phone",)),
        ),
        {"rgcd_f1.repetitions.repeats_to_penalty": 1},
        {"RP": 1.0},
        {"RP": 2 / 3},
        {},
    ),
    Case(
        "provision",
        build(
            {"restaurant": {"info": {"food": "indian"}, "reqt": {"phone": "?"}}},
            U(INDIAN),
            S(A("Restaurant-Inform", "phone", "0123")),
        ),
        {"rgcd_f1.missing_requests.system_provision": False},
        {"RR": 1.0},
        {"RR": 0.0},
        {},
        "provided_domain_requests",
    ),
    Case(
        "provision_domains",
        build(
            {"restaurant": {"info": {"food": "indian"}, "reqt": {"phone": "?", "area": "?"}}},
            U(INDIAN, req=("restaurant-area",)),
            S(A("Restaurant-Inform", "phone", "0123")),
        ),
        {"rgcd_f1.missing_requests.provision_domains": ["hotel"]},
        {"RR": 1.0},
        {"RR": 0.5},
        {},
        "provided_request",
    ),
    Case(
        "auto_add_to_ref",
        build(
            {"restaurant": {"info": {"food": "indian"}, "book": {"people": "2"}, "reqt": {"phone": "?"}}},
            U(INDIAN, req=("restaurant-phone", "restaurant-ref")),
        ),
        {"rgcd_f1.auto_add_to_ref": []},
        {"RP": 1.0},
        {"RP": 0.5},
        {},
        "auto_added_request",
    ),
    Case(
        "request_warning",
        build(
            {"restaurant": {"info": {"food": "indian"}, "reqt": {"phone": "?"}}},
            U(INDIAN, req=("restaurant-phone",)),
            S(BYE),
            U(req=("restaurant-phone",)),
        ),
        {"rgcd_f1.repetitions_warning": 4},
        {"RP": 1.0},
        {"RP": 1.0},
        {"rgcd_f1.repetitions_warning": 1},
        "request_repetition_warning",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_rule_and_switch(case: Case) -> None:
    published = score(case.dialogue, case.base)
    flipped = score(case.dialogue, {**case.base, **case.switch})
    got_on, got_off = summary(published), summary(flipped)
    for key, value in case.on.items():
        assert got_on[key] == (None if value is None else pytest.approx(value)), ("published", key, got_on)
    for key, value in case.off.items():
        assert got_off[key] == (None if value is None else pytest.approx(value)), ("flipped", key, got_off)
    if case.behaviour is not None:
        assert case.behaviour in {e.behaviour for e in published.events}


def test_every_boolean_and_number_switch_has_a_case() -> None:
    """Guard: a new setting needs a scenario showing what it changes."""
    covered = {key for case in CASES for key in {**case.switch, **case.base}}

    def leaves(model: Any, prefix: str = "") -> set[str]:
        found: set[str] = set()
        for name, value in model:
            key = f"{prefix}{name}"
            found |= leaves(value, key + ".") if isinstance(value, BaseModel) else {key}
        return found

    settings = {k.replace("max_repetitions_matched", "max_repetions_matched") for k in leaves(Gcdf1Config())}
    untested = settings - covered - {"igcd_f1.repetitions_warning"}
    assert untested == set()


def test_constraint_repetition_warning_is_logged() -> None:
    raw = build(FOOD, U(INDIAN), S(BYE), U(INDIAN), S(BYE), U(INDIAN))
    quiet = score(raw, NO_MAP)
    assert "repetition_warning" not in {e.behaviour for e in quiet.events}
    loud = score(raw, {**NO_MAP, "igcd_f1.repetitions_warning": 2})
    warnings = [e for e in loud.events if e.behaviour == "repetition_warning"]
    assert [(w.item, w.turns) for w in warnings] == [("food=indian", (0, 2, 4))]


def test_constraints_outside_the_goal_domains_are_false_positives() -> None:
    scores = score(build(FOOD, U(INDIAN, A("Hotel-Inform", "area", "north"))), NO_MAP)
    assert scores.inform["hotel"].precision == 0.0 and scores.inform["hotel"].recall == 1.0
    assert scores.inform["combined"].precision == 0.5
    assert "constraint_domain_outside_goal" in {e.behaviour for e in scores.events}


def test_no_requests_anywhere_gives_na() -> None:
    scores = score(build(FOOD, U(INDIAN)), NO_MAP)
    assert scores.to_json()["rgcd_f1"] == "NA" and scores.to_json()["rcgd_recall"] == "NA"
    assert scores.to_json()["igcd_f1"] == {"combined": 1.0, "restaurant": 1.0}
