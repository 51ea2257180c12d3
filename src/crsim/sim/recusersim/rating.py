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
