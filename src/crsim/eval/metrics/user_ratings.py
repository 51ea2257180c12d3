"""`user_ratings`: the simulated user's own per-turn ratings of the CRS, reported as scores.

Simulators that rate the CRS while talking to it (`recusersim`) record, on the user utterance that
reacts to a CRS message, an annotation `ratings = {"turn": t, "<aspect>": {"score": x,
"justification": ..., "error": ..., "raw": ...}, ...}` for the CRS message of turn t (1-based: the
reply to the t-th user utterance). This evaluator turns them into turn-level values of the aspects
`language`, `action` and `recommendation` (objective 1-5 plus a modifier in [-1, 1]); `crsim
evaluate` averages them per dialogue and then per CRS × simulator, as RecUserSim's Table 1 does. A
rating the simulator could not read stays a missing value with its error and raw answer; a
dialogue without any ratings is not applicable. Needs no model: it reads the records.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from crsim.core.plugins import Params as BaseParams
from crsim.eval.metrics.base import Evaluator, NotApplicable, Value, metric
from crsim.model.annotations import RATINGS, annotation
from crsim.model.dialogue import Dialogue, Role

#: The annotation this evaluator reads (declared in model/annotations.py).
ANNOTATION = RATINGS.name
Aspect = Literal["language", "action", "recommendation"]
ASPECTS: tuple[Aspect, ...] = ("language", "action", "recommendation")
NO_RATINGS = "no explicit user ratings in the dialogue (a rating simulator such as recusersim writes them)"


@metric("user_ratings")
class UserRatings(Evaluator):
    """The simulator's explicit ratings of each CRS turn (module docstring)."""

    direction = "higher"

    class Params(BaseParams):
        aspects: list[Aspect] = Field(
            default_factory=lambda: list(ASPECTS),
            min_length=1,
            description="Rating dimensions to report.",
        )

    def default_label(self) -> str:
        return "user_ratings"

    async def evaluate(self, dialogue: Dialogue) -> list[Value]:
        values: list[Value] = []
        user_turn = 0
        for index, utterance in enumerate(dialogue.utterances):
            if utterance.role is not Role.USER:
                continue
            user_turn += 1
            ratings = annotation(RATINGS, dialogue, index)  # a malformed value is a located DataError
            if ratings is None:
                continue
            turn = ratings.turn if ratings.turn >= 1 else user_turn - 1
            for aspect in self.params.aspects:  # type: ignore[attr-defined]
                rating = getattr(ratings, aspect)
                if isinstance(rating, dict):
                    values.append(_value(aspect, turn, rating))
        if not values:
            raise NotApplicable(NO_RATINGS)
        return values


def _value(aspect: str, turn: int, rating: dict[str, Any]) -> Value:
    score = rating.get("score")
    number = float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None
    error = rating.get("error")
    if number is None and error is None:
        error = f"rating without a numeric score: {score!r}"
    return Value(
        aspect=aspect,
        value=number,
        turn=turn,
        explanation=rating.get("justification"),
        error=None if number is not None else str(error),
        raw=rating.get("raw"),
    )
