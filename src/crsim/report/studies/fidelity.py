"""The fidelity studies in the report (`crsim validate fidelity`): per corpus, the tables of every
measure and two figures, the distances to the people beside the human control and the values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from crsim.report import plots
from crsim.report.figures import MARKERS
from crsim.report.studies.common import CONTROL_COLOUR, SIMULATOR_COLOUR, RunStudies, interval, number
from crsim.studies.fidelity import FidelityReport, SimulatorFidelity


def _interval_point(
    axes: Axes, y: float, value: float | None, ci: Sequence[float] | None, colour: str, marker: str
) -> None:
    if value is None:
        return
    if ci is not None:
        axes.plot([ci[0], ci[1]], [y, y], color=colour, linewidth=1.8, solid_capstyle="butt")
    axes.plot([value], [y], marker=marker, color=colour, markersize=5, linestyle="none")


def fidelity_figure(report: FidelityReport, *, width: float, font: float) -> Figure:
    """One panel per measure, then the summary distance and the classifier's AUC: each simulator's
    distance to the people (Jensen-Shannon, 0 = the people's distribution) with its 95% interval,
    and below it the control, half A against half B, shaded across the panel: a simulator inside
    the shade is as close to people as people are to each other at this sample size."""
    simulators = report.simulators
    measures = list(dict.fromkeys(r.measure for s in simulators for r in s.rows))
    panels_named = [*measures, "summary distance", "classifier AUC"]
    names = [s.simulator for s in simulators] + ["control: half A vs B"]
    figure, panels = _panel_grid(len(panels_named), len(names), width)
    for axes, title in zip(panels, panels_named, strict=False):
        control: tuple[float | None, Sequence[float] | None] = (None, None)
        for y, sim in enumerate(simulators):
            value, ci, control = _fidelity_value(sim, title)
            _interval_point(axes, y, value, ci, SIMULATOR_COLOUR, MARKERS[y % len(MARKERS)])
        value, ci = control
        if ci is not None:
            axes.axvspan(ci[0], ci[1], color=CONTROL_COLOUR, alpha=0.15, linewidth=0)
        _interval_point(axes, len(simulators), value, ci, CONTROL_COLOUR, "D")
        if title == "classifier AUC":
            axes.axvline(0.5, color=CONTROL_COLOUR, linestyle=":", linewidth=0.8)
            axes.set_xlim(0.3, 1.02)
        else:
            axes.set_xlim(left=0)
        _style_panel(axes, title, font)
    _label_rows(panels[0], names, font)
    figure.supxlabel(
        "Jensen–Shannon distance to the people (0: the same distribution); AUC: 0.5 = indistinguishable",
        fontsize=font,
    )
    return figure


def values_figure(report: FidelityReport, *, width: float, font: float) -> Figure | None:
    """One panel per measure with a value (not the act distribution): each simulator's value with its
    95% interval, the people's with theirs, and the two halves (the control) in grey, the range
    between them shaded: how far each simulator's value is from the people's, in the measure's unit."""
    simulators = report.simulators
    measures = list(
        dict.fromkeys(
            r.measure for s in simulators for r in s.rows if r.simulated is not None or r.human is not None
        )
    )
    if not measures:
        return None
    names = [s.simulator for s in simulators] + ["people", "half A", "half B"]
    figure, panels = _panel_grid(len(measures), len(names), width)
    first = {r.measure: r for r in simulators[0].rows}
    for axes, measure in zip(panels, measures, strict=False):
        for y, sim in enumerate(simulators):
            row = next((r for r in sim.rows if r.measure == measure), None)
            if row is not None:
                _interval_point(
                    axes, y, row.simulated, row.simulated_ci, SIMULATOR_COLOUR, MARKERS[y % len(MARKERS)]
                )
        people = first.get(measure)
        if people is not None:
            base = len(simulators)
            _interval_point(axes, base, people.human, people.human_ci, "#222222", "D")
            halves = [v for v in (people.half_a, people.half_b) if v is not None]
            if len(halves) == 2:
                axes.axvspan(min(halves), max(halves), color=CONTROL_COLOUR, alpha=0.15, linewidth=0)
            _interval_point(axes, base + 1, people.half_a, None, CONTROL_COLOUR, "D")
            _interval_point(axes, base + 2, people.half_b, None, CONTROL_COLOUR, "D")
        _style_panel(axes, measure, font)
    _label_rows(panels[0], names, font)
    return figure


def _fidelity_value(
    sim: SimulatorFidelity, title: str
) -> tuple[float | None, Sequence[float] | None, tuple[float | None, Sequence[float] | None]]:
    """(value, interval, (control value, control interval)) of one panel for one simulator."""
    if title == "summary distance":
        return sim.summary_distance, sim.summary_ci, (sim.control_summary_distance, sim.control_summary_ci)
    if title == "classifier AUC":
        return sim.auc, sim.auc_ci, (sim.control_auc, sim.control_auc_ci)
    for row in sim.rows:
        if row.measure == title:
            return row.distance, row.distance_ci, (row.control_distance, row.control_distance_ci)
    return None, None, (None, None)


def _fidelity_caption(report: FidelityReport) -> str:
    a, b = report.half_dialogues
    n = ", ".join(f"{s.simulator} n = {s.dialogues}" for s in report.simulators)
    intervals = (
        f"95% percentile bootstrap intervals over dialogues ({report.intervals.resamples} replicates; "
        "the AUC's from the out-of-fold scores resampled by dialogue)"
        if report.intervals is not None
        else "no intervals (the study was made without them)"
    )
    return (
        f"Each simulator's distance to the people of {report.against} (n = {report.human_dialogues} "
        f"dialogues) per measure, with {intervals}; simulated dialogues: {n}. Grey: the control, half A "
        f"(n = {a}) against half B (n = {b}) of the people, shaded across each panel; a simulator in "
        "the shade is as close to the people as people are to each other at this size."
    )


def _fidelity_tables(report: FidelityReport) -> dict[str, Any]:
    overview = [
        {
            "simulator": s.simulator,
            "dialogues": s.dialogues,
            "utterances": s.user_utterances,
            "summary": number(s.summary_distance),
            "summary_ci": interval(s.summary_ci),
            "control": number(s.control_summary_distance),
            "control_ci": interval(s.control_summary_ci),
            "auc": number(s.auc),
            "auc_ci": interval(s.auc_ci),
            "control_auc": number(s.control_auc),
            "control_auc_ci": interval(s.control_auc_ci),
        }
        for s in report.simulators
    ]
    details = [
        {
            "simulator": s.simulator,
            "dialogues": s.dialogues,
            "rows": [
                {
                    "measure": r.measure,
                    "unit": r.unit,
                    "simulated": number(r.simulated),
                    "simulated_ci": interval(r.simulated_ci),
                    "human": number(r.human),
                    "human_ci": interval(r.human_ci),
                    "halves": f"{number(r.half_a)} / {number(r.half_b)}",
                    "distance": number(r.distance),
                    "distance_ci": interval(r.distance_ci),
                    "control": number(r.control_distance),
                    "control_ci": interval(r.control_distance_ci),
                }
                for r in s.rows
            ],
        }
        for s in report.simulators
    ]
    return {"overview": overview, "details": details}


def fidelity_sections(found: RunStudies) -> list[dict[str, Any]]:
    sections = []
    for report in found.fidelity:
        drawn = plots.draw(fidelity_figure(report, width=12.0, font=9))
        values = values_figure(report, width=12.0, font=9)
        shown = plots.draw(values) if values is not None else None
        a, b = report.half_dialogues
        sections.append(
            {
                "run": found.label,
                "key": f"{found.label}-{report.against}",
                "against": report.against,
                "domain": report.domain,
                "human": report.human_dialogues,
                "utterances": report.human_user_utterances,
                "halves": f"{a} / {b}",
                "left_out": report.left_out,
                "seed": report.seed,
                "resamples": report.intervals.resamples if report.intervals is not None else None,
                **_fidelity_tables(report),
                "figure": {
                    "title": f"How far from the people of {report.against}?",
                    "caption": _fidelity_caption(report),
                    "uri": drawn.uri,
                    "boxes": drawn.boxes,
                },
                "value_figure": None
                if shown is None
                else {
                    "title": f"Simulated and people of {report.against}, measure by measure",
                    "caption": "Each measure's value (mean words, share of utterances or of "
                    "recommendation rounds, distinct-n at one word budget, mean user turns) for each "
                    f"simulator and for the people (n = {report.human_dialogues} dialogues), with 95% "
                    f"bootstrap intervals over dialogues; grey: half A (n = {a}) and half B (n = {b}) "
                    "of the people, the range between them shaded.",
                    "uri": shown.uri,
                    "boxes": shown.boxes,
                },
            }
        )
    return sections


def _panel_grid(count: int, rows_per_panel: int, width: float) -> tuple[Figure, list[Axes]]:
    """A figure of `count` panels, 3 or 4 to a row, each tall enough for `rows_per_panel` labelled
    rows sharing the y axis; the grid's unused panels hidden."""
    per_row = 4 if width > 8 else 3
    panel_rows = (count + per_row - 1) // per_row
    height = panel_rows * (0.24 * rows_per_panel + 0.8) + 0.3
    figure = Figure(figsize=(width, height), layout="constrained")
    grid = figure.subplots(panel_rows, per_row, sharey=True, squeeze=False)
    panels = [a for line in grid for a in line]
    for extra in panels[count:]:
        extra.set_visible(False)
    return figure, panels


def _style_panel(axes: Axes, title: str, font: float) -> None:
    """A panel's title, ticks and vertical grid lines."""
    axes.set_title(title, fontsize=font + 0.5)
    axes.tick_params(labelsize=font)
    axes.tick_params(axis="y", length=0)
    axes.xaxis.set_major_locator(MaxNLocator(4))
    axes.grid(axis="x", alpha=0.3, linewidth=0.5)


def _label_rows(axes: Axes, names: list[str], font: float) -> None:
    """The row labels on the shared y axis, first row on top."""
    axes.set_yticks(range(len(names)), [plots.wrap(n, 22) for n in names], fontsize=font)
    axes.set_ylim(len(names) - 0.5, -0.5)
