"""PEPPER's bias metrics: PC on the selected and residual target subsets (`pc_subset`) and their
gap (`pc_gap`). The per-turn curves, Table 3 and the plot are a study: `crsim.studies.pepper.curves`.

The selected/residual split is read from the record: `Dialogue.metadata["target_split"]` (the
target-biased simulator writes the split it used) or else `user_profile.persona["target_split"]`
(the PEPPER populations draw it per user, so every simulator's dialogues with a user share it).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from crsim.eval.metrics.base import CutoffParams, Metric, NotApplicable, PerTurnMetric, metric
from crsim.eval.metrics.structure import RecommendationTrace, extend
from crsim.model import annotations as keys
from crsim.model.dialogue import Dialogue

NO_SPLIT = "no selected/residual target split in the record"
EMPTY_SUBSET = "the target subset is empty"
Subset = Literal["selected", "residual"]


def target_split(dialogue: Dialogue) -> tuple[frozenset[str], frozenset[str]]:
    """(selected, residual) targets of a dialogue; `NotApplicable` when the record has no split."""
    split = keys.metadata(keys.TARGET_SPLIT, dialogue) or keys.persona(keys.PERSONA_TARGET_SPLIT, dialogue)
    if split is not None:
        return frozenset(split.selected), frozenset(split.residual)
    raise NotApplicable(NO_SPLIT, f"dialogue {dialogue.id!r}")


def subset_curve(dialogue: Dialogue, subset: Subset, k: int) -> tuple[RecommendationTrace, list[float]]:
    """PC_1..PC_T of one dialogue over one target subset."""
    selected, residual = target_split(dialogue)
    wanted = selected if subset == "selected" else residual
    if not wanted:
        raise NotApplicable(EMPTY_SUBSET, f"dialogue {dialogue.id!r}: no {subset} targets")
    trace = RecommendationTrace(dialogue, k)
    return trace, [found / len(wanted) for found in trace.covered(wanted)]


@metric("pc_subset")
class SubsetCoverage(PerTurnMetric):
    """PC_t@K over the selected or the residual targets (PEPPER Table 3)."""

    direction = "higher"

    binary = False  # values between 0 and 1 (or beyond), not an indicator

    class Params(CutoffParams):
        subset: Subset = Field("selected", description="Which target subset: 'selected' or 'residual'.")

    params: Params

    def default_label(self) -> str:
        turn = "" if self.params.turn is None else f"_{self.params.turn}"
        return f"PC{turn}_{self.params.subset[:3]}@{self.params.k}"

    def compute(self, dialogue: Dialogue) -> float:
        trace, values = subset_curve(dialogue, self.params.subset, self.params.k)
        return trace.at(values, self.params.turn)

    def per_turn(self, dialogue: Dialogue, max_turns: int) -> list[float | None]:
        try:
            return [*extend(subset_curve(dialogue, self.params.subset, self.params.k)[1], max_turns)]
        except NotApplicable:
            return [None] * max_turns


@metric("pc_gap")
class CoverageGap(Metric):
    """Δ = PC_res@K − PC_sel@K per dialogue: negative when the CRS finds the targets the user
    described far more often than the others (a guessing game); near 0 for unbiased users."""

    direction = "none"

    binary = False  # values between 0 and 1 (or beyond), not an indicator

    class Params(CutoffParams):
        pass

    params: Params

    def default_label(self) -> str:
        turn = "" if self.params.turn is None else f"_{self.params.turn}"
        return f"PC{turn}_gap@{self.params.k}"

    def compute(self, dialogue: Dialogue) -> float:
        values = []
        for subset in ("residual", "selected"):
            trace, curve = subset_curve(dialogue, subset, self.params.k)
            values.append(trace.at(curve, self.params.turn))
        return values[0] - values[1]
