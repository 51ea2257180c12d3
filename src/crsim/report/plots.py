"""Report plots as PNG bytes, drawn with matplotlib's Agg canvas (no pyplot, no global backend change).

Every plot takes its colours from the report's one `Palette` and says its n. Pairings are laid out
along the vertical axis, so their names stay horizontal and whole however many there are; legends
sit outside the axes, below them, where they cannot cover a line.
"""

from __future__ import annotations

import base64
import io
import json
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import Bbox

from crsim.report.figures import Palette, rank_text, wilson

#: Pixels per inch of the PNGs.
DPI = 100
#: Below this many values a judge score is drawn as its points, not as a mean with an interval.
FEW = 10


def wrap(name: str, width: int = 28) -> str:
    """A pairing name on as many lines as it needs, broken at spaces (after the ×), never cut."""
    return "\n".join(textwrap.wrap(name, width, break_long_words=False, break_on_hyphens=False)) or name


@dataclass(frozen=True)
class Drawn:
    """A plot as a data URI, with where its legend and its axes ended up in the image (fractions of
    the width and height from the top left), so the page can be checked for overlaps."""

    uri: str
    boxes: str


def _fraction_box(extent: Bbox, tight: Bbox, dpi: float) -> list[float]:
    """A box in display pixels as fractions of the saved image (`tight`, in inches), from the top left."""
    x0 = (extent.x0 / dpi - tight.x0) / tight.width
    x1 = (extent.x1 / dpi - tight.x0) / tight.width
    y0 = (tight.y1 - extent.y1 / dpi) / tight.height
    y1 = (tight.y1 - extent.y0 / dpi) / tight.height
    return [round(v, 4) for v in (x0, y0, x1, y1)]


def _drawn_labels(axes: Axes) -> list[Text]:
    """The tick labels matplotlib draws: with text, visible, at a tick inside the view limits."""
    found = []
    for axis, limits in ((axes.xaxis, axes.get_xlim()), (axes.yaxis, axes.get_ylim())):
        low, high = min(limits), max(limits)
        position = 0 if axis is axes.xaxis else 1
        for label in axis.get_ticklabels():
            at = label.get_position()[position]
            if label.get_text() and label.get_visible() and low - 1e-9 <= at <= high + 1e-9:
                found.append(label)
    return found


def draw(figure: Figure) -> Drawn:
    """The figure as a `data:image/png;base64,...` URI (the HTML file needs nothing beside it) and
    the boxes of its legends, axes, lines and tick labels in the saved image."""
    FigureCanvasAgg(figure)
    figure.draw_without_rendering()  # lays the figure out, so every extent below is final
    tight = figure.get_tightbbox().padded(0.1)  # as savefig(bbox_inches="tight") crops it
    dpi = figure.dpi
    boxes: dict[str, list[list[float]]] = {"legends": [], "axes": [], "lines": [], "labels": []}
    for legend in figure.legends:
        boxes["legends"].append(_fraction_box(legend.get_window_extent(), tight, dpi))
    for axes in figure.axes:
        if not axes.get_visible():
            continue
        boxes["axes"].append(_fraction_box(axes.get_window_extent(), tight, dpi))
        for line in axes.get_lines():
            if len(np.asarray(line.get_path().vertices)) > 1:
                boxes["lines"].append(_fraction_box(line.get_window_extent(), tight, dpi))
        for label in _drawn_labels(axes):
            boxes["labels"].append(_fraction_box(label.get_window_extent(), tight, dpi))
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight", pad_inches=0.1)
    uri = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
    return Drawn(uri, json.dumps(boxes, separators=(",", ":")))


def _pairing_label(name: str, counts: Mapping[str, int] | None) -> str:
    """A pairing's name with its n, on two lines at most for names up to about 60 characters."""
    n = f"\u00a0· n\u00a0=\u00a0{counts[name]}" if counts and name in counts else ""  # kept on one line
    return wrap(name + n, 34)


def _pairing_axis(
    panels: Sequence[Axes], names: Sequence[str], counts: Mapping[str, int] | None, fontsize: float = 8
) -> None:
    """Pairings top to bottom on the shared vertical axis, each named in full (with its n), once per
    row of panels; called after drawing, which may have set ticks of its own."""
    texts = [_pairing_label(n, counts) for n in names]
    for axes in panels:
        axes.grid(axis="x", alpha=0.3)
        axes.tick_params(axis="y", labelsize=fontsize)
    if panels:
        panels[0].set_yticks(range(len(names)), texts, fontsize=fontsize)
        panels[0].set_ylim(len(names) - 0.5, -0.5)


