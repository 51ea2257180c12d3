"""PEPPER's preference-coverage metrics: PC_t (cumulative target coverage) and PCIR_t (its growth).

Per dialogue PC_t = |(∪_{x≤t} P_x@K) ∩ Y| / |Y|; the population mean of it is PEPPER's PC_t.
Unlike Recall@(t,K), a target found once stays found, so exploring new items is rewarded.
"""

from __future__ import annotations

from pydantic import Field

from crsim.eval.metrics.base import CutoffParams, NotApplicable, PerTurnMetric, metric
from crsim.eval.metrics.structure import (
    RecommendationTrace,
    extend,
    recommendation_trace,
    shared_reading,
    targets,
)
from crsim.model.dialogue import Dialogue


def coverage_curve(dialogue: Dialogue, k: int) -> tuple[RecommendationTrace, list[float]]:
    """PC_1..PC_T of one dialogue (T = its last turn); `NotApplicable` without targets. Inside
    `readings_shared` computed once per dialogue and k (the caller must not change the list)."""
    return shared_reading("coverage", dialogue, k, lambda: _coverage_curve(dialogue, k))


def _coverage_curve(dialogue: Dialogue, k: int) -> tuple[RecommendationTrace, list[float]]:
    wanted = targets(dialogue)
    trace = recommendation_trace(dialogue, k)
    return trace, [found / len(wanted) for found in trace.covered(wanted)]


@metric("pc")
class PreferenceCoverage(PerTurnMetric):
    """PC_t@K: share of the user's targets recommended (in any top-K list) during turns 1..t.

    Without `turn`, t is the dialogue's own last turn. Needs targets.
    """

    direction = "higher"

    binary = False  # values between 0 and 1 (or beyond), not an indicator

    class Params(CutoffParams):
        pass

    params: Params

    def default_label(self) -> str:
        turn = "" if self.params.turn is None else f"_{self.params.turn}"
        return f"PC{turn}@{self.params.k}"

    def compute(self, dialogue: Dialogue) -> float:
        trace, values = coverage_curve(dialogue, self.params.k)
        return trace.at(values, self.params.turn)

    def per_turn(self, dialogue: Dialogue, max_turns: int) -> list[float | None]:
        try:
            return [*extend(coverage_curve(dialogue, self.params.k)[1], max_turns)]
        except NotApplicable:
            return [None] * max_turns


@metric("pcir")
class PreferenceCoverageIncreaseRate(PerTurnMetric):
    """PCIR_t@K = PC_t − PC_{t−1} with PC_0 = 0: the coverage gained at turn t.

    With `turn` set, the gain at that turn. Without it, PEPPER's PCIR_avg: the mean gain per turn
    over turns 1..H = PC_H / H, where H is `horizon` if given, else the dialogue's last turn.
    """

    direction = "higher"

    binary = False  # values between 0 and 1 (or beyond), not an indicator

    class Params(CutoffParams):
        horizon: int | None = Field(
            None, ge=1, description="Average over turns 1..horizon (a fixed budget, as PEPPER's 20)."
        )

    params: Params

    def default_label(self) -> str:
        if self.params.turn is not None:
            return f"PCIR_{self.params.turn}@{self.params.k}"
        horizon = "" if self.params.horizon is None else f"({self.params.horizon})"
        return f"PCIR_avg{horizon}@{self.params.k}"

    def compute(self, dialogue: Dialogue) -> float:
        trace, values = coverage_curve(dialogue, self.params.k)
        if self.params.turn is not None:
            turn = self.params.turn
            before = 0.0 if turn == 1 else trace.at(values, turn - 1)
            return trace.at(values, turn) - before
        horizon = self.params.horizon or trace.num_turns
        return trace.at(values, horizon) / horizon

    def per_turn(self, dialogue: Dialogue, max_turns: int) -> list[float | None]:
        try:
            values = extend(coverage_curve(dialogue, self.params.k)[1], max_turns)
        except NotApplicable:
            return [None] * max_turns
        return [v - p for v, p in zip(values, [0.0, *values[:-1]], strict=True)]
