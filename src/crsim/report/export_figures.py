"""Every figure of the report as a vector file (SVG or PDF) at a paper's sizes.

Widths are a column (3.5 in) or a page (7 in) of a two-column paper, the file is exactly that size,
and no text is smaller than 8 pt. Each figure draws what its metrics' values are (`crsim.report.kinds`):

- per-turn curves (PC_t@K, Recall@(t,K)): the mean per turn with its 95% band, whole turns on the axis;
- 0/1 metrics: the proportion with its 95% Wilson interval and k/n;
- other metrics: every dialogue's value as a point (a strip), the mean with its 95% bootstrap interval
  (as in the results table), and a box only where it says something (continuous values with a middle
  half of non-zero width); whole-number metrics (Turns, judge scores) get whole-number ticks;
- simulator disagreement: each CRS's mean under each simulator, the simulator named by its id, so the
  same simulator in two runs is one column;
- the studies a run folder holds (`crsim.report.studies`): the sensitivity study's pairwise accuracy
  per degradation and metric, and the fidelity study's distances to people with the human control.

A CRS has one colour and a simulator one marker (and line style) in every figure, whatever the run
(`crsim.report.paper_style`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from crsim.model.run_folder.files import part_path
from crsim.model.run_folder.scores import Aggregate
from crsim.report.collect import Curves
from crsim.report.figures import judge_scale, rank_range, rank_text, wilson
from crsim.report.kinds import Scale, metric_kinds
from crsim.report.paper import Column, columns, evaluated
from crsim.report.paper_style import DOUBLE, FONT, SINGLE, Look, PrintPalette, name, print_style
from crsim.report.sections import ReportContext
from crsim.report.studies import study_print_figures

FigureFormat = Literal["svg", "pdf"]
#: Height of one pairing's row in the panels that list pairings top to bottom, in inches.
ROW = 0.24
#: Panels per figure of value distributions (two rows of two at page width).
PANELS = 4


def _rows_axis(panels: Sequence[Axes], names: Sequence[str]) -> None:
    """Pairings top to bottom on the shared vertical axis (named on the first panel of each row)."""
    if panels:
        panels[0].set_yticks(range(len(names)), names)
        panels[0].set_ylim(len(names) - 0.5, -0.5)
    for axes in panels:
        axes.tick_params(axis="y", length=0)
        axes.grid(axis="x", alpha=0.3, linewidth=0.5)


def _panel_grid(count: int, rows_of_names: int) -> tuple[Figure, list[Axes]]:
    """`count` panels sharing a vertical axis of pairings: one column wide for one panel, else a page
    wide with two panels to a row."""
    per_row = 1 if count == 1 else 2
    rows = (count + per_row - 1) // per_row
    height = rows * (ROW * rows_of_names + 0.75) + 0.15
    figure = Figure(figsize=(SINGLE if count == 1 else DOUBLE, height), layout="constrained")
    grid = figure.subplots(rows, per_row, sharey=True, squeeze=False)
    axes = [a for row in grid for a in row]
    for extra in axes[count:]:
        extra.set_visible(False)
    return figure, axes[:count]


# ---------------------------------------------------------------------------------------------
# The figures


def curves_figure(context: ReportContext, found: Sequence[Column], palette: PrintPalette) -> Figure | None:
    """PC_t@K and Recall@(t,K) per turn: the mean with its 95% band per pairing, whole turns."""
    labels = list(dict.fromkeys(label for v in context.views for label in v.curves))
    longest = max((v.longest for v in context.views), default=0)
    if not labels or longest < 1:
        return None
    rows = (len(found) + 1) // 2
    width = DOUBLE if len(labels) > 1 else SINGLE
    figure = Figure(figsize=(width, 2.3 + 0.17 * rows), layout="constrained")
    drawn = False
    for position, label in enumerate(labels, start=1):
        axes = figure.add_subplot(1, len(labels), position)
        for column in found:
            curve = column.pairing.view.curves.get(label, {}).get(
                (column.pairing.series.crs, column.pairing.series.simulator)
            )
            if curve is not None:
                drawn = _curve(axes, column, curve, longest, palette.look(column)) or drawn
        axes.set_title(label)
        axes.set_xlabel("turn t")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        axes.set_xlim(0.8, longest + 0.2)
        axes.set_ylim(0, 1.02)
        axes.grid(alpha=0.3, linewidth=0.5)
    if not drawn:
        return None
    handles, texts = figure.axes[0].get_legend_handles_labels()
    figure.legend(handles, texts, loc="outside lower center", ncols=2, frameon=False)
    return figure


def _curve(axes: Axes, column: Column, curve: Curves, longest: int, look: Look) -> bool:
    """One pairing's per-turn means as a line with their 95% band; False when no turn has a mean."""
    means = curve.means(longest)
    bands = curve.intervals(longest)
    turns = [t for t, m in enumerate(means, start=1) if m is not None]
    if not turns:
        return False
    axes.plot(
        turns,
        [m for m in means if m is not None],
        color=look.colour,
        marker=look.marker,
        markersize=3,
        linestyle=look.dash,
        label=f"{name(column)} (n = {evaluated(column.pairing)})",
    )
    spans = [(t, b) for t, b in enumerate(bands, start=1) if b is not None]
    if spans:
        axes.fill_between(
            [t for t, _ in spans],
            [max(0.0, b[0]) for _, b in spans],
            [min(1.0, b[1]) for _, b in spans],
            color=look.colour,
            alpha=0.15,
            linewidth=0,
        )
    return True


