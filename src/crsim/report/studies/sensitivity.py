"""The sensitivity study in the report (`crsim validate sensitivity`): per CRS and simulator, a table of
its degraded twins and a figure of the pairwise accuracy at each number of users."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from crsim.report import plots
from crsim.report.figures import Series
from crsim.report.sections import ReportContext
from crsim.report.studies.common import CONTROL_COLOUR, PANELS_PER_ROW, RunStudies, interval, number
from crsim.studies.sensitivity import DETECTED_ACCURACY, DETECTED_AT, Sensitivity, SensitivityRow

#: What the table and the figure say for each verdict of a sensitivity row.
VERDICT_TEXT = {
    "detected": "detected",
    "weak": "weak",
    "blind": "cannot see",
    "reversed": "reversed",
    "too few users": "too few users",
}
#: Markers of the pairwise accuracy at the three sizes: hollow, filled, square (small to large n).
SIZE_MARKERS = ("o", "o", "s")


def sensitivity_blocks(study: Sensitivity) -> list[tuple[str, str, list[SensitivityRow]]]:
    """(simulator, CRS, rows) in the study's order: one block per original CRS under one simulator."""
    blocks: dict[tuple[str, str], list[SensitivityRow]] = {}
    for row in study.rows:
        blocks.setdefault((row.simulator, row.crs), []).append(row)
    return [(simulator, crs, rows) for (simulator, crs), rows in blocks.items()]


def _sensitivity_table(study: Sensitivity, rows: Sequence[SensitivityRow]) -> list[dict[str, Any]]:
    """Rows for the template: grouped by degradation (its name spans its metrics)."""
    out = []
    kinds = list(dict.fromkeys(r.degradation for r in rows))
    for kind in kinds:
        group = [r for r in rows if r.degradation == kind]
        for index, row in enumerate(group):
            out.append(
                {
                    "twin": kind,
                    "span": len(group) if index == 0 else 0,
                    "metric": row.metric,
                    "original": number(row.mean_original),
                    "degraded": number(row.mean_twin),
                    "difference": number(row.difference),
                    "ci": interval(
                        None if row.ci_low is None or row.ci_high is None else (row.ci_low, row.ci_high)
                    ),
                    "accuracy": [number(row.accuracy.get(n), 2) for n in study.options.sizes],
                    "needed": "–" if row.users_for_power is None else str(row.users_for_power),
                    "verdict": VERDICT_TEXT[row.verdict],
                    "kind": row.verdict.replace(" ", "-"),
                    "mark": {"lower": " ↓", "none": " ↕"}.get(row.direction, ""),
                }
            )
    return out


def sensitivity_figure(
    study: Sensitivity, rows: Sequence[SensitivityRow], colour: str, *, width: float, font: float
) -> Figure:
    """One panel per degradation, the metrics top to bottom: the pairwise accuracy of ranking the
    original above the twin at each n (hollow circle, circle, square from the smallest n), joined
    by a line; a dashed rule at the detection threshold, a dotted one at chance; "cannot see" where
    every user got the same value from both."""
    kinds = list(dict.fromkeys(r.degradation for r in rows))
    metrics = list(dict.fromkeys(r.metric for r in rows))
    cells = {(r.degradation, r.metric): r for r in rows}
    per_row = min(PANELS_PER_ROW, len(kinds))
    panel_rows = (len(kinds) + per_row - 1) // per_row
    height = panel_rows * (0.22 * len(metrics) + 0.75) + 0.55
    figure = Figure(figsize=(width, height), layout="constrained")
    grid = figure.subplots(panel_rows, per_row, sharey=True, sharex=True, squeeze=False)
    panels = [a for line in grid for a in line]
    for extra in panels[len(kinds) :]:
        extra.set_visible(False)
    for axes, kind in zip(panels, kinds, strict=False):
        for y, metric in enumerate(metrics):
            row = cells.get((kind, metric))
            if row is not None:
                _accuracy_line(axes, y, row, study.options.sizes, colour, font)
        _accuracy_panel(axes, kind, font)
    for axes in panels[-per_row:]:
        if axes.get_visible():
            axes.set_xlabel("pairwise accuracy at n", fontsize=font)
    panels[0].set_yticks(range(len(metrics)), metrics, fontsize=font)
    panels[0].set_ylim(len(metrics) - 0.5, -0.5)
    handles = _accuracy_legend(study.options.sizes, colour)
    figure.legend(
        handles=handles,
        loc="outside lower center",
        ncols=len(handles) if width > 8 else 3,
        fontsize=font,
        frameon=False,
    )
    return figure


