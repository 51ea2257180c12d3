"""Bootstrap intervals of the fidelity measures: the percentile interval of replicates, and the
interval of the classifier's AUC by resampling dialogues of its out-of-fold scores."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from crsim.studies.fidelity.classifier import Scored

#: Bootstrap replicates per interval unless told otherwise.
RESAMPLES = 200
#: Coverage of every interval.
LEVEL = 0.95
#: At least this share of replicates must define a value for its interval to be given.
DEFINED_SHARE = 0.5

Interval = tuple[float, float]


def percentile_interval(values: Sequence[float | None], level: float = LEVEL) -> Interval | None:
    """The percentile interval of the replicates that define a value; None when fewer than
    DEFINED_SHARE of them do (e.g. most resamples of a simulator have no recommendation round)."""
    known = np.array([v for v in values if v is not None], dtype=float)
    if not values or known.size < DEFINED_SHARE * len(values):
        return None
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(known, [tail, 100 - tail])
    return float(low), float(high)


def auc_interval(scored: Scored, resamples: int, seed: int, level: float = LEVEL) -> Interval | None:
    """Percentile interval of the classifier's AUC by a bootstrap over dialogues: each replicate draws,
    per class, as many dialogues as the class has, with replacement, and takes the AUC of all their
    utterances' out-of-fold scores. The scores stay fixed (the classifier is not refitted), so the
    interval covers the sampling of dialogues, not the variance of the fitting."""
    from sklearn.metrics import roc_auc_score

    labels = np.asarray(scored.labels)
    scores = np.asarray(scored.scores)
    members: dict[str, list[int]] = {}
    for index, group in enumerate(scored.groups):
        members.setdefault(group, []).append(index)
    by_class = [[np.asarray(m) for g, m in members.items() if labels[m[0]] == label] for label in (1, 0)]
    rng = np.random.default_rng(seed)
    values: list[float | None] = []
    for _ in range(resamples):
        chosen = np.concatenate(
            [groups[pick] for groups in by_class for pick in rng.integers(0, len(groups), size=len(groups))]
        )
        values.append(float(roc_auc_score(labels[chosen], scores[chosen])))
    return percentile_interval(values, level)
