"""The ranked top-k walk shared by `popular` and `retrieval`: the k best-scoring items, found by
scoring items in popularity order (and those holding liked values) only until no item left unscored
can beat the k-th best (`top_ranked`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from crsim.crs.item_index import ItemIndex, Positions, Ranks, Scores, member


@dataclass
class Evidence:
    """What can lift an item's score above its popularity term, for bounding the items not yet scored.

    `lists`: per liked value, the ranks of the items holding it and the most it adds; `rest`: the most
    that evidence without such a list adds (a numeric bound, a period); `forced`: positions to score in
    any case, because evidence the bound leaves out (text similarity) reaches only them.
    """

    popularity_weight: float
    lists: list[tuple[Ranks, float]] = field(default_factory=list)
    rest: float = 0.0
    forced: Positions = field(default_factory=lambda: np.zeros(0, dtype=np.intp))


#: Items scored per list in the first round of `top_ranked` (doubling each round).
FIRST_ROUND = 64


def top_ranked(
    index: ItemIndex,
    evidence: Evidence,
    score_at: Callable[[Positions], Scores],
    k: int,
    excluded: Positions,
) -> list[int]:
    """Positions of the `k` best-scoring items not `excluded`, best first (ties: catalogue order),
    scoring only as many items as it takes to be sure: the same `k` as scoring every item.

    The items are walked in rank order (popularity descending), together with each list of
    `evidence` (the items holding a liked value, also in rank order), a chunk per round; the items
    met are scored exactly (`score_at`). An item not met yet is less popular than every list's
    cursor it belongs to, so its score is at most its popularity at the tightest such cursor plus
    the evidence it could hold (`_ceiling`); the walk stops when that is below the k-th best score.
    """
    size = len(index.ids)
    lists = [(ranks, most) for ranks, most in evidence.lists if len(ranks) and most > 0]
    cursors = [0] * len(lists)
    walked, step = 0, max(FIRST_ROUND, 4 * k)
    excluded = np.sort(excluded)
    seen = np.sort(index.rank[evidence.forced])
    best = evidence.forced[~member(excluded, evidence.forced)]
    best_scores = score_at(best)
    while True:
        chunks = [np.arange(walked, min(walked + step, size), dtype=np.int32)]
        walked = min(walked + step, size)
        open_lists = [n for n, (ranks, _) in enumerate(lists) if cursors[n] < len(ranks)]
        shortest = min(open_lists, key=lambda n: len(lists[n][0]) - cursors[n], default=None)
        for n, (ranks, _) in enumerate(lists):
            # an item holding every liked value is in the shortest list: when none is, only walking
            # that list to its end shows it, so it goes faster than the others
            ahead = step * (len(lists) + 1) if n == shortest else step
            chunks.append(ranks[cursors[n] : cursors[n] + ahead])
            cursors[n] = min(cursors[n] + ahead, len(ranks))
        met = np.sort(np.concatenate(chunks))
        met = met[np.flatnonzero(np.diff(met, prepend=-1)) if len(met) else met]
        met = met[~member(seen, met)]
        seen = np.sort(np.concatenate([seen, met]))
        at = index.order[met].astype(np.intp)
        at = at[~member(excluded, at)]
        candidates = np.concatenate([best, at])
        scores = np.concatenate([best_scores, score_at(at)])
        keep = np.lexsort((candidates, -scores))[:k]
        best, best_scores = candidates[keep], scores[keep]
        if walked >= size:
            break
        if len(best) == k and _ceiling(index, evidence, lists, cursors, walked) < best_scores[-1]:
            break
        step *= 2
    return [int(p) for p in best]


def _ceiling(
    index: ItemIndex, evidence: Evidence, lists: list[tuple[Ranks, float]], cursors: list[int], walked: int
) -> float:
    """The highest score an item not met yet could have. Its popularity is at most that of the walk's
    next item and of the next item of every list holding it: for each such cursor's popularity `t`, the
    best case holds every list whose next item is at least as popular, and all evidence without a list."""
    popularity = index.popularity
    ahead = [
        float(popularity[index.order[ranks[c]]]) if c < len(ranks) else -math.inf
        for (ranks, _), c in zip(lists, cursors, strict=True)
    ]
    top = float(popularity[index.order[walked]])
    ceiling = -math.inf
    for t in (top, *(a for a in ahead if a < top)):
        if t == -math.inf:
            continue
        held = sum(most for (_, most), a in zip(lists, ahead, strict=True) if a >= t)
        ceiling = max(ceiling, evidence.popularity_weight * t + evidence.rest + held)
    return ceiling + 1e-9 * (1.0 + abs(ceiling))  # above any rounding of the same sum in the scores
