"""Bootstrap aggregation: edge cases, coverage of the mean, narrowing with n, determinism."""

from __future__ import annotations

import random
import warnings

import pytest

from crsim.eval.stats import aggregate, interval_possible


def sample(n: int, seed: int = 7) -> list[float]:
    rng = random.Random(seed)
    return [float(rng.random() < 0.4) for _ in range(n)]


def test_no_values() -> None:
    result = aggregate([None, None])
    assert (result.mean, result.std, result.ci_low, result.ci_high) == (None, None, None, None)
    assert (result.n, result.missing) == (0, 2)
    assert aggregate([]).n == 0


def test_too_few_values_give_no_interval_and_constant_values_a_point_one() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        one = aggregate([0.25])
        two, three, four = aggregate([0.0, 1.0]), aggregate([0.0, 1.0, 1.0]), aggregate([0.0, 1.0, 1.0, 0.0])
        constant = aggregate([1.0, 1.0, 1.0, 1.0, None])
    # One value: no spread and no interval (not a zero-width "95%" interval).
    assert (one.mean, one.std, one.ci_low, one.ci_high, one.n) == (0.25, None, None, None, 1)
    # Two or three values: the percentile interval could only be [min, max] (about 50% / 75% coverage).
    assert (two.std, two.ci_low, two.ci_high) == (pytest.approx(2**-0.5), None, None)
    assert (three.ci_low, three.ci_high) == (None, None)
    assert four.ci_low is not None and four.ci_high is not None
    assert 0.0 <= four.ci_low < 0.5 < four.ci_high <= 1.0
    assert (constant.mean, constant.std, constant.ci_low, constant.ci_high) == (1.0, 0.0, 1.0, 1.0)
    assert (constant.n, constant.missing) == (4, 1)


def test_the_smallest_sample_with_an_interval_depends_on_the_level() -> None:
    assert [n for n in range(1, 8) if not interval_possible(n, 0.95)] == [1, 2, 3]
    assert [n for n in range(1, 8) if not interval_possible(n, 0.8)] == [1, 2]
    assert aggregate([0.0, 1.0, 1.0], confidence=0.8).ci_low is not None


def test_mean_and_std_ignore_missing() -> None:
    result = aggregate([0.0, None, 1.0, 0.5])
    assert result.mean == pytest.approx(0.5)
    assert result.std == pytest.approx(0.5)
    assert result.missing == 1


def test_ci_contains_the_mean_and_narrows_with_n() -> None:
    widths = []
    for n in (20, 200, 2000):
        result = aggregate(sample(n))
        assert result.ci_low is not None and result.ci_high is not None and result.mean is not None
        assert result.ci_low < result.mean < result.ci_high
        widths.append(result.ci_high - result.ci_low)
    assert widths[0] > widths[1] > widths[2]
    assert widths[2] < 0.06  # about 2 * 1.96 * sqrt(0.24 / 2000) = 0.043


def test_confidence_level_widens_the_interval() -> None:
    values = sample(300)
    narrow, wide = aggregate(values, confidence=0.8), aggregate(values, confidence=0.99)
    assert narrow.ci_low is not None and narrow.ci_high is not None
    assert wide.ci_low is not None and wide.ci_high is not None
    assert wide.ci_high - wide.ci_low > narrow.ci_high - narrow.ci_low
    assert wide.confidence == 0.99


def test_deterministic_for_a_seed() -> None:
    rng = random.Random(1)
    values = [rng.random() for _ in range(100)]
    assert aggregate(values, seed=3) == aggregate(values, seed=3)
    assert aggregate(values, seed=3) != aggregate(values, seed=4)


def test_non_finite_values_are_rejected() -> None:
    with pytest.raises(ValueError, match="non-finite"):
        aggregate([1.0, float("nan")])
