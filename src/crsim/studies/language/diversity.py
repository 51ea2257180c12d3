"""Diversity and controllability of simulated users' language (RecUserSim §4.1.2 and §4.1.3).

Diversity: per simulator, the distribution of its user utterances over the categories of each
measure, and how uniform it is (normalised Shannon entropy: 1 = every category equally often,
0 = one category only). Controllability: the same distributions split by the persona's
linguistic pattern, with tests of whether the pattern moves the measure the intended way.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field
from scipy import stats

from crsim.model import annotations as keys
from crsim.studies.language.measures import (
    CATEGORIES,
    DialogueMeasures,
    Measure,
    Thresholds,
    UtteranceMeasures,
)

Unit = Literal["dialogue", "utterance"]
Direction = Literal["intended", "opposite", "no significant effect", "not testable"]

#: Persona key -> the measure it should control and its levels from low to high.
PATTERNS: dict[str, tuple[Measure, tuple[str, ...]]] = {
    keys.SENTENCE_LENGTH.name: (Measure.LENGTH, ("short", "medium", "long")),
    keys.INFORMATION_RICHNESS.name: (Measure.RICHNESS, ("low", "high")),
    keys.FORMALITY.name: (Measure.FORMALITY, ("informal", "neutral", "formal")),
}


class Distribution(BaseModel):
    """Utterances per category of one measure; `errors` had no value (unreadable judge answers)."""

    measure: Measure
    counts: dict[str, int] = Field(description="Category -> utterances, in the measure's category order.")
    proportions: dict[str, float | None] = Field(description="Category -> share of the measured utterances.")
    n: int = Field(description="Utterances with a value.")
    errors: int = Field(0, description="Utterances without a value (unreadable answer or failed call).")
    entropy: float | None = Field(description="Normalised Shannon entropy of the counts; None when n = 0.")
    mean: float | None = Field(description="Mean of the measure as a number (words, key points, -1/0/1).")
    median: float | None = None


def normalized_entropy(counts: Sequence[int]) -> float | None:
    """H(p) / ln(k) over k categories (empty ones included): 1 = uniform, 0 = a single category.
    None without observations or with fewer than two categories."""
    total = sum(counts)
    if total == 0 or len(counts) < 2:
        return None
    probabilities = [c / total for c in counts if c > 0]
    entropy = -sum(p * math.log(p) for p in probabilities)
    return max(0.0, min(1.0, entropy / math.log(len(counts))))


def distribution(utterances: Sequence[UtteranceMeasures], measure: Measure) -> Distribution:
    categories = CATEGORIES[measure]
    found = Counter(u.category(measure) for u in utterances)
    counts = {c: found.get(c, 0) for c in categories}
    n = sum(counts.values())
    numbers = [x for u in utterances if (x := u.number(measure)) is not None]
    return Distribution(
        measure=measure,
        counts=counts,
        proportions={c: (k / n if n else None) for c, k in counts.items()},
        n=n,
        errors=sum(u.error(measure) is not None for u in utterances),
        entropy=normalized_entropy(list(counts.values())),
        mean=float(np.mean(numbers)) if numbers else None,
        median=float(np.median(numbers)) if numbers else None,
    )


class GroupDiversity(BaseModel):
    group: str = Field(description="The simulator id (`id@run` when one id comes from several runs).")
    dialogues: int
    utterances: int
    distributions: dict[str, Distribution] = Field(description="Measure -> distribution.")


class DiversityReport(BaseModel):
    method: str = Field(description="How formality and key points were measured: rules or llm.")
    thresholds: Thresholds
    runs: list[str]
    groups: list[GroupDiversity]


def _by_group(measured: Sequence[DialogueMeasures]) -> dict[str, list[DialogueMeasures]]:
    groups: dict[str, list[DialogueMeasures]] = {}
    for item in measured:
        groups.setdefault(item.group, []).append(item)
    return dict(sorted(groups.items()))


def diversity(
    measured: Sequence[DialogueMeasures], *, method: str, thresholds: Thresholds, runs: Sequence[str] = ()
) -> DiversityReport:
    """Per group, the distribution of every measure over its user utterances."""
    groups = []
    for group, items in _by_group(measured).items():
        utterances = [u for item in items for u in item.utterances]
        groups.append(
            GroupDiversity(
                group=group,
                dialogues=len(items),
                utterances=len(utterances),
                distributions={m.value: distribution(utterances, m) for m in Measure},
            )
        )
    return DiversityReport(method=method, thresholds=thresholds, runs=list(runs), groups=groups)


# --- controllability ---------------------------------------------------------------------------


class PatternTest(BaseModel):
    """Whether the pattern's extreme levels differ in the intended direction, and whether the
    category distribution depends on the level at all."""

    low: str = Field(description="The low extreme level, e.g. 'short'.")
    high: str = Field(description="The high extreme level, e.g. 'long'.")
    unit: Unit = Field(description="What one observation of the Mann-Whitney test is.")
    n_low: int
    n_high: int
    median_low: float | None = None
    median_high: float | None = None
    mann_whitney_u: float | None = Field(None, description="U of the high level's values against the low's.")
    p_value: float | None = Field(None, description="Two-sided Mann-Whitney p-value.")
    effect: float | None = Field(
        None,
        description="Rank-biserial correlation in [-1, 1]; positive = the high level gives higher values.",
    )
    direction: Direction
    chi2: float | None = Field(None, description="Chi-square of the level × category table of utterances.")
    chi2_p: float | None = None
    chi2_dof: int | None = None
    cramers_v: float | None = None
    note: str | None = Field(None, description="Why a test could not be run.")


class PatternControl(BaseModel):
    group: str
    pattern: str = Field(description="The persona key, e.g. 'sentence_length'.")
    measure: Measure
    levels: dict[str, Distribution] = Field(description="Persona level -> distribution of the measure.")
    dialogues: dict[str, int] = Field(description="Persona level -> dialogues.")
    unspecified: int = Field(description="Dialogues of the group whose persona does not give this key.")
    test: PatternTest


class ControllabilityReport(BaseModel):
    method: str
    thresholds: Thresholds
    runs: list[str]
    alpha: float
    unit: Unit
    results: list[PatternControl]


def _level_order(levels: Sequence[str], known: tuple[str, ...]) -> list[str]:
    """Known levels in their order, then any other levels alphabetically."""
    return [lv for lv in known if lv in levels] + sorted(lv for lv in levels if lv not in known)


def _observations(items: Sequence[DialogueMeasures], measure: Measure, unit: Unit) -> list[float]:
    """Utterance values, or per-dialogue means (dialogues with no value left out)."""
    if unit == "utterance":
        return [x for item in items for u in item.utterances if (x := u.number(measure)) is not None]
    means = []
    for item in items:
        values = [x for u in item.utterances if (x := u.number(measure)) is not None]
        if values:
            means.append(float(np.mean(values)))
    return means


def _mann_whitney(low: list[float], high: list[float], alpha: float) -> dict[str, Any]:
    if len(low) < 2 or len(high) < 2:
        return {"direction": "not testable", "note": "fewer than 2 observations at an extreme level"}
    if len(set(low) | set(high)) == 1:
        return {
            "direction": "no significant effect",
            "note": "all values equal",
            "effect": 0.0,
            "p_value": 1.0,
        }
    result = stats.mannwhitneyu(high, low, alternative="two-sided")
    u = float(result.statistic)
    p = float(result.pvalue)
    effect = 2.0 * u / (len(low) * len(high)) - 1.0
    direction: Direction = "no significant effect"
    if p < alpha:
        direction = "intended" if effect > 0 else "opposite"
    return {"mann_whitney_u": u, "p_value": p, "effect": effect, "direction": direction}


def _chi_square(tables: list[list[int]]) -> dict[str, Any]:
    """Chi-square of independence on the rows (levels) and columns (categories) that are not empty."""
    table = np.array(tables, dtype=float)
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0] if table.size else table
    if table.ndim != 2 or min(table.shape, default=0) < 2:
        return {}
    result = stats.chi2_contingency(table)
    n = table.sum()
    v = math.sqrt(float(result.statistic) / (n * (min(table.shape) - 1)))
    return {
        "chi2": float(result.statistic),
        "chi2_p": float(result.pvalue),
        "chi2_dof": int(result.dof),
        "cramers_v": v,
    }


def _control(
    group: str, items: Sequence[DialogueMeasures], pattern: str, alpha: float, unit: Unit
) -> PatternControl | None:
    measure, known = PATTERNS[pattern]
    by_level: dict[str, list[DialogueMeasures]] = {}
    for item in items:
        if pattern in item.pattern:
            by_level.setdefault(item.pattern[pattern], []).append(item)
    if not by_level:
        return None
    order = _level_order(list(by_level), known)
    levels = {lv: distribution([u for it in by_level[lv] for u in it.utterances], measure) for lv in order}
    low_items, high_items = by_level.get(known[0], []), by_level.get(known[-1], [])
    low, high = _observations(low_items, measure, unit), _observations(high_items, measure, unit)
    if low_items and high_items:
        tested = _mann_whitney(low, high, alpha)
    else:
        missing = known[0] if not low_items else known[-1]
        tested = {"direction": "not testable", "note": f"no dialogues with {pattern} = {missing}"}
    tables = [list(levels[lv].counts.values()) for lv in order]
    test = PatternTest.model_validate(
        {
            "low": known[0],
            "high": known[-1],
            "unit": unit,
            "n_low": len(low),
            "n_high": len(high),
            "median_low": float(np.median(low)) if low else None,
            "median_high": float(np.median(high)) if high else None,
            **tested,
            **_chi_square(tables),
        }
    )
    return PatternControl(
        group=group,
        pattern=pattern,
        measure=measure,
        levels=levels,
        dialogues={lv: len(by_level[lv]) for lv in order},
        unspecified=sum(pattern not in item.pattern for item in items),
        test=test,
    )


def controllability(
    measured: Sequence[DialogueMeasures],
    *,
    method: str,
    thresholds: Thresholds,
    runs: Sequence[str] = (),
    alpha: float = 0.05,
    unit: Unit = "dialogue",
) -> ControllabilityReport:
    """Per group and persona key present, the measure's distribution per level and the tests."""
    results = []
    for group, items in _by_group(measured).items():
        for pattern in PATTERNS:
            control = _control(group, items, pattern, alpha, unit)
            if control is not None:
                results.append(control)
    return ControllabilityReport(
        method=method, thresholds=thresholds, runs=list(runs), alpha=alpha, unit=unit, results=results
    )
