"""Bootstrap intervals of large samples: bounded memory, and resampling by counts when values repeat."""

from __future__ import annotations

import numpy as np
import pytest

from crsim.eval import stats
from crsim.eval.stats import aggregate


def test_large_samples_with_few_distinct_values_resample_by_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    values = np.random.default_rng(1).integers(2, 9, 20_000).astype(float).tolist()
    fast = aggregate(values, seed=3)
    assert fast == aggregate(values, seed=3)  # deterministic for a seed
    monkeypatch.setattr(stats, "_LARGE", 10**9)  # force scipy's resampling of the values
    slow = aggregate(values, seed=3)
    assert fast.mean == slow.mean
    assert fast.ci_low is not None and fast.ci_high is not None and slow.ci_low is not None
    assert slow.ci_high is not None
    width = slow.ci_high - slow.ci_low
    assert abs(fast.ci_low - slow.ci_low) < 0.05 * width
    assert abs(fast.ci_high - slow.ci_high) < 0.05 * width


def test_small_samples_keep_scipys_intervals(monkeypatch: pytest.MonkeyPatch) -> None:
    values = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0]
    before = aggregate(values, seed=5)
    monkeypatch.setattr(stats, "_RESAMPLED_VALUES", 3)  # one resample per batch: same draws
    assert aggregate(values, seed=5) == before
