"""Population statistics for per-dialogue values: mean, spread and a bootstrap confidence interval."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, Field


class Aggregate(BaseModel):
    """Summary of one metric over a population; `missing` values (None) are excluded from all stats."""

    mean: float | None = Field(description="Mean of the present values; None when there are none.")
    std: float | None = Field(description="Sample standard deviation (ddof=1); None for fewer than 2 values.")
    ci_low: float | None = Field(
        description="Lower end of the percentile-bootstrap interval; None when too few values for one."
    )
    ci_high: float | None = Field(description="Upper end of the percentile-bootstrap interval (see ci_low).")
    n: int = Field(description="Number of present values.")
    missing: int = Field(description="Number of values that were None (not applicable or failed).")
    confidence: float = 0.95


def aggregate(
    values: Sequence[float | None], *, seed: int = 0, confidence: float = 0.95, resamples: int = 2000
) -> Aggregate:
    """Mean, std and a percentile-bootstrap CI of the mean; deterministic for a given seed.

    No values: everything None. Too few values for an interval (`interval_possible`): CI None.
    Constant values: CI (mean, mean), since every resample gives the same mean.
    """
    present = np.array([v for v in values if v is not None], dtype=float)
    n, missing = int(present.size), len(values) - int(present.size)
    if n and not np.isfinite(present).all():
        raise ValueError("cannot aggregate non-finite values (NaN or infinity)")
    mean = float(present.mean()) if n else None
    std = float(present.std(ddof=1)) if n > 1 else None
    low = high = None
    if interval_possible(n, confidence):
        low, high = _bootstrap(present, seed=seed, confidence=confidence, resamples=resamples)
    return Aggregate(
        mean=mean, std=std, ci_low=low, ci_high=high, n=n, missing=missing, confidence=confidence
    )


def interval_possible(n: int, confidence: float) -> bool:
    """Whether a percentile bootstrap of n values can say more than the range of the data.

    A resample repeats the smallest value n times with probability n**-n. While that is at least
    the lower tail (1 - confidence) / 2, the interval is [min, max] whatever the values (n <= 3 at
    95%), and that covers the mean far less often than claimed: half the time at n = 2.
    """
    return n > 0 and float(n) ** -n < (1 - confidence) / 2


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