def _grid(count: int, columns: int, names: Sequence[str], width: float = 3.6) -> tuple[Figure, list[Axes]]:
    """`count` panels sharing one vertical axis of the pairings `names`, `columns` to a row; rows of
    pairings are taller when a name (with its n) takes two lines."""
    columns = max(1, min(columns, count))
    rows = (count + columns - 1) // columns
    row_height = 0.4 if any(len(n) > 24 for n in names) else 0.32
    height = (row_height * len(names) + 1.0) * rows + 0.3
    figure = Figure(figsize=(width * columns + 2.4, height), layout="constrained")
    grid = figure.subplots(rows, columns, sharey=True, squeeze=False)
    axes = [a for row in grid for a in row]
    for extra in axes[count:]:
        extra.set_visible(False)
    return figure, axes[:count]


Band = Sequence[tuple[float, float] | None]


def turn_curves(
    panels: Sequence[tuple[str, Mapping[str, Sequence[float | None]]]],
    palette: Palette,
    counts: Mapping[str, int],
    bands: Mapping[str, Mapping[str, Band]] | None = None,
) -> Figure:
    """One panel per metric (e.g. PC_t@10, Recall@(t,10)); one line per pairing over turns 1..T
    (whole turns on the axis), with its 95% band (`bands`: metric -> pairing -> interval per turn,
    clipped to [0, 1]); the legend (with each pairing's n) below the panels."""
    names = list(dict.fromkeys(n for _, series in panels for n in series))
    legend_rows = (len(names) + 2) // 3
    figure = Figure(figsize=(5.2 * len(panels), 3.4 + 0.22 * legend_rows), layout="constrained")
    for position, (title, series) in enumerate(panels, start=1):
        axes = figure.add_subplot(1, len(panels), position)
        for name, means in series.items():
            turns = [t for t, v in enumerate(means, start=1) if v is not None]
            points = [v for v in means if v is not None]
            label = f"{name} (n = {counts[name]})" if name in counts else name
            axes.plot(
                turns,
                points,
                marker=palette.marker(name),
                markersize=3.5,
                color=palette.colour(name),
                label=label,
            )
            band = [(t, b) for t, b in enumerate((bands or {}).get(title, {}).get(name, []), start=1) if b]
            if band:
                axes.fill_between(
                    [t for t, _ in band],
                    [max(0.0, b[0]) for _, b in band],
                    [min(1.0, b[1]) for _, b in band],
                    color=palette.colour(name),
                    alpha=0.12,
                    linewidth=0,
                )
        axes.set_title(title)
        axes.set_xlabel("turn t")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
    handles, labels = figure.axes[0].get_legend_handles_labels()
    figure.legend(
        handles, labels, loc="outside lower center", ncols=min(3, len(names)), fontsize=8.5, frameon=False
    )
    return figure


def proportions(per_metric: Mapping[str, Mapping[str, tuple[int, int]]], palette: Palette) -> Figure:
    """0/1 metrics: the proportion of dialogues scoring 1 per pairing with its 95% Wilson interval,
    and k/n beside it."""
    labels = list(per_metric)
    names = list(dict.fromkeys(n for groups in per_metric.values() for n in groups))
    figure, panels = _grid(len(labels), 3, names)
    for axes, label in zip(panels, labels, strict=True):
        for row, name in enumerate(names):
            if name not in per_metric[label]:
                continue
            k, n = per_metric[label][name]
            low, high = wilson(k, n)
            colour = palette.colour(name)
            axes.plot([low, high], [row, row], color=colour, linewidth=2.2, solid_capstyle="butt")
            axes.plot([k / n], [row], marker=palette.marker(name), color=colour, markersize=7)
            axes.annotate(
                f"{k}/{n}",
                (1.0, row),
                xytext=(4, 0),
                textcoords="offset points",
                va="center",
                fontsize=10,
                annotation_clip=False,
            )
        axes.set_xlim(0, 1)
        axes.set_title(f"{label}: proportion, 95% Wilson CI", fontsize=11)
        axes.tick_params(axis="x", labelsize=10)
    _pairing_axis(panels, names, None, fontsize=10)
    return figure


def _boxes(axes: Axes, names: Sequence[str], groups: Mapping[str, Sequence[float]], palette: Palette) -> None:
    present = [i for i, n in enumerate(names) if groups.get(n)]
    drawn = axes.boxplot(
        [np.asarray(groups[names[i]], dtype=float) for i in present],
        positions=present,
        orientation="horizontal",
        patch_artist=True,
        showmeans=True,
        widths=0.6,
        # black median and white-filled mean, so neither takes a pairing's colour
        medianprops={"color": "#222222", "linewidth": 1.5},
        meanprops={"marker": "^", "markerfacecolor": "white", "markeredgecolor": "#222222", "markersize": 6},
        flierprops={"marker": "o", "markersize": 3, "markeredgecolor": "#555555", "alpha": 0.6},
    )
    for box, i in zip(drawn["boxes"], present, strict=True):
        box.set_facecolor(palette.colour(names[i]))
        box.set_alpha(0.7)


