"""Win, draw and loss rates per criterion over the judged pairs, with Wilson score intervals."""

from __future__ import annotations

from collections import Counter

from scipy.stats import binomtest

from crsim.studies.pairwise.records import CriterionSummary, PairResult, Rate


def rate(count: int, n: int, confidence: float) -> Rate:
    """`count / n` with its Wilson score interval; all None for n = 0."""
    if n == 0:
        return Rate(rate=None, ci_low=None, ci_high=None)
    interval = binomtest(count, n).proportion_ci(confidence_level=confidence, method="wilson")
    return Rate(rate=count / n, ci_low=float(interval.low), ci_high=float(interval.high))


def summarize(
    pairs: list[PairResult], criteria: list[str], confidence: float = 0.95
) -> list[CriterionSummary]:
    """Per-criterion counts and rates over the pairs."""
    summaries = []
    for criterion in criteria:
        found = [o for p in pairs for o in p.outcomes if o.criterion == criterion]
        counts = Counter(o.outcome for o in found if o.outcome is not None)
        n = sum(counts.values())
        summaries.append(
            CriterionSummary(
                criterion=criterion,
                n=n,
                wins=counts["win"],
                draws=counts["draw"],
                losses=counts["loss"],
                disagreements=sum(1 for o in found if o.orders_agree is False),
                errors=sum(1 for o in found if o.outcome is None),
                win=rate(counts["win"], n, confidence),
                draw=rate(counts["draw"], n, confidence),
                loss=rate(counts["loss"], n, confidence),
            )
        )
    return summaries
