"""PNG bar charts of the distributions (matplotlib figures drawn by the Agg canvas: no display,
no pyplot state, no global backend switch).

Diversity: one file per measure, category shares with one bar per simulator group (as in
RecUserSim's Figure 3). Controllability: one file per group, one panel per linguistic pattern,
category shares with one bar per persona level (as in its Figure 4).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from crsim.studies.language.diversity import ControllabilityReport, Distribution, DiversityReport
from crsim.studies.language.measures import CATEGORIES, Measure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

TITLES = {
    Measure.LENGTH: "Sentence length",
    Measure.FORMALITY: "Formality",
    Measure.RICHNESS: "Information richness",
}


def _figure(width: float, height: float) -> Figure:
    """A figure on its own Agg canvas (matplotlib is imported on first use: it is slow to import)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height))
    FigureCanvasAgg(figure)
    return figure


def safe_name(text: str) -> str:
    """A file-name part from a group name."""
    return re.sub(r"[^\w.\-]+", "_", text).strip("_") or "group"


def _bars(axes: Axes, measure: Measure, series: Sequence[tuple[str, Distribution]], title: str) -> None:
    """Grouped bars: categories on x, one bar per series, heights = shares of the series' utterances."""
    categories = CATEGORIES[measure]
    x = np.arange(len(categories))
    width = 0.8 / max(1, len(series))
    for index, (label, dist) in enumerate(series):
        heights = [dist.proportions.get(c) or 0.0 for c in categories]
        axes.bar(x + (index - (len(series) - 1) / 2) * width, heights, width, label=f"{label} (n={dist.n})")
    axes.set_xticks(x, list(categories))
    axes.set_ylim(0, 1)
    axes.set_ylabel("share of utterances")
    axes.set_title(title)
    axes.legend(fontsize="small")


def plot_diversity(report: DiversityReport, out_dir: Path) -> list[Path]:
    """`diversity_<measure>.png` per measure; returns the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for measure in Measure:
        series = [(g.group, g.distributions[measure.value]) for g in report.groups]
        figure = _figure(6, 4)
        _bars(figure.subplots(), measure, series, f"{TITLES[measure]} ({report.method})")
        figure.tight_layout()
        path = out_dir / f"diversity_{measure.value}.png"
        figure.savefig(path, dpi=100)
        written.append(path)
    return written


def plot_controllability(report: ControllabilityReport, out_dir: Path) -> list[Path]:
    """`controllability_<group>.png` per group, one panel per pattern; returns the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    groups: dict[str, list[tuple[str, Measure, dict[str, Distribution]]]] = {}
    for result in report.results:
        groups.setdefault(result.group, []).append((result.pattern, result.measure, result.levels))
    written: list[Path] = []
    for group, panels in groups.items():
        figure = _figure(5 * len(panels), 4)
        axes = figure.subplots(1, len(panels), squeeze=False)
        for ax, (pattern, measure, levels) in zip(axes[0], panels, strict=True):
            _bars(ax, measure, list(levels.items()), f"{TITLES[measure]} by persona {pattern}")
        figure.suptitle(f"{group} ({report.method})")
        figure.tight_layout()
        path = out_dir / f"controllability_{safe_name(group)}.png"
        if path in written:  # two group names that differ only in characters a file name cannot hold
            path = path.with_stem(f"{path.stem}_{len(written)}")
        figure.savefig(path, dpi=100)
        written.append(path)
    return written
