"""Statistical power of a paired comparison: the smallest difference a run could detect, and the users
needed to detect a given difference (two-sided paired t-test, statsmodels' `TTestPower`)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from crsim.studies.compare.significance import ALPHA

POWER = 0.8


@contextmanager
def _quiet_solver() -> Iterator[None]:
    """Silence statsmodels' ConvergenceWarning where its power solver finds no root (it returns nan,
    which the callers turn into None). Its warnings module is imported first: on import it installs
    an "always" filter that would otherwise land in front of ours."""
    import statsmodels.tools.sm_exceptions as sm_exceptions

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sm_exceptions.ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def min_detectable(sd: float | None, n: int, *, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The smallest mean difference a two-sided paired t-test on n users detects with `power`:
    the effect size solved by statsmodels' TTestPower, times the SD of the differences."""
    if sd is None or n < 2 or sd <= 0:
        return None
    from statsmodels.stats.power import TTestPower

    with _quiet_solver():
        effect = float(
            np.ravel(
                TTestPower().solve_power(
                    effect_size=None, nobs=n, alpha=alpha, power=power, alternative="two-sided"
                )
            )[0]
        )
    return effect * sd if math.isfinite(effect) else None


def users_needed(
    difference: float, sd: float | None, *, alpha: float = ALPHA, power: float = POWER
) -> int | None:
    """Users needed to detect `difference` with `power` (two-sided paired t-test, SD of the
    differences as observed); None when it cannot be said (no spread, no difference)."""
    if sd is None or sd <= 0 or difference == 0 or not math.isfinite(difference):
        return None
    from statsmodels.stats.power import TTestPower

    with _quiet_solver():
        try:
            n = TTestPower().solve_power(
                effect_size=abs(difference) / sd, nobs=None, alpha=alpha, power=power, alternative="two-sided"
            )
        except (ValueError, RuntimeError):
            return None
    n = float(np.ravel(n)[0])
    return math.ceil(n) if math.isfinite(n) else None
