"""The paired tests of a pair's per-user differences (exact McNemar, sign-flip permutation, paired t)
and Holm's correction over the pairs of one simulator and metric."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

ALPHA = 0.05
#: Sign flips drawn by the permutation test (all 2**n of them when that is fewer).
PERMUTATIONS = 9999

#: Above this many users, the paired t-test replaces the permutation test (see the module docstring).
PERMUTATION_MAX_USERS = 1000

TestName = Literal["mcnemar", "permutation", "t"]


def _mean_last_axis(x: np.ndarray, axis: int = -1) -> Any:
    return np.mean(x, axis=axis)


def permutation_pvalues(differences: np.ndarray, *, seed: int = 0, resamples: int = PERMUTATIONS) -> Any:
    """Two-sided sign-flip permutation test of mean difference = 0, along the last axis (so many
    samples can be tested at once); exact when 2**n <= resamples. Returns the p-value(s)."""
    from scipy.stats import permutation_test

    result = permutation_test(
        (differences,),
        _mean_last_axis,
        permutation_type="samples",
        vectorized=True,
        n_resamples=resamples,
        batch=max(1, 4_000_000 // max(1, differences.size)),  # bounded memory, same result
        alternative="two-sided",
        axis=-1,
        rng=np.random.default_rng(seed),
    )
    return result.pvalue


def ttest_pvalues(differences: np.ndarray) -> Any:
    """Two-sided paired t-test (one-sample t-test of the differences against 0), along the last axis;
    p = 1 for differences that are all 0."""
    from scipy.stats import ttest_1samp

    with np.errstate(invalid="ignore", divide="ignore"):
        p = ttest_1samp(differences, 0.0, axis=-1).pvalue
    return np.where(np.isnan(p), 1.0, p)


def paired_test(differences: np.ndarray, *, seed: int = 0) -> tuple[TestName, float]:
    """The test for continuous per-user differences: sign-flip permutation up to
    `PERMUTATION_MAX_USERS` users, the paired t-test above."""
    if differences.size <= PERMUTATION_MAX_USERS:
        return "permutation", float(permutation_pvalues(differences, seed=seed))
    return "t", float(ttest_pvalues(differences))


def mcnemar_pvalue(differences: np.ndarray) -> float:
    """Exact McNemar test for paired 0/1 outcomes: the users where A succeeded and B did not
    (difference +1) against the reverse (-1), binomial with p = 1/2; 1.0 with no discordant user."""
    from scipy.stats import binomtest

    wins, losses = int(np.sum(differences > 0)), int(np.sum(differences < 0))
    if wins + losses == 0:
        return 1.0
    return float(binomtest(wins, wins + losses, 0.5, alternative="two-sided").pvalue)


def holm(p_values: Sequence[float], alpha: float = ALPHA) -> list[float]:
    """Holm-adjusted p-values (statsmodels' multipletests)."""
    if not p_values:
        return []
    from statsmodels.stats.multitest import multipletests

    return [float(p) for p in multipletests(list(p_values), alpha=alpha, method="holm")[1]]
