"""Multi-dimensional rating of a CRS message: language, action and (when it recommended) recommendation.

Each dimension is its own question, asked concurrently, answered as JSON whose schema puts the
justification before the score, so the model reasons before it commits to a number. Recommendation
quality is an objective match (1-5) plus a subjective modifier (-1 to +1 in steps of 0.5) from the
user's own leanings; their sum (0-6) is the score. An unreadable answer is kept as an error with
the raw text: the dimension then has no score, and the later prompts do not mention it.

The ratings are recorded on the user utterance that reacts to the rated message, under
`ratings` (see `crsim.eval.metrics.user_ratings`, which reports them as the simulator's scores).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from crsim.llm.structured import Structured
from crsim.sim.recusersim.evidence import TurnFacts

DIMENSIONS = ("language", "action", "recommendation")
#: The subjective modifier: -1 to +1 in steps of 0.5 (an enum, so constrained decoding stays in range).
_MODIFIER: Any = Literal[-1.0, -0.5, 0.0, 0.5, 1.0]


def score_schema(dimension: str, justification_chars: int) -> type[BaseModel]:
    """The answer schema of one dimension (field order: justification first)."""
    config = ConfigDict(extra="forbid")
    justification = (str, Field(max_length=justification_chars))
    if dimension == "recommendation":
        return create_model(
            "RecommendationRating",
            __config__=config,
            justification=justification,
            objective=(int, Field(ge=1, le=5)),
            modifier=(_MODIFIER, ...),
        )
    return create_model(
        f"{dimension.title()}Rating",
        __config__=config,
        justification=justification,
        score=(int, Field(ge=1, le=5)),
    )


def rating_record(answer: Structured[Any]) -> dict[str, Any]:
    """The annotation of one dimension: score and justification, or the error and the raw answer."""
    if answer.value is None:
        return {"score": None, "error": answer.error, "raw": answer.raw}
    data: dict[str, Any] = answer.value.model_dump()
    if "objective" in data:
        data["score"] = data["objective"] + data["modifier"]
    if answer.repaired:
        data["repaired"] = True
    return data


#: Highest scores the facts of a turn allow, and the lowest action score they call for (`check_ratings`).
LANGUAGE_CAP_IGNORED = 3
ACTION_CAP_IGNORED = 2
ACTION_CAP_PARTLY = 3
ACTION_CAP_REPEATED = 3
OBJECTIVE_CAP_CONTRADICTS = 2
ACTION_FLOOR_DID_AS_ASKED = 3


def _caps(facts: TurnFacts) -> dict[str, tuple[int, str]]:
    """Per dimension the lowest cap the facts call for, with the rule's name."""
    caps: dict[str, tuple[int, str]] = {}

    def cap(dimension: str, value: int, rule: str) -> None:
        if dimension not in caps or value < caps[dimension][0]:
            caps[dimension] = (value, rule)

    if facts.ignored_inquiry:
        cap("language", LANGUAGE_CAP_IGNORED, "the question was not answered")
        cap("action", ACTION_CAP_IGNORED, "the question was not answered")
    elif facts.unanswered:
        cap("action", ACTION_CAP_PARTLY, "the question was answered in part")
    if facts.recommended and len(facts.repeated) == len(facts.recommended):
        cap("action", ACTION_CAP_REPEATED, "it repeated an earlier recommendation")
    if facts.contradicts:
        cap("recommendation", OBJECTIVE_CAP_CONTRADICTS, "an item contradicts the need")
    return caps


def _did_as_asked(facts: TurnFacts) -> str | None:
    """Why the message did what the user's previous message asked (None: it did not, or unknown)."""
    if facts.unanswered or facts.contradicts:
        return None
    if facts.inquiry is not None and facts.answered:
        return "it answered the question"
    fresh = len(facts.repeated) < len(facts.recommended)
    if facts.asked_for_recommendation and fresh and facts.inquiry is None:
        return "it recommended as asked"
    return None


def check_ratings(ratings: dict[str, dict[str, Any]], facts: TurnFacts) -> dict[str, dict[str, Any]]:
    """The ratings made consistent with the facts of the turn: a score above what the facts allow is
    lowered to the cap, keeping the model's value as `model_score` (`model_objective`) and the rule.

    Rules (crsim's, not RecUserSim's): a message that gave none of the details the user asked about
    scores at most 3 for language (it is evasive however fluent) and 2 for action, one that gave some
    at most 3 for action; repeating only earlier recommendations is at most 3 for action; an
    objective match above 2 for an item that contradicts a constraint of the need is lowered to 2.
    The other way, a message that did what the user asked (answered all asked details, or
    recommended something new that contradicts nothing after a request) scores at least 3 for
    action, raised with `model_score` and `raised` kept.
    """
    checked = _floor_action(ratings, facts)
    for dimension, (limit, rule) in _caps(facts).items():
        rating = ratings.get(dimension)
        if not rating or rating.get("score") is None:
            continue
        field = "objective" if dimension == "recommendation" else "score"
        if rating[field] <= limit:
            continue
        fixed = {**rating, f"model_{field}": rating[field], field: limit, "capped": rule}
        if field == "objective":
            fixed["score"] = limit + rating["modifier"]
        checked[dimension] = fixed
    return checked


def _floor_action(ratings: dict[str, dict[str, Any]], facts: TurnFacts) -> dict[str, dict[str, Any]]:
    checked = dict(ratings)
    rating, why = ratings.get("action"), _did_as_asked(facts)
    if rating and why and rating.get("score") is not None and rating["score"] < ACTION_FLOOR_DID_AS_ASKED:
        checked["action"] = {
            **rating,
            "model_score": rating["score"],
            "score": ACTION_FLOOR_DID_AS_ASKED,
            "raised": why,
        }
    return checked


_LANGUAGE = {
    1: "its wording was very poor: unnatural and hard to follow",
    2: "its wording was poor and awkward",
    3: "its wording was acceptable but somewhat stiff",
    4: "its wording was good and clear",
    5: "its wording was excellent: natural and clear",
}
_ACTION = {
    1: "it completely misunderstood you or did the wrong thing",
    2: "it mostly missed what you asked for",
    3: "it partly did what you asked for",
    4: "it understood you and mostly did the right thing",
    5: "it understood you perfectly and did exactly the right thing",
}
_RECOMMENDATION = {
    0: "its recommendation does not suit you at all",
    1: "its recommendation does not suit you at all",
    2: "its recommendation suits you poorly",
    3: "its recommendation is only a so-so fit for you",
    4: "its recommendation suits you fairly well",
    5: "its recommendation suits you well",
    6: "its recommendation is a perfect fit for you",
}


def describe(ratings: dict[str, dict[str, Any]]) -> list[str]:
    """The scores as words for the action and response prompts (models read words better than numbers)."""
    lines = []
    for dimension, table in (
        ("language", _LANGUAGE),
        ("action", _ACTION),
        ("recommendation", _RECOMMENDATION),
    ):
        score = ratings.get(dimension, {}).get("score")
        if score is not None:
            lines.append(table[round(score)])
    return lines
