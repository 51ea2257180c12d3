"""One finding of one measure on one dialogue (or message, or score), and what each measure is about."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum


class Kind(StrEnum):
    """Whose behaviour a measure is about."""

    SIMULATOR = "simulator"
    CRS = "crs"
    JUDGE = "judge"


@dataclass(frozen=True)
class Observation:
    """One unit (a dialogue, a message or a score) of one measure: `hit` True when the measure fires,
    False when it does not, None when the unit cannot be evaluated (`note` says why). For a hit,
    `note` holds the evidence (the cue, the title, the claim). `message`: the index of the message a
    message-level observation is about (what the labelled set of the detectors is compared at)."""

    kind: Kind
    subject: str
    measure: str
    dialogue_id: str
    hit: bool | None
    note: str = ""
    message: int | None = None


@dataclass(frozen=True)
class Measure:
    """A measure's name, whose behaviour it is about, its unit, and its question in one line."""

    name: str
    kind: Kind
    unit: str
    question: str
    #: Whether firing is what a good simulator, CRS or judge does (then the examples are misses).
    wanted: bool = False
    #: How far the rule is checked against the labelled set (`crsim validate detectors`,
    #: docs/behaviour.md): `validated` (precision >= 0.9, recall >= 0.8 on >= 10 gold positives, on
    #: the held-out half for a rule tuned on the other), `experimental`, or `unchecked` (no labels).
    status: str = "unchecked"


_S, _C, _J = Kind.SIMULATOR, Kind.CRS, Kind.JUDGE

#: The status of every rule checked against tests/fixtures/behaviour_labels (docs/behaviour.md, "How far
#: the rules can be trusted"); tests/studies/test_detector_validation.py recomputes it from the labels.
RULE_STATUS = {
    **dict.fromkeys(
        ("user_truncated", "missed_recommendation", "claim_contradicts_item", "crs_repeats"), "validated"
    ),
    **dict.fromkeys(
        (
            "first_turn_end",
            "target_leaked",
            "role_flip",
            "role_flip_dialogue",
            "meta_text",
            "user_repeats",
            "parroting",
            "contradicting_acceptance",
            "stop_before_recommendation",
            "restated_constraint",
            "asked_stated_slot",
            "truncated",
            "text_names_item",
            "crs_role_flip",
        ),
        "experimental",
    ),
}

#: Every measure of the report, in report order (docs/behaviour.md defines each).
MEASURES: dict[str, Measure] = {
    m.name: replace(m, status=RULE_STATUS.get(m.name, m.status))
    for m in (
        Measure(
            "first_turn_end",
            _S,
            "dialogue",
            "the user ended on turn 1, or wrote an end marker in its first message",
        ),
        Measure(
            "constraints_stated", _S, "constraint", "the user stated this constraint of its need", wanted=True
        ),
        Measure(
            "all_constraints_stated",
            _S,
            "dialogue",
            "the user stated every constraint of its need",
            wanted=True,
        ),
        Measure(
            "requests_asked",
            _S,
            "request",
            "a user message asked about this requested attribute",
            wanted=True,
        ),
        Measure(
            "all_requests_asked",
            _S,
            "dialogue",
            "user messages asked about every requested attribute",
            wanted=True,
        ),
        Measure("target_leaked", _S, "dialogue", "a user message named a target before the CRS named it"),
        Measure("role_flip", _S, "message", "the user message speaks in the recommender's voice"),
        Measure("role_flip_dialogue", _S, "dialogue", "some user message speaks in the recommender's voice"),
        Measure(
            "meta_text", _S, "message", "the user message holds text about the message (a preamble, a label)"
        ),
        Measure("user_truncated", _S, "message", "the user message is cut (no complete ending)"),
        Measure("user_repeats", _S, "dialogue", "two consecutive user messages are near-duplicates"),
        Measure("parroting", _S, "dialogue", "a user message repeats the CRS message before it"),
        Measure(
            "contradicting_acceptance", _S, "dialogue", "the user accepted an item that violates its need"
        ),
        Measure(
            "stop_before_recommendation", _S, "dialogue", "the user ended before any item was recommended"
        ),
        Measure(
            "missed_recommendation",
            _S,
            "dialogue",
            "the CRS's text named a recommended target or acceptable item and the user did not react to it",
        ),
        Measure(
            "restated_constraint",
            _S,
            "dialogue",
            "the user stated a constraint three or more times and the CRS never recommended an item with it",
        ),
        Measure("asked_stated_slot", _S, "dialogue", "the user asked about a slot it had stated a value of"),
        Measure("truncated", _C, "message", "the CRS message is cut (no complete ending, or at the cap)"),
        Measure(
            "text_names_item", _C, "message", "the text names every item the message recommends", wanted=True
        ),
        Measure(
            "claim_contradicts_item",
            _C,
            "message",
            "a year, decade or attribute claimed for a named item is not the item's",
        ),
        Measure("crs_role_flip", _C, "message", "the CRS message speaks in the seeker's voice"),
        Measure("crs_repeats", _C, "dialogue", "two consecutive CRS messages are near-duplicates"),
        Measure("score_at_max", _J, "score", "the score is the top of the rubric's scale"),
        Measure(
            "relevance_without_recommendation",
            _J,
            "score",
            "relevance above the lowest level though nothing was recommended",
        ),
        Measure(
            "proactiveness_lowest_despite_questions",
            _J,
            "score",
            "proactiveness at the lowest level though the CRS asked >= 2 questions",
        ),
    )
}