def _accuracy_line(
    axes: Axes, y: int, row: SensitivityRow, sizes: Sequence[int], colour: str, font: float
) -> None:
    """One metric's pairwise accuracy at each n, joined by a line; "cannot see" for a blind one."""
    if row.verdict == "blind":
        axes.annotate("cannot see", (0.5, y), ha="center", va="center", fontsize=font, color=CONTROL_COLOUR)
        return
    values = [row.accuracy.get(n) for n in sizes]
    known = [(v, i) for i, v in enumerate(values) if v is not None]
    if len(known) > 1:
        axes.plot([v for v, _ in known], [y] * len(known), color=colour, linewidth=1, alpha=0.6)
    for value, i in known:
        marker = SIZE_MARKERS[min(i, len(SIZE_MARKERS) - 1)]
        axes.plot(
            [value],
            [y],
            marker=marker,
            markersize=4.5,
            color=colour,
            markerfacecolor="white" if i == 0 else colour,
            linestyle="none",
        )


def _accuracy_panel(axes: Axes, kind: str, font: float) -> None:
    """A degradation's panel: the detection threshold (dashed), chance (dotted), title and grid."""
    axes.axvline(DETECTED_ACCURACY, color="#222222", linestyle="--", linewidth=0.8)
    axes.axvline(0.5, color=CONTROL_COLOUR, linestyle=":", linewidth=0.8)
    axes.set_xlim(-0.02, 1.02)
    axes.set_title(f"twin: {kind}", fontsize=font + 1)
    axes.tick_params(labelsize=font)
    axes.grid(axis="x", alpha=0.3, linewidth=0.5)
    axes.tick_params(axis="y", length=0)


def _accuracy_legend(sizes: Sequence[int], colour: str) -> list[Line2D]:
    """The legend's entries: a marker per number of users, the detection threshold and chance."""
    handles = [
        Line2D(
            [],
            [],
            marker=SIZE_MARKERS[min(i, len(SIZE_MARKERS) - 1)],
            color=colour,
            markerfacecolor="white" if i == 0 else colour,
            linestyle="none",
            label=f"n = {n} users",
        )
        for i, n in enumerate(sizes)
    ]
    handles.append(
        Line2D(
            [],
            [],
            color="#222222",
            linestyle="--",
            label=f"{DETECTED_ACCURACY} (detected at n = {DETECTED_AT})",
        )
    )
    handles.append(Line2D([], [], color=CONTROL_COLOUR, linestyle=":", label="0.5: chance"))
    return handles


def _sensitivity_caption(study: Sensitivity, n_users: int) -> str:
    sizes = ", ".join(str(n) for n in study.options.sizes)
    return (
        f"Pairwise accuracy: of {study.options.resamples} draws of n users (n = {sizes}; with "
        f"replacement from the study's {n_users} users), the share whose mean difference ranks the "
        "original above its degraded twin by the metric's direction (a tie counts half; for a metric "
        "without one, on the side of the full study's difference). A degradation counts as detected "
        f"when the share at n = {DETECTED_AT} reaches {DETECTED_ACCURACY}; \u201ccannot see\u201d: "
        "every user got the same value from the original and the twin."
    )


def _colour(context: ReportContext, crs: str, simulator: str, run: str) -> str:
    several = len(context.views) > 1
    return context.palette.colour(Series(crs, simulator, run if several else None).name)


def sensitivity_section(context: ReportContext, found: RunStudies) -> dict[str, Any] | None:
    study = found.sensitivity
    if study is None:
        return None
    blocks = []
    for simulator, crs, rows in sensitivity_blocks(study):
        n_users = rows[0].n_users
        drawn = plots.draw(
            sensitivity_figure(study, rows, _colour(context, crs, simulator, found.label), width=11.0, font=9)
        )
        blocks.append(
            {
                "key": f"{found.label}-{crs}-{simulator}",
                "title": f"{crs} against its degraded twins · simulator {simulator} · n = {n_users} users",
                "rows": _sensitivity_table(study, rows),
                "figure": {
                    "title": f"Would {simulator} and each metric notice {crs} getting worse?",
                    "caption": _sensitivity_caption(study, n_users),
                    "uri": drawn.uri,
                    "boxes": drawn.boxes,
                },
            }
        )
    return {"run": found.label, "sizes": study.options.sizes, "blocks": blocks}
