"""Comparing the CRSs of runs: the statistics of one pair, all pairs of one simulator and metric
(Holm-corrected, with winners and a ranking), the verdicts across metrics, and `compare` over them all."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations

from crsim.core.errors import ConfigError
from crsim.eval.stats import aggregate
from crsim.model.run_folder.summary import Direction
from crsim.studies.compare.columns import Cells, Column, cells_of
from crsim.studies.compare.observation import Observation
from crsim.studies.compare.pairing import PairedSample, pair
from crsim.studies.compare.power import min_detectable, users_needed
from crsim.studies.compare.ranking import rank
from crsim.studies.compare.results import (
    Comparison,
    ComparisonOptions,
    MetricComparison,
    PairResult,
    Verdict,
    VerdictEntry,
)
from crsim.studies.compare.significance import TestName, holm, mcnemar_pvalue, paired_test

#: Users a pair needs before it is tested (with one, every test says p = 1).
MIN_USERS = 2


def compare_pair(
    key: tuple[str, str, str, str],
    a: Column | Sequence[Observation],
    b: Column | Sequence[Observation],
    options: ComparisonOptions,
) -> tuple[PairResult, PairedSample]:
    """The statistics of one pair, `key` = (simulator, metric, CRS A, CRS B), before correction
    (p_holm and significant are filled in by `compare_metric`)."""
    sample = pair(a, b)
    d = sample.differences
    summary = aggregate(list(d), seed=options.seed, confidence=options.confidence)
    test, p = _test(sample, options.seed)
    difference = summary.mean
    return (
        PairResult(
            simulator=key[0],
            metric=key[1],
            crs_a=key[2],
            crs_b=key[3],
            n_users=int(d.size),
            n_pairs=sample.pairs,
            dropped_not_evaluable=sample.not_evaluable,
            dropped_missing=sample.missing,
            unmatched=sample.unmatched,
            mean_a=float(sample.a.mean()) if d.size else None,
            mean_b=float(sample.b.mean()) if d.size else None,
            difference=difference,
            ci_low=summary.ci_low,
            ci_high=summary.ci_high,
            sd=summary.std,
            test=test,
            p_value=p,
            p_holm=None,
            significant=False,
            min_detectable=min_detectable(summary.std, int(d.size), alpha=options.alpha, power=options.power),
            users_for_observed=users_needed(
                difference or 0.0, summary.std, alpha=options.alpha, power=options.power
            ),
            users_for_target=None
            if options.detect is None
            else users_needed(options.detect, summary.std, alpha=options.alpha, power=options.power),
        ),
        sample,
    )


def _test(sample: PairedSample, seed: int) -> tuple[TestName | None, float | None]:
    """The exact McNemar test for a 0/1 metric with one pair per user, else the paired test of
    `paired_test`; no test below `MIN_USERS` users."""
    d = sample.differences
    if d.size < MIN_USERS:
        return None, None
    if sample.binary and sample.one_per_user:
        return "mcnemar", mcnemar_pvalue(d)
    return paired_test(d, seed=seed)


def compare_metric(
    simulator: str,
    metric: str,
    by_crs: Mapping[str, Column],
    options: ComparisonOptions,
    direction: Direction | None = None,
) -> MetricComparison | None:
    """All pairs (or baseline × others) of the CRSs of one simulator and metric, Holm-corrected,
    the winner of each by the metric's `direction` (None: not recorded, read as higher) and the
    ranking with letter groups; None with fewer than two CRSs."""
    recorded = direction is not None
    direction = direction or "higher"
    names = sorted(by_crs)
    if len(names) < 2:
        return None
    if options.baseline is not None and options.baseline not in by_crs:
        return None
    pairs = _pairs(names, options.baseline)
    results = [compare_pair((simulator, metric, x, y), by_crs[x], by_crs[y], options)[0] for x, y in pairs]
    _correct(results, options.alpha, direction)
    return MetricComparison(
        simulator=simulator,
        metric=metric,
        direction=direction,
        direction_recorded=recorded,
        pairs=results,
        ranking=rank(by_crs, results, direction, letters=options.baseline is None),
    )


def _pairs(names: Sequence[str], baseline: str | None) -> list[tuple[str, str]]:
    """The pairs of CRSs to compare: the baseline with each other CRS, or every pair."""
    if baseline is not None:
        return [(baseline, other) for other in names if other != baseline]
    return list(combinations(names, 2))


def _correct(results: Sequence[PairResult], alpha: float, direction: Direction) -> None:
    """Fill in the Holm-corrected p-values of the tested pairs, whether each is significant and, for
    a metric with a direction, the winner of each significant difference."""
    tested = [r for r in results if r.p_value is not None]
    for result, adjusted in zip(
        tested, holm([r.p_value for r in tested if r.p_value is not None]), strict=True
    ):
        result.p_holm = adjusted
        result.significant = adjusted < alpha
        if result.significant and direction != "none" and result.difference:
            a_better = (result.difference > 0) == (direction == "higher")
            result.winner = result.crs_a if a_better else result.crs_b


def verdicts(results: Sequence[MetricComparison]) -> list[Verdict]:
    """Per simulator and pair of CRSs, the metrics' outcomes: wins each way, ties, undirected."""
    found: dict[tuple[str, str, str], Verdict] = {}
    for comparison in results:
        for result in comparison.pairs:
            key = (comparison.simulator, result.crs_a, result.crs_b)
            if key not in found:
                found[key] = Verdict(
                    simulator=key[0],
                    crs_a=key[1],
                    crs_b=key[2],
                    wins_a=0,
                    wins_b=0,
                    ties=0,
                    undirected=0,
                    metrics=[],
                )
            verdict = found[key]
            if comparison.direction == "none":
                verdict.undirected += 1
            elif result.winner == result.crs_a:
                verdict.wins_a += 1
            elif result.winner == result.crs_b:
                verdict.wins_b += 1
            else:
                verdict.ties += 1
            verdict.metrics.append(
                VerdictEntry(
                    metric=comparison.metric,
                    direction=comparison.direction,
                    winner=result.winner,
                    difference=result.difference,
                    p_holm=result.p_holm,
                    test=result.test,
                )
            )
    return list(found.values())


def compare(
    observations: Iterable[Observation] | Cells,
    options: ComparisonOptions | None = None,
    directions: Mapping[str, Direction] | None = None,
) -> Comparison:
    """Paired comparisons per simulator and metric (in the order first seen) between the CRSs, and
    the verdicts across metrics; `observations` are objects or columns (`read_columns`).
    `directions`: metric label -> which way is better (a label not in it is read as higher better,
    and said so).

    An unknown `options.metrics` label or baseline is a ConfigError naming what there is."""
    options = options or ComparisonOptions()
    cells = cells_of(observations)
    metrics = cells.metrics
    wanted = options.metrics if options.metrics is not None else list(metrics)
    unknown = [m for m in wanted if m not in metrics]
    if unknown:
        raise ConfigError(
            f"--metrics: no scores for {', '.join(unknown)}; the runs have {', '.join(metrics) or 'none'}"
        )
    crss = cells.crss
    if options.baseline is not None and options.baseline not in crss:
        raise ConfigError(f"--baseline: no CRS {options.baseline!r}; the runs have {', '.join(sorted(crss))}")
    results = []
    for simulator in cells.simulators:
        for metric in wanted:
            direction = (directions or {}).get(metric)
            found = compare_metric(simulator, metric, cells.cell(simulator, metric), options, direction)
            if found is not None:
                results.append(found)
    return Comparison(options=options, results=results, verdicts=verdicts(results))