def proportions_figure(
    labels: Sequence[str], values: Mapping[str, Mapping[Column, Sequence[float]]], palette: PrintPalette
) -> Figure:
    """0/1 metrics: the share scoring 1 with its 95% Wilson interval, k/n at the right."""
    found = list(dict.fromkeys(c for label in labels for c in values[label]))
    figure, panels = _panel_grid(len(labels), len(found))
    for axes, label in zip(panels, labels, strict=True):
        for row, column in enumerate(found):
            seen = values[label].get(column)
            if not seen:
                continue
            k, n = int(sum(seen)), len(seen)
            low, high = wilson(k, n)
            look = palette.look(column)
            axes.plot([low, high], [row, row], color=look.colour, linewidth=1.8, solid_capstyle="butt")
            axes.plot([k / n], [row], marker=look.marker, color=look.colour, markersize=5)
            axes.annotate(
                f"{k}/{n}",
                (1.0, row),
                xycoords=("axes fraction", "data"),
                xytext=(3, 0),
                textcoords="offset points",
                va="center",
                annotation_clip=False,
            )
        axes.set_xlim(0, 1)
        axes.set_title(label)
        axes.set_xlabel("proportion, 95% Wilson CI")
    _rows_axis(panels, [name(c) for c in found])
    return figure


def _offsets(count: int, spread: float = 0.5) -> list[float]:
    """Deterministic vertical jitter in (-spread/2, spread/2): the golden-ratio sequence, so points
    of equal value stand apart in the same places every time."""
    return [((i * 0.6180339887) % 1.0 - 0.5) * spread for i in range(count)]