def distributions(
    per_metric: Mapping[str, Mapping[str, Sequence[float]]], palette: Palette, columns: int = 3
) -> Figure:
    """Horizontal box plots of per-dialogue values: one panel per metric, one box per pairing,
    pairings named once on the left with their n."""
    labels = list(per_metric)
    names = list(dict.fromkeys(n for groups in per_metric.values() for n in groups))
    counts = {n: max(len(g.get(n, [])) for g in per_metric.values()) for n in names}
    figure, panels = _grid(len(labels), columns, names)
    for axes, label in zip(panels, labels, strict=True):
        _boxes(axes, names, per_metric[label], palette)
        axes.set_title(label, fontsize=10)
    _pairing_axis(panels, names, counts)
    return figure


Interval = tuple[float | None, float | None, float | None, int]  # mean, low, high, n


def _interval_row(axes: Axes, row: int, name: str, cell: Interval, palette: Palette) -> None:
    mean, low, high, _ = cell
    if mean is None:
        return
    colour = palette.colour(name)
    if low is not None and high is not None:
        axes.plot([low, high], [row, row], color=colour, linewidth=2)
    axes.plot([mean], [row], marker=palette.marker(name), color=colour, markersize=6)


def means_grid(
    per_metric: Mapping[str, Mapping[str, Interval]], palette: Palette, columns: int = 4
) -> Figure:
    """Many metrics at once (PEPPER's coverage and recall at several K): small multiples of each
    pairing's mean with its 95% interval, pairings named once per row of panels with their n (a
    metric scored on fewer of the pairing's dialogues says its own n beside the point)."""
    labels = list(per_metric)
    names = list(dict.fromkeys(n for groups in per_metric.values() for n in groups))
    counts = {n: max(c[3] for g in per_metric.values() for m, c in g.items() if m == n) for n in names}
    figure, panels = _grid(len(labels), columns, names, width=2.6)
    for axes, label in zip(panels, labels, strict=True):
        for row, name in enumerate(names):
            cell = per_metric[label].get(name)
            if cell is None:
                continue
            _interval_row(axes, row, name, cell, palette)
            if cell[3] != counts[name] or cell[1] is None:  # fewer values than the pairing's n
                note = f"n = {cell[3]}" + (", no CI" if cell[1] is None else "")
                axes.annotate(
                    note,
                    (cell[0] or 0.0, row),
                    xytext=(0, -9),
                    textcoords="offset points",
                    ha="center",
                    va="top",
                    fontsize=7,
                )
        axes.set_title(label, fontsize=9)
        axes.tick_params(axis="x", labelsize=7.5)
        axes.xaxis.set_major_locator(MaxNLocator(4))
    _pairing_axis(panels, names, counts)
    return figure


