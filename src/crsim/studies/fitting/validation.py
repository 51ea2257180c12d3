"""Validation numbers for out-of-fold predictions, with percentile-bootstrap intervals.

Every row is one conversation, so resampling rows resamples conversations. Binary labels get ROC
AUC, balanced accuracy (deciding "positive" when the probability reaches the training base rate,
the balanced-accuracy-optimal rule for a calibrated probability), accuracy at 0.5 (the
accuracy-optimal rule), the majority baseline's accuracy, and the Brier score and mean
probability (calibration); graded labels get Pearson r and Spearman rho. Both also get a
within-CRS version (pairs / deviations inside one CRS only), which shows what a prediction
knows beyond which system the user talked to; `system_level` compares per-system means (how a
CRS ranking would come out).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict
from scipy.stats import rankdata

FloatArray = npt.NDArray[np.float64]
Rows = npt.NDArray[np.intp]


class Estimate(BaseModel):
    """A point value and its bootstrap interval (None when undefined, e.g. a single class)."""

    model_config = ConfigDict(frozen=True)

    value: float | None
    low: float | None = None
    high: float | None = None

    def text(self, digits: int = 3) -> str:
        """'0.781 [0.735, 0.824]', or '–' when undefined."""
        if self.value is None:
            return "–"
        if self.low is None or self.high is None:
            return f"{self.value:.{digits}f}"
        return f"{self.value:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def roc_auc(y: FloatArray, p: FloatArray) -> float:
    """Probability that a random positive scores above a random negative (ties count half)."""
    positives = y == 1
    n_pos, n_neg = int(positives.sum()), int((~positives).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(p)
    return float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def balanced_accuracy(y: FloatArray, decided: FloatArray) -> float:
    """Mean of the recalls of both classes; NaN when a class is absent."""
    positives = y == 1
    if positives.all() or not positives.any():
        return float("nan")
    return float((decided[positives].mean() + (1 - decided[~positives]).mean()) / 2)


def pearson(x: FloatArray, y: FloatArray) -> float:
    """Pearson r; NaN when either side is constant."""
    if x.std() == 0 or y.std() == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def spearman(x: FloatArray, y: FloatArray) -> float:
    """Spearman rho: Pearson r of the (average) ranks."""
    return pearson(rankdata(x), rankdata(y))


def within_group_auc(y: FloatArray, p: FloatArray, groups: npt.NDArray[np.object_]) -> float:
    """AUC over (positive, negative) pairs of the same group only: discrimination beyond the group's
    base rate (here: beyond knowing which CRS the user talked to)."""
    concordant = pairs = 0.0
    for group in np.unique(groups):
        rows = groups == group
        n_pos = float((y[rows] == 1).sum())
        n_neg = float(rows.sum()) - n_pos
        if n_pos and n_neg:
            concordant += roc_auc(y[rows], p[rows]) * n_pos * n_neg
            pairs += n_pos * n_neg
    return concordant / pairs if pairs else float("nan")


def within_group_pearson(x: FloatArray, y: FloatArray, groups: npt.NDArray[np.object_]) -> float:
    """Pearson r after subtracting each group's mean from both sides (the pooled within-group r)."""
    _, index = np.unique(groups, return_inverse=True)
    counts = np.bincount(index)

    def centred(values: FloatArray) -> FloatArray:
        return np.asarray(values - (np.bincount(index, weights=values) / counts)[index], dtype=np.float64)

    return pearson(centred(x), centred(y))


def bootstrap(
    statistic: Callable[[Rows], float], n: int, *, seed: int, resamples: int, confidence: float = 0.95
) -> Estimate:
    """`statistic(all rows)` and its percentile interval over `resamples` resamples of the n rows.

    Resamples where the statistic is undefined (one class only, a constant side) are left out.
    """
    value = statistic(np.arange(n))
    if np.isnan(value):
        return Estimate(value=None)
    rng = np.random.default_rng(seed)
    draws = np.asarray([statistic(rows) for rows in rng.integers(0, n, size=(resamples, n))])
    draws = draws[~np.isnan(draws)]
    if draws.size == 0:
        return Estimate(value=value)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail])
    return Estimate(value=value, low=float(low), high=float(high))


class BinaryReport(BaseModel):
    """Binary-label validation of a probability over one set of conversations."""

    n: int
    positives: int
    threshold: float
    roc_auc: Estimate
    within_crs_roc_auc: Estimate
    balanced_accuracy: Estimate
    accuracy: Estimate
    majority_accuracy: float
    accuracy_gain: Estimate
    mean_probability: float
    brier: Estimate