def _says_something(values: Sequence[float]) -> bool:
    """A box is worth drawing for enough values of several levels whose middle half has a width."""
    if len(values) < 10 or len(set(values)) < 5:
        return False
    ordered = sorted(values)
    return ordered[(3 * len(ordered)) // 4] > ordered[len(ordered) // 4]


def values_figure(
    labels: Sequence[str],
    values: Mapping[str, Mapping[Column, Sequence[float]]],
    kinds: Mapping[str, Scale],
    palette: PrintPalette,
) -> Figure:
    """Per metric: each dialogue's value as a point, the mean with its 95% bootstrap interval (black),
    and for continuous values a box where it says something."""
    found = list(dict.fromkeys(c for label in labels for c in values[label]))
    figure, panels = _panel_grid(len(labels), len(found))
    for axes, label in zip(panels, labels, strict=True):
        for row, column in enumerate(found):
            seen = list(values[label].get(column, []))
            if not seen:
                continue
            look = palette.look(column)
            if kinds[label] is Scale.CONTINUOUS and _says_something(seen):
                axes.boxplot(
                    [seen],
                    positions=[row],
                    orientation="horizontal",
                    widths=0.7,
                    showfliers=False,
                    whis=(0, 100),
                    boxprops={"color": look.colour},
                    whiskerprops={"color": look.colour},
                    capprops={"color": look.colour},
                    medianprops={"color": look.colour},
                )
            axes.scatter(
                seen,
                [row + o for o in _offsets(len(seen))],
                s=6,
                color=look.colour,
                alpha=0.45,
                linewidths=0,
                marker=look.marker,
            )
            _mean_bar(axes, row, column.pairing.summary.metrics.get(label))
        scale = judge_scale(label)
        if scale is not None:
            axes.set_xlim(scale[0] - 0.3, scale[1] + 0.3)
        if kinds[label] is Scale.DISCRETE:
            axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.set_title(label)
    _rows_axis(panels, [name(c) for c in found])
    return figure


def _mean_bar(axes: Axes, row: float, agg: Aggregate | None) -> None:
    if agg is None or agg.mean is None:
        return
    if agg.ci_low is not None and agg.ci_high is not None:
        axes.plot([agg.ci_low, agg.ci_high], [row, row], color="black", linewidth=1.3, zorder=4)
    axes.plot([agg.mean], [row], marker="D", color="black", markeredgecolor="white", markersize=4, zorder=5)


def ranks_figure(
    context: ReportContext, found: Sequence[Column], metric: str, palette: PrintPalette
) -> Figure | None:
    """Each CRS's mean `metric` (95% interval) under each simulator, with the places it could hold:
    paired comparisons (Holm) tell CRSs of one run apart, non-overlapping intervals those of two."""
    cells = _rank_cells(found, metric, several=len(context.views) > 1)
    simulators = [s for s, crss in cells.items() if len(crss) >= 2]
    if len(simulators) < 2:
        return None
    keys = list(dict.fromkeys(k for s in simulators for k in cells[s]))
    width = SINGLE if len(simulators) <= 3 else DOUBLE
    columns_of_legend = 2 if width == SINGLE else 4
    rows = (len(keys) + columns_of_legend - 1) // columns_of_legend
    figure = Figure(figsize=(width, 2.4 + 0.17 * rows), layout="constrained")
    axes = figure.add_subplot(1, 1, 1)
    drawing = _RankDrawing(axes, context, cells, simulators, metric, palette)
    crss = list(dict.fromkeys(c for s in simulators for c in cells[s]))
    step = 0.5 / max(1, len(crss) - 1) if len(crss) > 1 else 0.0
    for index, crs in enumerate(crss):
        drawing.crs(crs, (index - (len(crss) - 1) / 2) * step)
    axes.set_xticks(range(len(simulators)), simulators)
    axes.set_xlim(-0.6, len(simulators) - 0.4)
    axes.set_xlabel("simulator")
    axes.set_ylabel(f"{metric}: mean, 95% CI")
    axes.grid(axis="y", alpha=0.3, linewidth=0.5)
    figure.legend(loc="outside lower center", ncols=min(columns_of_legend, len(keys)), frameon=False)
    return figure


#: Simulator -> CRS (as the legend names it) -> its column and its aggregate of one metric.
RankCells = dict[str, dict[str, tuple[Column, Aggregate]]]


def _rank_cells(found: Sequence[Column], metric: str, several: bool) -> RankCells:
    """The columns that have a mean of `metric`, by simulator and CRS."""
    cells: RankCells = {}
    for column in found:
        agg = column.pairing.summary.metrics.get(metric)
        if agg is not None and agg.mean is not None:
            cells.setdefault(column.simulator, {})[_key(column, several)] = (column, agg)
    return cells


@dataclass
class _RankDrawing:
    """The marks of a ranks figure, one CRS at a time (each CRS shifted sideways by its dodge)."""

    axes: Axes
    context: ReportContext
    cells: RankCells
    simulators: list[str]
    metric: str
    palette: PrintPalette
    legended: set[str] = field(default_factory=set)

    def crs(self, crs: str, dodge: float) -> None:
        """One CRS across the simulators: its mean with interval and the places it could hold; a line
        joins neighbouring simulators of one run (the same users)."""
        previous: tuple[float, float, str] | None = None
        for x, simulator in enumerate(self.simulators):
            if crs not in self.cells[simulator]:
                previous = None
                continue
            column, agg = self.cells[simulator][crs]
            colour = self.palette.look(column).colour
            assert agg.mean is not None
            self._mean(crs, x + dodge, agg.mean, agg, colour)
            self._places(crs, simulator, x + dodge, agg.mean)
            run = column.pairing.view.label
            if previous is not None and previous[2] == run:  # one run: the same users, a line joins
                self.axes.plot(
                    [previous[0], x + dodge],
                    [previous[1], agg.mean],
                    color=colour,
                    alpha=0.6,
                    linewidth=1,
                )
            previous = (x + dodge, agg.mean, run)

    def _mean(self, crs: str, x: float, mean: float, agg: Aggregate, colour: str) -> None:
        """The mean as a point on its interval; the CRS enters the legend once."""
        if agg.ci_low is not None and agg.ci_high is not None:
            self.axes.plot([x] * 2, [agg.ci_low, agg.ci_high], color=colour, linewidth=1.4)
        self.axes.plot(
            [x],
            [mean],
            marker="o",
            color=colour,
            markersize=4,
            label="_nolegend_" if crs in self.legended else crs,
        )
        self.legended.add(crs)

    def _places(self, crs: str, simulator: str, x: float, mean: float) -> None:
        """The places the CRS could hold under the simulator, written beside its mean."""
        cells = self.cells[simulator]
        apart = _told_apart(self.context, simulator, self.metric, cells)
        means = {c: a.mean for c, (_, a) in cells.items() if a.mean is not None}
        self.axes.annotate(
            rank_text(*rank_range(crs, means, apart)),
            (x, mean),
            xytext=(3, 0),
            textcoords="offset points",
            va="center",
        )


def _key(column: Column, several: bool) -> str:
    """A CRS as the disagreement legend names it: with its run when the report shows several."""
    crs = column.pairing.series.crs
    return f"{crs} [{column.pairing.view.label}]" if several else crs


def _told_apart(
    context: ReportContext, simulator: str, metric: str, cells: Mapping[str, tuple[Column, Aggregate]]
) -> set[frozenset[str]]:
    """Pairs of CRSs (as named in `cells`) that differ: significant in the paired comparison of their
    run, or, for CRSs of different runs (never paired), with intervals that do not overlap."""
    significant = {
        (run, frozenset((p.crs_a, p.crs_b)))
        for run, result in context.compared
        if result.simulator == simulator and result.metric == metric
        for p in result.pairs
        if p.significant
    }
    compared_runs = {run for run, r in context.compared if r.simulator == simulator and r.metric == metric}
    apart: set[frozenset[str]] = set()
    names = list(cells)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            (ca, x), (cb, y) = cells[a], cells[b]
            run = ca.pairing.view.label
            if run == cb.pairing.view.label and run in compared_runs:
                ids = frozenset((ca.pairing.series.crs, cb.pairing.series.crs))
                differ = (run, ids) in significant
            else:
                differ = None not in (x.ci_low, x.ci_high, y.ci_low, y.ci_high) and (
                    (x.ci_high or 0.0) < (y.ci_low or 0.0) or (y.ci_high or 0.0) < (x.ci_low or 0.0)
                )
            if differ:
                apart.add(frozenset((a, b)))
    return apart


# ---------------------------------------------------------------------------------------------
# All of them


def _values(context: ReportContext, found: Sequence[Column]) -> dict[str, dict[Column, Sequence[float]]]:
    """Metric label -> column -> the per-dialogue values (turn-level ones averaged per dialogue)."""
    labels = list(dict.fromkeys(m for v in context.views for m in v.values))
    values: dict[str, dict[Column, Sequence[float]]] = {}
    for label in labels:
        for column in found:
            series = column.pairing.series
            seen = column.pairing.view.values.get(label, {}).get((series.crs, series.simulator))
            if seen:
                values.setdefault(label, {})[column] = seen  # the run's typed array, not a copy
    return values


def print_figures(context: ReportContext, rank_by: str | None) -> list[tuple[str, Figure]]:
    """Every figure of the report for print, with its file stem; build inside `print_style()`."""
    found = columns(context)
    palette = PrintPalette(found)
    figures: list[tuple[str, Figure]] = []
    curves = curves_figure(context, found, palette)
    if curves is not None:
        figures.append(("curves", curves))
    values = _values(context, found)
    kinds = metric_kinds(context.views, {label: groups.values() for label, groups in values.items()})
    binary = [label for label in values if kinds[label] is Scale.BINARY]
    for start in range(0, len(binary), PANELS):
        stem = "proportions" + (f"-{start // PANELS + 1}" if len(binary) > PANELS else "")
        figures.append((stem, proportions_figure(binary[start : start + PANELS], values, palette)))
    others = [label for label in values if kinds[label] is not Scale.BINARY]
    for start in range(0, len(others), PANELS):
        stem = "distributions" + (f"-{start // PANELS + 1}" if len(others) > PANELS else "")
        figures.append((stem, values_figure(others[start : start + PANELS], values, kinds, palette)))
    if rank_by is not None:
        ranks = ranks_figure(context, found, rank_by, palette)
        if ranks is not None:
            figures.append(("ranks", ranks))
    figures += study_print_figures(context, DOUBLE, FONT, palette.crs)
    return figures


def write_figures(
    context: ReportContext, rank_by: str | None, directory: Path, fmt: FigureFormat
) -> list[Path]:
    """Every figure as `directory/<stem>.<fmt>` (exactly its print size, no creation date, so the
    same runs give the same bytes); returns the paths written."""
    written = []
    directory.mkdir(parents=True, exist_ok=True)
    metadata: dict[str, Any] = {"Date": None} if fmt == "svg" else {"CreationDate": None}
    with print_style():
        for stem, figure in print_figures(context, rank_by):
            FigureCanvasAgg(figure)
            path = directory / f"{stem}.{fmt}"
            temp = part_path(path)  # renamed into place when complete
            figure.savefig(temp, format=fmt, metadata=metadata)
            os.replace(temp, path)
            written.append(path)
    return written