def _spread(values: Sequence[float]) -> list[float]:
    """Vertical offsets that set equal values side by side instead of on one dot (deterministic)."""
    seen: dict[float, int] = {}
    offsets = []
    for value in values:
        k = seen.get(value, 0)
        seen[value] = k + 1
        offsets.append(((k + 1) // 2) * 0.12 * (1 if k % 2 else -1))
    return offsets


def _judge_row(
    axes: Axes, row: int, name: str, values: Sequence[float], cell: Interval, palette: Palette
) -> None:
    """Few values: every value as a point and the mean as a bar; enough: the mean with its interval."""
    mean, low, high, n = cell
    colour = palette.colour(name)
    if n < FEW or low is None or high is None or high <= low:
        offsets = _spread(values)
        axes.scatter(
            values,
            [row + o for o in offsets],
            s=32,
            color=colour,
            edgecolors="white",
            linewidths=0.6,
            zorder=3,
        )
        if mean is not None:
            axes.plot([mean, mean], [row - 0.3, row + 0.3], color=colour, linewidth=2.5, alpha=0.6, zorder=2)
        note = f"n = {n} (no CI)"
    else:
        _interval_row(axes, row, name, cell, palette)
        note = f"n = {n}"
    axes.annotate(
        note,
        (1.0, row),
        xycoords=("axes fraction", "data"),
        xytext=(4, 0),
        textcoords="offset points",
        va="center",
        fontsize=8,
        annotation_clip=False,
    )


def judge_scores(
    per_metric: Mapping[str, Mapping[str, tuple[Sequence[float], Interval]]],
    scales: Mapping[str, tuple[float, float] | None],
    palette: Palette,
) -> Figure:
    """Judge scores per pairing on the rubric's scale (1–5, not from 0): the mean with its 95%
    interval from n = 10 values up, below that every value as a point with the mean as a bar."""
    labels = list(per_metric)
    names = list(dict.fromkeys(n for groups in per_metric.values() for n in groups))
    figure, panels = _grid(len(labels), 2, names, width=4.2)
    for axes, label in zip(panels, labels, strict=True):
        for row, name in enumerate(names):
            if name in per_metric[label]:
                values, cell = per_metric[label][name]
                _judge_row(axes, row, name, values, cell, palette)
        scale = scales.get(label)
        if scale is not None:
            axes.set_xlim(scale[0] - 0.3, scale[1] + 0.3)
            axes.set_xticks(range(int(scale[0]), int(scale[1]) + 1))
        title = f"{label} (scale {scale[0]:g}–{scale[1]:g})" if scale else label
        axes.set_title(title, fontsize=9.5)
    _pairing_axis(panels, names, None)
    return figure


@dataclass(frozen=True)
class RankCell:
    """One CRS under one simulator: its mean with interval, n, and the places it could hold."""

    mean: float
    low: float | None
    high: float | None
    n: int
    best: int
    worst: int


def _crs_points(
    axes: Axes,
    crs: str,
    xs: Sequence[float],
    found: Sequence[tuple[str, RankCell]],
    point_colours: Mapping[tuple[str, str], str],
) -> None:
    """One CRS's means with their intervals, each labelled with the places it could hold."""
    for x, (column, cell) in zip(xs, found, strict=True):
        colour = point_colours.get((column, crs), "#555555")
        if cell.low is not None and cell.high is not None:
            axes.plot([x, x], [cell.low, cell.high], color=colour, linewidth=2.2)
        axes.plot([x], [cell.mean], marker="o", color=colour, markersize=7)
        text = rank_text(cell.best, cell.worst)
        axes.annotate(
            text, (x, cell.mean), xytext=(5, 0), textcoords="offset points", va="center", fontsize=8
        )


def disagreement(
    columns: Sequence[str],
    cells: Mapping[str, Mapping[str, RankCell]],
    crs_colours: Mapping[str, str],
    point_colours: Mapping[tuple[str, str], str],
    metric: str,
    runs: Sequence[str] | None = None,
) -> Figure:
    """Each CRS's mean (with its 95% interval) under each simulator, joined by a line per CRS within
    a run (`runs`: the run of each column; different runs met different users, so no line joins
    them) and set side by side so equal means do not share a dot; beside each point, the places it
    could hold ("1–2": not significantly different from a neighbour)."""
    runs = list(runs) if runs is not None else [""] * len(columns)
    crss = sorted({crs for column in columns for crs in cells[column]})
    figure = Figure(figsize=(min(12.0, max(5.0, 1.7 * len(columns) + 2.6)), 4.2), layout="constrained")
    axes = figure.add_subplot(1, 1, 1)
    width = 0.5 / max(1, len(crss) - 1) if len(crss) > 1 else 0.0
    for index, crs in enumerate(crss):
        dodge = (index - (len(crss) - 1) / 2) * width
        for run in dict.fromkeys(runs):
            at = [x for x, column in enumerate(columns) if crs in cells[column] and runs[x] == run]
            found = [(columns[x], cells[columns[x]][crs]) for x in at]
            label = crs if run == next(iter(dict.fromkeys(runs))) else "_nolegend_"
            colour = crs_colours.get(crs, "#555555")
            xs = [x + dodge for x in at]
            axes.plot(xs, [c.mean for _, c in found], color=colour, linewidth=1.6, alpha=0.7, label=label)
            _crs_points(axes, crs, xs, found, point_colours)
    for x in range(1, len(columns)):
        if runs[x] != runs[x - 1]:
            axes.axvline(x - 0.5, color="#999999", linestyle="--", linewidth=1)
    counts = sorted({c.n for column in columns for c in cells[column].values()})
    n_text = f"n = {counts[0]}" if len(counts) == 1 else f"n = {counts[0]}–{counts[-1]}"
    axes.set_xticks(range(len(columns)), [wrap(c, 22) for c in columns], fontsize=9)
    axes.set_xlim(-0.6, len(columns) - 0.4)
    axes.set_ylabel(f"{metric}: mean, 95% CI ({n_text} per point)")
    axes.grid(axis="y", alpha=0.3)
    figure.legend(
        loc="outside lower center",
        ncols=min(4, len(crss)),
        fontsize=8.5,
        frameon=False,
        title="CRS (label: places it could hold)",
        title_fontsize=8.5,
    )
    return figure
