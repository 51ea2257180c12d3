"""What the report's plots need besides the drawing: one colour per series, which metrics are 0/1,
binomial intervals, judge scales and rank ranges.

A series is one CRS × simulator pairing (of one run, when several are shown). Every plot of one
report takes its colours from one `Palette`, so a colour means the same pairing everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.colors import to_hex, to_rgb

from crsim.core.errors import CrsimError
from crsim.core.plugins import ComponentSpec
from crsim.eval.metrics.base import Metric
from crsim.model.run_folder.summary import MetricInfo

#: One hue per CRS (tab10); after ten CRSs the hues repeat.
HUES = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
]  # fmt: skip
#: One marker per simulator (and run), so pairings of one CRS differ in shape as well as shade.
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "*"]
#: The normal quantile of a two-sided 95% interval.
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Series:
    """One CRS × simulator pairing, of one run when the report shows several."""

    crs: str
    simulator: str
    run: str | None = None

    @property
    def name(self) -> str:
        text = f"{self.crs} × {self.simulator}"
        return f"{text} [{self.run}]" if self.run is not None else text


@dataclass(frozen=True)
class Style:
    colour: str
    marker: str


def shade(hue: str, position: int, count: int) -> str:
    """The `position`-th of `count` shades of `hue`, from darker (0) to lighter (count - 1)."""
    if count <= 1:
        return hue
    mix = -0.35 + 0.85 * position / (count - 1)  # -0.35: towards black, +0.5: half way to white
    r, g, b = to_rgb(hue)
    if mix < 0:
        return to_hex((r * (1 + mix), g * (1 + mix), b * (1 + mix)))
    return to_hex((r + (1 - r) * mix, g + (1 - g) * mix, b + (1 - b) * mix))


class Palette:
    """A colour and a marker for every series of one report: the hue names the CRS, the shade the
    simulator (and run), the marker the simulator by name (one simulator in two runs keeps one
    marker). Built once from all series, in report order."""

    def __init__(self, series: Sequence[Series]) -> None:
        crss = list(dict.fromkeys(s.crs for s in series))
        variants = list(dict.fromkeys((s.simulator, s.run) for s in series))
        simulators = list(dict.fromkeys(s.simulator for s in series))
        self.styles: dict[str, Style] = {}
        self.crs_colours = {crs: HUES[i % len(HUES)] for i, crs in enumerate(crss)}
        for s in series:
            own = [v for v in variants if Series(s.crs, v[0], v[1]) in series]
            position = own.index((s.simulator, s.run))
            colour = shade(self.crs_colours[s.crs], position, len(own))
            marker = MARKERS[simulators.index(s.simulator) % len(MARKERS)]
            self.styles[s.name] = Style(colour, marker)

    def colour(self, name: str) -> str:
        return self.styles[name].colour if name in self.styles else "#555555"

    def marker(self, name: str) -> str:
        return self.styles[name].marker if name in self.styles else "o"


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion (95% by default): unlike the normal approximation it
    stays inside [0, 1] and is not zero-width at 0 of n or n of n."""
    if n <= 0:
        raise ValueError("a proportion needs n >= 1")
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def declared_binary(
    recorded: Mapping[str, MetricInfo] | None, specs: Sequence[ComponentSpec]
) -> dict[str, bool]:
    """Metric label -> its `Metric.binary` declaration, for the run's metrics that declare one.

    From the metadata `summary.json` records (`recorded`); a summary written before crsim recorded
    it (None) has the run's metrics (`specs`) built here to ask them. Evaluators (judges and the
    like) and metrics that cannot be built (a plug-in no longer installed) declare nothing; their
    values decide."""
    if recorded is not None:
        return {label: info.binary for label, info in recorded.items() if info.binary is not None}
    from crsim.eval.scores import build_metrics

    found: dict[str, bool] = {}
    for spec in specs:
        try:
            (built,) = build_metrics([spec])
        except (CrsimError, ValueError, TypeError):
            continue
        if isinstance(built, Metric) and built.binary is not None:
            found[built.label] = built.binary
    return found


def binary_metrics(
    values: Mapping[str, Iterable[Sequence[float]]], declared: Mapping[str, bool]
) -> list[str]:
    """Labels drawn as proportions: declared 0/1, or undeclared with every value 0 or 1."""
    found = []
    for label, groups in values.items():
        if label in declared:
            if declared[label]:
                found.append(label)
            continue
        seen = [np.asarray(group, dtype=float) for group in groups]
        if any(v.size for v in seen) and all(np.all((v == 0.0) | (v == 1.0)) for v in seen):
            found.append(label)
    return found


def judge_scale(label: str) -> tuple[float, float] | None:
    """The (lowest, highest) score of a judged aspect `rubric/aspect` from a shipped rubric's
    declaration (a derived aspect: the sums of its parts'); None when the rubric is not shipped."""
    from crsim.eval.judge.rubric import load_rubric, shipped_rubrics

    rubric_name, _, aspect = label.partition("/")
    if rubric_name not in shipped_rubrics():
        return None
    rubric = load_rubric(rubric_name)
    if aspect in rubric.aspects:
        low, high = rubric.aspects[aspect].scale
        return float(low), float(high)
    if aspect in rubric.derived:
        parts = [rubric.aspects[part].scale for part in rubric.derived[aspect].sum]
        return float(sum(p[0] for p in parts)), float(sum(p[1] for p in parts))
    return None


def rank_range(name: str, means: Mapping[str, float], different: set[frozenset[str]]) -> tuple[int, int]:
    """The best and worst place (1 = highest mean) `name` can hold when only the pairs in `different`
    are told apart: CRSs it is not significantly different from could stand either side of it."""
    above = sum(1 for other, m in means.items() if frozenset((name, other)) in different and m > means[name])
    below = sum(1 for other, m in means.items() if frozenset((name, other)) in different and m < means[name])
    return 1 + above, len(means) - below


def rank_text(best: int, worst: int) -> str:
    return str(best) if best == worst else f"{best}–{worst}"
