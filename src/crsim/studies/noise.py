"""The noise floor: how much do runs that differ only in their seed disagree?

K runs of one config with seeds s, s+1, ..., s+K−1 (each a run folder) are compared one by one as
`crsim compare` compares the CRSs of a run (`crsim.studies.compare.compare`). Per simulator × metric:

- the run-to-run spread of each CRS's mean (standard deviation over the K runs, ddof=1);
- the ranking flip rate: the share of runs whose order of CRSs by mean differs from the most common
  order;
- per pair of CRSs, the verdict of each run (A significantly above B, B above A, or no significant
  difference after Holm) and the flip rate: the share of runs whose verdict differs from the most
  common one; and the median smallest difference detectable at 80% power.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from crsim.studies.compare import Comparison, MetricComparison, PairResult

PairVerdict = Literal["A>B", "B>A", "n.s."]

#: The file a noise study writes beside its run folders.
NOISE_FILE = "noise.json"


class CRSSpread(BaseModel):
    crs: str
    means: list[float | None] = Field(description="The CRS's mean in each run, in seed order.")
    sd: float | None = Field(description="Run-to-run standard deviation of the mean (ddof=1).")


class PairNoise(BaseModel):
    crs_a: str
    crs_b: str
    verdicts: list[PairVerdict] = Field(description="Per run: A>B, B>A (significant after Holm) or n.s.")
    flip_rate: float = Field(description="Share of runs whose verdict differs from the most common one.")
    differences: list[float | None]
    min_detectable: float | None = Field(
        description="Median over runs of the 80%-power detectable difference."
    )


class MetricNoise(BaseModel):
    simulator: str
    metric: str
    crss: list[CRSSpread]
    rankings: list[list[str]] = Field(description="Per run: CRSs by mean, best first.")
    ranking_flip_rate: float = Field(description="Share of runs whose ranking differs from the most common.")
    pairs: list[PairNoise]


class Noise(BaseModel):
    seeds: list[int]
    results: list[MetricNoise]


def _verdict(significant: bool, difference: float | None) -> PairVerdict:
    if not significant or difference is None or difference == 0:
        return "n.s."
    return "A>B" if difference > 0 else "B>A"


def _flip_rate(values: Sequence[object]) -> float:
    if not values:
        return 0.0
    _, most = Counter(values).most_common(1)[0]
    return 1.0 - most / len(values)


def noise(seeds: Sequence[int], comparisons: Sequence[Comparison]) -> Noise:
    """The noise floor of K comparisons of runs that differ in their seed (same order as `seeds`)."""
    cells: dict[tuple[str, str], list[MetricComparison | None]] = defaultdict(
        lambda: [None] * len(comparisons)
    )
    for k, comparison in enumerate(comparisons):
        for found in comparison.results:
            cells[(found.simulator, found.metric)][k] = found
    return Noise(
        seeds=list(seeds), results=[_metric_noise(sim, metric, runs) for (sim, metric), runs in cells.items()]
    )


def _metric_noise(simulator: str, metric: str, runs: list[MetricComparison | None]) -> MetricNoise:
    rankings = [[e.crs for e in run.ranking] if run is not None else [] for run in runs]
    spreads = []
    for name in sorted({crs for ranking in rankings for crs in ranking}):
        means = [
            next((e.mean for e in run.ranking if e.crs == name), None) if run is not None else None
            for run in runs
        ]
        present = [m for m in means if m is not None]
        sd = float(np.std(present, ddof=1)) if len(present) >= 2 else None
        spreads.append(CRSSpread(crs=name, means=means, sd=sd))
    pairs: dict[tuple[str, str], list[PairResult | None]] = defaultdict(lambda: [None] * len(runs))
    for k, run in enumerate(runs):
        for result in run.pairs if run is not None else []:
            pairs[(result.crs_a, result.crs_b)][k] = result
    pair_rows = []
    for (a, b), found in pairs.items():
        verdicts = [_verdict(r.significant, r.difference) if r is not None else "n.s." for r in found]
        mdds = [r.min_detectable for r in found if r is not None and r.min_detectable is not None]
        pair_rows.append(
            PairNoise(
                crs_a=a,
                crs_b=b,
                verdicts=verdicts,
                flip_rate=_flip_rate(verdicts),
                differences=[r.difference if r is not None else None for r in found],
                min_detectable=float(np.median(mdds)) if mdds else None,
            )
        )
    return MetricNoise(
        simulator=simulator,
        metric=metric,
        crss=spreads,
        rankings=rankings,
        ranking_flip_rate=_flip_rate([tuple(r) for r in rankings]),
        pairs=pair_rows,
    )


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def noise_lines(found: Noise) -> list[str]:
    """The noise floor as text: per simulator × metric, the spread, ranking flips and pair flips."""
    lines = [f"{len(found.seeds)} runs, seeds {', '.join(map(str, found.seeds))}", ""]
    for metric in found.results:
        flips = f"ranking flips in {metric.ranking_flip_rate:.0%} of runs"
        title = f"{metric.metric} · simulator {metric.simulator} · {flips}"
        lines += [title, "-" * min(len(title), 100)]
        for spread in metric.crss:
            means = ", ".join(_num(m) for m in spread.means)
            lines.append(f"  {spread.crs[:36]:<36} run-to-run SD {_num(spread.sd)}  (means {means})")
        for pair in metric.pairs:
            counts = Counter(pair.verdicts)
            shown = ", ".join(f"{v} ×{counts[v]}" for v in ("A>B", "B>A", "n.s.") if counts[v])
            lines.append(
                f"  {pair.crs_a[:24]} vs {pair.crs_b[:24]}: {shown}; flips {pair.flip_rate:.0%}; "
                f"detectable at 80% power {_num(pair.min_detectable)}"
            )
        lines.append("")
    return lines
