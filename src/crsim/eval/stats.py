"""Population statistics for per-dialogue values: mean, spread and a bootstrap confidence interval.

The interval resamples dialogues when every user holds at most one dialogue of the population. When
a user holds several (a population that reuses users, or `trials` > 1), those dialogues are not
independent, and resampling them as if they were gives an interval that is too narrow; then the
interval comes from a cluster bootstrap: distinct users are drawn with replacement and each brings
all of its dialogues. Every aggregate says which method it used, over how many values and clusters,
with how many resamples and which seed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from crsim.model.run_folder.scores import DIALOGUE_BOOTSTRAP, USER_BOOTSTRAP, Aggregate

__all__ = [
    "DIALOGUE_BOOTSTRAP",
    "USER_BOOTSTRAP",
    "Aggregate",
    "aggregate",
    "aggregate_coded",
    "interval_possible",
]


def aggregate(
    values: Sequence[float | None],
    *,
    seed: int = 0,
    confidence: float = 0.95,
    resamples: int = 2000,
    clusters: Sequence[str | None] | None = None,
    not_evaluable: int = 0,
) -> Aggregate:
    """Mean, std and a percentile-bootstrap CI of the mean; deterministic for a given seed.

    `clusters`, when given, names the user of each value (same length as `values`; None for an
    unknown user, who then counts as a user of their own). When some user holds two or more of the
    present values, the CI is a cluster bootstrap over users (`USER_BOOTSTRAP`); otherwise it
    resamples values (`DIALOGUE_BOOTSTRAP`), exactly as without `clusters`. `not_evaluable` is
    recorded as given: the dialogues the caller left out before (see `Aggregate.not_evaluable`).
    No values: everything None. Too few values (or users) for an interval (`interval_possible`): CI
    None. Constant values: CI (mean, mean), since every resample gives the same mean.
    """
    if clusters is not None and len(clusters) != len(values):
        raise ValueError(f"{len(clusters)} cluster labels for {len(values)} values")
    kept = [i for i, v in enumerate(values) if v is not None]
    present = np.array([values[i] for i in kept], dtype=float)
    groups = _cluster_index(clusters, kept) if clusters is not None else None
    return _aggregate(
        present,
        len(values) - int(present.size),
        groups,
        seed=seed,
        confidence=confidence,
        resamples=resamples,
        not_evaluable=not_evaluable,
    )


def aggregate_coded(
    values: np.ndarray,
    *,
    seed: int = 0,
    confidence: float = 0.95,
    resamples: int = 2000,
    clusters: np.ndarray | None = None,
    not_evaluable: int = 0,
) -> Aggregate:
    """`aggregate` of values held compactly: a float array with NaN for a missing value, and the users
    as integer codes (-1 for an unknown user, who then counts as a user of their own). The same
    aggregate as `aggregate` of the values with None for NaN and the users named by their codes."""
    if clusters is not None and clusters.shape != values.shape:
        raise ValueError(f"{clusters.size} cluster labels for {values.size} values")
    kept = ~np.isnan(values)
    present = values[kept]
    groups = _code_index(clusters[kept]) if clusters is not None else None
    return _aggregate(
        present,
        int(values.size - present.size),
        groups,
        seed=seed,
        confidence=confidence,
        resamples=resamples,
        not_evaluable=not_evaluable,
    )


def _aggregate(
    present: np.ndarray,
    missing: int,
    groups: np.ndarray | None,
    *,
    seed: int,
    confidence: float,
    resamples: int,
    not_evaluable: int,
) -> Aggregate:
    """The aggregate of the present values, `groups` numbering their users by first appearance."""
    n = int(present.size)
    if n and not np.isfinite(present).all():
        raise ValueError("cannot aggregate non-finite values (NaN or infinity)")
    mean = float(present.mean()) if n else None
    std = float(present.std(ddof=1)) if n > 1 else None
    repeated = groups is not None and n > 0 and int(groups.max()) + 1 < n
    units = int(groups.max()) + 1 if groups is not None and n else n
    low = high = method = None
    if interval_possible(units, confidence):
        if repeated and groups is not None:
            method = USER_BOOTSTRAP
            low, high = _cluster_bootstrap(
                present, groups, seed=seed, confidence=confidence, resamples=resamples
            )
        else:
            method = DIALOGUE_BOOTSTRAP
            low, high = _bootstrap(present, seed=seed, confidence=confidence, resamples=resamples)
    return Aggregate(
        mean=mean,
        std=std,
        ci_low=low,
        ci_high=high,
        n=n,
        missing=missing,
        not_evaluable=not_evaluable,
        confidence=confidence,
        method=method,
        clusters=units if groups is not None else None,
        resamples=resamples if method else None,
        seed=seed if method else None,
    )


def _cluster_index(clusters: Sequence[str | None], kept: list[int]) -> np.ndarray:
    """0-based user number of each present value; an unknown user (None) is a user of its own."""
    numbers: dict[object, int] = {}
    index = []
    for i in kept:
        key: object = clusters[i] if clusters[i] is not None else ("unknown", i)
        index.append(numbers.setdefault(key, len(numbers)))
    return np.array(index, dtype=np.int64)


def _code_index(codes: np.ndarray) -> np.ndarray:
    """`_cluster_index` of integer user codes: users numbered 0, 1, ... in order of first appearance,
    each negative code a user of its own."""
    codes = codes.astype(np.int64, copy=True)
    unknown = codes < 0
    if unknown.any():
        start = int(codes.max(initial=-1)) + 1
        codes[unknown] = np.arange(start, start + int(unknown.sum()), dtype=np.int64)
    if codes.size == 0:
        return codes
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size, dtype=np.int64)
    return rank[inverse.reshape(-1)]


def interval_possible(n: int, confidence: float) -> bool:
    """Whether a percentile bootstrap of n values can say more than the range of the data.

    A resample repeats the smallest value n times with probability n**-n. While that is at least
    the lower tail (1 - confidence) / 2, the interval is [min, max] whatever the values (n <= 3 at
    95%), and that covers the mean far less often than claimed: half the time at n = 2.
    """
    return n > 0 and float(n) ** -n < (1 - confidence) / 2


def _cluster_bootstrap(
    values: np.ndarray, groups: np.ndarray, *, seed: int, confidence: float, resamples: int
) -> tuple[float, float]:
    """Percentile interval of the mean over resamples of whole users: each resample draws as many
    users as there are, with replacement, and its mean is the mean of all their values (users with
    more values weigh more, as they do in the point estimate)."""
    mean = float(values.mean())
    if float(values.max()) == float(values.min()):
        return mean, mean
    sums = np.bincount(groups, weights=values)
    counts = np.bincount(groups).astype(float)
    users = sums.size
    rng = np.random.default_rng(seed)
    per_batch = max(1, _RESAMPLED_VALUES // users)
    means: list[np.ndarray] = []
    for start in range(0, resamples, per_batch):
        picks = rng.integers(0, users, size=(min(per_batch, resamples - start), users))
        means.append(sums[picks].sum(axis=1) / counts[picks].sum(axis=1))
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(np.concatenate(means), [tail, 100 - tail])
    return float(low), float(high)


#: Resampled values held at once (per batch of resamples): about 32 MB of float64, whatever n is.
_RESAMPLED_VALUES = 4_000_000


def _bootstrap(values: np.ndarray, *, seed: int, confidence: float, resamples: int) -> tuple[float, float]:
    mean = float(values.mean())
    if float(values.max()) == float(values.min()):
        return mean, mean  # every resample has this mean; scipy would warn about degenerate data
    distinct, counts = np.unique(values, return_counts=True)
    if values.size >= _LARGE and distinct.size * 16 <= values.size:
        return _bootstrap_counts(distinct, counts, seed=seed, confidence=confidence, resamples=resamples)
    from scipy.stats import bootstrap  # imported here: scipy.stats takes most of a second to load

    result = bootstrap(
        (values,),
        np.mean,
        n_resamples=resamples,
        vectorized=True,
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(seed),
        batch=max(1, _RESAMPLED_VALUES // values.size),  # same result as one batch, bounded memory
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


#: From this many values on, samples with few distinct values are resampled by counts (below).
_LARGE = 5000


def _bootstrap_counts(
    distinct: np.ndarray, counts: np.ndarray, *, seed: int, confidence: float, resamples: int
) -> tuple[float, float]:
    """The same percentile bootstrap for a large sample with few distinct values (0/1 successes,
    turn counts, recall fractions): a resample with replacement is a multinomial draw of how often
    each distinct value occurs, so each resample costs O(distinct values) instead of O(n). Same
    distribution of resampled means as resampling the values, other random draws than scipy's."""
    n = int(counts.sum())
    draws = np.random.default_rng(seed).multinomial(n, counts / n, size=resamples)
    means = draws @ distinct / n
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)
