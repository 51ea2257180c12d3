"""The judge measures of `crsim.studies.behaviour`: score spread, relevance when nothing was
recommended, proactiveness against the CRS's questions, checked on hand-written scores."""

from __future__ import annotations

from crsim.model.dialogue import Dialogue
from crsim.model.run_folder import ScoreRecord
from crsim.studies.behaviour import Observation
from crsim.studies.behaviour.judges import judge_observations, rubric_scale
from test_behaviour_users import GROUNDHOG, dialogue

NOTHING = dialogue([("user", "A comedy."), ("crs", "Any actor?"), ("user", "Bye.")], did="nothing")
ASKED = dialogue(
    [
        ("user", "Hi."),
        ("crs", "Which genre?"),
        ("user", "Comedy."),
        ("crs", "Which decade?"),
        ("user", "Bye."),
    ],
    did="asked",
)
LATE = dialogue(
    [
        ("user", "A comedy."),
        ("crs", "Any actor?"),
        ("user", "No."),
        ("crs", "Try Groundhog Day (1993).", [GROUNDHOG]),
    ],
    did="late",
)
DIALOGUES: dict[str, Dialogue] = {d.id: d for d in (NOTHING, ASKED, LATE)}


def score(dialogue_id: str, metric: str, value: float | None, turn: int | None = None) -> ScoreRecord:
    return ScoreRecord(
        dialogue_id=dialogue_id,
        crs_id="crs",
        simulator_id="sim",
        metric=metric,
        value=value,
        turn=turn,
        llm_judged=True,
    )


def of(found: list[Observation], measure: str) -> list[tuple[str, bool | None]]:
    return [(o.dialogue_id, o.hit) for o in found if o.measure == measure]


def test_scales_come_from_the_rubric_the_config_or_label_names() -> None:
    assert rubric_scale("quality5/recommendation_relevance", {}) is not None
    scale = rubric_scale("mine/proactiveness", {"mine": "pepper3"})
    assert scale is not None and (scale.low, scale.high, scale.from_rubric) == (1, 5, True)
    assert rubric_scale("quality5/no_such_aspect", {}) is None
    assert rubric_scale("unknown/relevance", {}) is None


def test_relevance_above_lowest_without_recommendation() -> None:
    label = "quality5/recommendation_relevance"
    scores = [
        score("nothing", label, 5),
        score("asked", label, 1),
        score("late", label, 4),
        score("gone", label, 3),
    ]
    found, _ = judge_observations(scores, DIALOGUES, {})
    assert of(found, "relevance_without_recommendation") == [
        ("nothing", True),
        ("asked", False),
        ("gone", None),
    ]


def test_turn_level_relevance_counts_what_was_recommended_by_that_turn() -> None:
    label = "quality5/recommendation_relevance"
    found, _ = judge_observations(
        [score("late", label, 4, turn=1), score("late", label, 4, turn=2)], DIALOGUES, {}
    )
    assert of(found, "relevance_without_recommendation") == [("late", True)]  # turn 2 recommended


def test_proactiveness_lowest_despite_questions() -> None:
    label = "pepper3/proactiveness"
    scores = [
        score("asked", label, 1),
        score("nothing", label, 1),
        score("late", label, 1),
        score("asked", label, 2),
    ]
    found, _ = judge_observations(scores, DIALOGUES, {})
    # "nothing" and "late" hold one question each, below the two that make the lowest level contradict them
    assert of(found, "proactiveness_lowest_despite_questions") == [("asked", True), ("asked", False)]


def test_score_spread_share_at_max_and_unread_answers() -> None:
    label = "quality5/fluency"
    scores = [
        score("nothing", label, 5),
        score("asked", label, 5),
        score("late", label, 3),
        score("late", label, None),
    ]
    scores.append(ScoreRecord(dialogue_id="late", crs_id="crs", simulator_id="sim", metric="turns", value=4))
    found, spread = judge_observations(scores, DIALOGUES, {})
    assert of(found, "score_at_max") == [("nothing", True), ("asked", True), ("late", False), ("late", None)]
    assert spread == {label: "1:0 2:0 3:1 4:0 5:2 (unread: 1)"}  # the formula metric is no judge


def test_unknown_rubric_uses_the_scores_seen_and_says_so() -> None:
    found, spread = judge_observations(
        [score("asked", "custom/relevance", 2), score("late", "custom/relevance", 4)], DIALOGUES, {}
    )
    assert of(found, "score_at_max") == [("asked", False), ("late", True)]
    assert "rubric is unknown" in spread["custom/relevance"]
    assert of(found, "relevance_without_recommendation") == [("asked", None), ("late", None)]
