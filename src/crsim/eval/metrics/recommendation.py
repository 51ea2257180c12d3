"""Recommendation metrics over the CRS's lists: Recall@(t,K), NDCG@(t,K), MRR@(t,K) and list
turnover (Jaccard distance).

All follow PEPPER (Kim et al.): the list P_t at turn t is the one the CRS shows when answering
the t-th user utterance; a turn without a list keeps the standing (most recent non-empty) list.
NDCG and MRR are the ranking metrics of iEvaLM (Wang et al.), read off the same list.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from pydantic import Field

from crsim.core.plugins import Params as BaseParams
from crsim.eval.metrics.base import FEWER_THAN_TWO_LISTS, CutoffParams, NotApplicable, PerTurnMetric, metric
from crsim.eval.metrics.structure import (
    RecommendationTrace,
    extend,
    recommendation_trace,
    shared_reading,
    targets,
)
from crsim.model.dialogue import Dialogue


def recall(ranked: tuple[str, ...], wanted: frozenset[str], k: int) -> float:
    """|ranked ∩ wanted| / |wanted|: the share of the targets in the list."""
    return len(wanted.intersection(ranked)) / len(wanted)


def ndcg(ranked: tuple[str, ...], wanted: frozenset[str], k: int) -> float:
    """DCG of `ranked` (gain 1 per target, discount log2(rank + 1)) over the DCG of the ideal top-k
    list, holding min(|Y|, k) targets on top (a list shorter than k gains nothing from being short)."""
    dcg = sum(1.0 / math.log2(rank + 1) for rank, item in enumerate(ranked, 1) if item in wanted)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), k) + 1))
    return dcg / ideal if ideal else 0.0


def reciprocal_rank(ranked: tuple[str, ...], wanted: frozenset[str], k: int) -> float:
    """1 / the rank of the first target in `ranked`; 0 when none is there."""
    return next((1.0 / rank for rank, item in enumerate(ranked, 1) if item in wanted), 0.0)


class _RankMetric(PerTurnMetric):
    """A metric of the standing list P_t@K against the targets, at turn t (default: the last turn)."""

    binary = False  # values between 0 and 1 (or beyond), not an indicator

    class Params(CutoffParams):
        pass

    params: Params
    name: str
    of_list: Callable[[tuple[str, ...], frozenset[str], int], float]

    def default_label(self) -> str:
        turn = "t" if self.params.turn is None else str(self.params.turn)
        return f"{self.name}@({turn},{self.params.k})"

    def _curve(self, dialogue: Dialogue) -> tuple[RecommendationTrace, list[float]]:
        of_list, k = type(self).of_list, self.params.k
        return shared_reading(of_list, dialogue, k, lambda: self._curve_of(dialogue, of_list, k))

    @staticmethod
    def _curve_of(
        dialogue: Dialogue, of_list: Callable[[tuple[str, ...], frozenset[str], int], float], k: int
    ) -> tuple[RecommendationTrace, list[float]]:
        wanted = targets(dialogue)
        trace = recommendation_trace(dialogue, k)
        return trace, [of_list(p, wanted, k) for p in trace.standing()]

    def compute(self, dialogue: Dialogue) -> float:
        trace, values = self._curve(dialogue)
        return trace.at(values, self.params.turn)

    def per_turn(self, dialogue: Dialogue, max_turns: int) -> list[float | None]:
        try:
            return [*extend(self._curve(dialogue)[1], max_turns)]
        except NotApplicable:
            return [None] * max_turns


@metric("recall")
class Recall(_RankMetric):
    """Recall@(t,K) = |P_t@K ∩ Y| / |Y|, with Y the user's target items and P_t the standing list.

    Without `turn`, t is the dialogue's own last turn. Needs targets.
    """

    direction = "higher"

    name = "Recall"
    of_list = staticmethod(recall)


@metric("ndcg")
class NDCG(_RankMetric):
    """NDCG@(t,K) of the standing list P_t@K against the targets Y (binary gains). Needs targets."""

    direction = "higher"

    name = "NDCG"
    of_list = staticmethod(ndcg)


@metric("mrr")
class MRR(_RankMetric):
    """MRR@(t,K): 1 / rank of the first target in the standing list P_t@K, 0 if none. Needs targets."""

    direction = "higher"

    name = "MRR"
    of_list = staticmethod(reciprocal_rank)


def jaccard_distance(a: tuple[str, ...], b: tuple[str, ...]) -> float:
    """1 - |A ∩ B| / |A ∪ B| on the item sets of two non-empty lists."""
    set_a, set_b = set(a), set(b)
    return 1.0 - len(set_a & set_b) / len(set_a | set_b)


@metric("jaccard")
class Jaccard(PerTurnMetric):
    """Mean Jaccard distance between consecutive non-empty recommendation lists (top K).

    0 means the CRS keeps repeating its list, 1 that every new list is entirely new. Turns without
    a list are skipped. Needs at least two lists; does not need targets.
    """

    direction = "none"

    binary = False  # values between 0 and 1 (or beyond), not an indicator

    class Params(BaseParams):
        k: int = Field(10, ge=1, description="Only the first k items of each list count.")

    params: Params

    def default_label(self) -> str:
        return f"Jaccard@{self.params.k}"

    def _distances(self, dialogue: Dialogue) -> list[list[float]]:
        """Per turn: the distance of each list given in that turn to the non-empty list before it."""
        out: list[list[float]] = []
        previous: tuple[str, ...] = ()
        for lists in recommendation_trace(dialogue, self.params.k).lists:
            distances = []
            for items in lists:
                if previous:
                    distances.append(jaccard_distance(previous, items))
                previous = items
            out.append(distances)
        return out

    def compute(self, dialogue: Dialogue) -> float:
        distances = [d for turn in self._distances(dialogue) for d in turn]
        if not distances:
            raise NotApplicable(FEWER_THAN_TWO_LISTS, f"dialogue {dialogue.id!r}")
        return sum(distances) / len(distances)

    def per_turn(self, dialogue: Dialogue, max_turns: int) -> list[float | None]:
        values: list[float | None] = [sum(d) / len(d) if d else None for d in self._distances(dialogue)]
        return values[:max_turns] + [None] * (max_turns - len(values))
