"""Report plots as PNG bytes, drawn with matplotlib's Agg canvas (no pyplot, no global backend change)."""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

#: Enough distinct colours for the series of a typical comparison (tab10, then tab20's light shades).
_COLOURS = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
]  # fmt: skip


def short(name: str, limit: int = 40) -> str:
    """A tick or legend label cut to `limit` characters (the tables keep the full names)."""
    return name if len(name) <= limit else name[: limit - 1] + "…"


def colour(index: int) -> str:
    return _COLOURS[index % len(_COLOURS)]


def png_data_uri(figure: Figure) -> str:
    """The figure as a `data:image/png;base64,...` URI, so the HTML file needs nothing beside it."""
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def turn_curves(
    panels: Sequence[tuple[str, Mapping[str, Sequence[float | None]]]],
) -> Figure:
    """One panel per metric (e.g. PC_t@10, Recall@(t,10)); one line per series over turns 1..T."""
    figure = Figure(figsize=(5.2 * len(panels), 3.6))
    for position, (title, series) in enumerate(panels, start=1):
        axes = figure.add_subplot(1, len(panels), position)
        for index, (name, means) in enumerate(series.items()):
            turns = [t for t, v in enumerate(means, start=1) if v is not None]
            points = [v for v in means if v is not None]
            axes.plot(turns, points, marker="o", markersize=3, color=colour(index), label=short(name))
        axes.set_title(title)
        axes.set_xlabel("turn t")
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        if position == 1:
            axes.legend(fontsize=8, loc="best")
    return figure


def distributions(per_metric: Mapping[str, Mapping[str, Sequence[float]]], columns: int = 3) -> Figure:
    """Box plots of per-dialogue values: one panel per metric, one box per series."""
    labels = list(per_metric)
    rows = (len(labels) + columns - 1) // columns
    series_names = sorted({name for groups in per_metric.values() for name in groups})
    width = max(4.2, 0.9 * len(series_names) + 1.5)
    figure = Figure(figsize=(width * min(columns, len(labels)), 3.2 * rows), layout="constrained")
    for position, label in enumerate(labels, start=1):
        axes = figure.add_subplot(rows, min(columns, len(labels)), position)
        groups = per_metric[label]
        names = [n for n in series_names if groups.get(n)]
        boxes = axes.boxplot([list(groups[n]) for n in names], patch_artist=True, showmeans=True, widths=0.6)
        for index, patch in enumerate(boxes["boxes"]):
            patch.set_facecolor(colour(series_names.index(names[index])))
            patch.set_alpha(0.55)
        axes.set_xticks(
            range(1, len(names) + 1), [short(n) for n in names], rotation=25, ha="right", fontsize=8
        )
        axes.set_title(label, fontsize=10)
        axes.grid(axis="y", alpha=0.3)
    return figure


def bars_with_intervals(
    per_metric: Mapping[str, Mapping[str, tuple[float, float | None, float | None]]], columns: int = 3
) -> Figure:
    """Mean and confidence interval per series (e.g. judge score by CRS), one panel per metric."""
    labels = list(per_metric)
    rows = (len(labels) + columns - 1) // columns
    figure = Figure(figsize=(4.6 * min(columns, len(labels)), 3.2 * rows), layout="constrained")
    for position, label in enumerate(labels, start=1):
        axes = figure.add_subplot(rows, min(columns, len(labels)), position)
        names = list(per_metric[label])
        means = [per_metric[label][n][0] for n in names]
        lower = [max(0.0, m - (per_metric[label][n][1] or m)) for m, n in zip(means, names, strict=True)]
        upper = [max(0.0, (per_metric[label][n][2] or m) - m) for m, n in zip(means, names, strict=True)]
        axes.bar(
            range(len(names)),
            means,
            yerr=[lower, upper],
            capsize=4,
            color=[colour(i) for i in range(len(names))],
            alpha=0.75,
        )
        axes.set_xticks(range(len(names)), [short(n) for n in names], rotation=25, ha="right", fontsize=8)
        axes.set_title(label, fontsize=10)
        axes.grid(axis="y", alpha=0.3)
    return figure


def rank_chart(columns: Sequence[str], ranks: Mapping[str, Sequence[int | None]], metric: str) -> Figure:
    """A bump chart: x = simulators (one column each), y = the rank each CRS gets there (1 = best)."""
    figure = Figure(figsize=(max(4.5, 1.8 * len(columns) + 2.5), 0.5 * len(ranks) + 2.5))
    axes = figure.add_subplot(1, 1, 1)
    for index, (name, places) in enumerate(ranks.items()):
        xs = [x for x, r in enumerate(places) if r is not None]
        ys = [r for r in places if r is not None]
        axes.plot(xs, ys, marker="o", markersize=9, linewidth=2.5, color=colour(index), label=name)
        if xs:
            axes.annotate(
                short(name), (xs[-1], ys[-1]), xytext=(8, 0), textcoords="offset points", va="center"
            )
    axes.set_xticks(range(len(columns)), [short(c, 24) for c in columns])
    axes.set_xlim(-0.4, len(columns) - 0.4 + 0.6)
    most = max((r for places in ranks.values() for r in places if r is not None), default=1)
    axes.set_yticks(range(1, most + 1))
    axes.set_ylim(most + 0.5, 0.5)
    axes.set_ylabel(f"rank by {metric} (1 = best)")
    axes.grid(axis="y", alpha=0.3)
    return figure