def binary_report(
    y: npt.ArrayLike,
    p: npt.ArrayLike,
    groups: Sequence[str] | None,
    *,
    threshold: float,
    seed: int,
    resamples: int,
) -> BinaryReport:
    """AUC (pooled and, given `groups`, within CRS), balanced accuracy at `threshold`, accuracy at 0.5
    and its gain over the majority class, Brier score."""
    labels, probabilities = np.asarray(y, dtype=np.float64), np.asarray(p, dtype=np.float64)
    systems = np.asarray(groups if groups is not None else [], dtype=object)
    majority = 1.0 if labels.mean() > 0.5 else 0.0

    def accuracy(rows: Rows) -> float:
        return float(((probabilities[rows] >= 0.5) == (labels[rows] == 1)).mean())

    statistics: dict[str, Callable[[Rows], float]] = {
        "roc_auc": lambda rows: roc_auc(labels[rows], probabilities[rows]),
        "within_crs_roc_auc": lambda rows: (
            within_group_auc(labels[rows], probabilities[rows], systems[rows])
            if groups is not None
            else np.nan
        ),
        "balanced_accuracy": lambda rows: balanced_accuracy(
            labels[rows], (probabilities[rows] >= threshold).astype(np.float64)
        ),
        "accuracy": accuracy,
        "accuracy_gain": lambda rows: accuracy(rows) - float((labels[rows] == majority).mean()),
        "brier": lambda rows: float(((probabilities[rows] - labels[rows]) ** 2).mean()),
    }
    estimates = {
        name: bootstrap(statistic, len(labels), seed=seed, resamples=resamples)
        for name, statistic in statistics.items()
    }
    return BinaryReport(
        n=len(labels),
        positives=int(labels.sum()),
        threshold=threshold,
        majority_accuracy=float((labels == majority).mean()),
        mean_probability=float(probabilities.mean()),
        **estimates,
    )


class CorrelationReport(BaseModel):
    """Correlation of a prediction with a graded human label over one set of conversations."""

    n: int
    pearson: Estimate
    spearman: Estimate
    within_crs_pearson: Estimate


def correlation_report(
    predicted: npt.ArrayLike, human: npt.ArrayLike, groups: Sequence[str] | None, *, seed: int, resamples: int
) -> CorrelationReport:
    """Pearson r, Spearman rho and (given `groups`) the within-CRS Pearson r, with bootstrap intervals."""
    x, y = np.asarray(predicted, dtype=np.float64), np.asarray(human, dtype=np.float64)
    systems = np.asarray(groups if groups is not None else [], dtype=object)

    def within(rows: Rows) -> float:
        return within_group_pearson(x[rows], y[rows], systems[rows]) if groups is not None else float("nan")

    statistics: dict[str, Callable[[Rows], float]] = {
        "pearson": lambda rows: pearson(x[rows], y[rows]),
        "spearman": lambda rows: spearman(x[rows], y[rows]),
        "within_crs_pearson": within,
    }
    estimates = {
        name: bootstrap(statistic, len(x), seed=seed, resamples=resamples)
        for name, statistic in statistics.items()
    }
    return CorrelationReport(n=len(x), **estimates)


class SystemReport(BaseModel):
    """Per-system means of a prediction and of the human label, and their correlation across systems."""

    predicted: dict[str, float]
    human: dict[str, float]
    pearson: float | None
    spearman: float | None


def system_level(systems: Sequence[str], predicted: npt.ArrayLike, human: npt.ArrayLike) -> SystemReport:
    """Mean prediction and mean human label per system; r and rho over the systems (no interval)."""
    names = sorted(set(systems))
    keys = np.asarray(systems, dtype=object)
    x, y = np.asarray(predicted, dtype=np.float64), np.asarray(human, dtype=np.float64)
    mean_x = np.asarray([x[keys == name].mean() for name in names])
    mean_y = np.asarray([y[keys == name].mean() for name in names])
    r, rho = pearson(mean_x, mean_y), spearman(mean_x, mean_y)
    return SystemReport(
        predicted=dict(zip(names, mean_x.tolist(), strict=True)),
        human=dict(zip(names, mean_y.tolist(), strict=True)),
        pearson=None if np.isnan(r) else r,
        spearman=None if np.isnan(rho) else rho,
    )
