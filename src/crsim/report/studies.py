"""The report's sections of the validation studies a run folder holds.

`crsim validate sensitivity` writes `sensitivity.json` into its study folder (a run folder) and
`crsim validate fidelity` writes `fidelity_<corpus>.json` into the run it read; `crsim report` on
that folder shows them: a table and a figure per study, drawn here for the HTML page (PNG, through
`plots.draw`) and for print (`crsim report --figures svg|pdf`, through `export_figures`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator
from pydantic import ValidationError

from crsim.core.errors import CrsimError
from crsim.model.run_folder.files import FIDELITY_PREFIX
from crsim.report import plots
from crsim.report.figures import MARKERS, Series
from crsim.report.sections import ReportContext
from crsim.studies.fidelity import FidelityReport, SimulatorFidelity
from crsim.studies.sensitivity import (
    DETECTED_ACCURACY,
    DETECTED_AT,
    SENSITIVITY_FILE,
    Sensitivity,
    SensitivityRow,
)

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
#: The human control in the fidelity figures.
CONTROL_COLOUR = "#7f7f7f"
SIMULATOR_COLOUR = "#1f4e9c"
#: Panels per row of the figures (HTML).
PANELS_PER_ROW = 3


@dataclass
class RunStudies:
    """The study results one run folder holds."""

    label: str
    sensitivity: Sensitivity | None = None
    fidelity: list[FidelityReport] = field(default_factory=list)


Study = TypeVar("Study", Sensitivity, FidelityReport)


def _read(path: Path, model: type[Study]) -> Study:
    try:
        return model.model_validate_json(path.read_bytes())
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(the file)"
        raise CrsimError(
            f"{path}: field {where}: {first['msg']}; write it again with `crsim validate`"
        ) from None
    except OSError as error:
        raise CrsimError(f"{path}: cannot read ({error.strerror})") from None


def run_studies(context: ReportContext) -> list[RunStudies]:
    """Per run of the report that holds a study result: the sensitivity study and the fidelity
    reports (one per corpus, in file-name order)."""
    found = []
    for view in context.views:
        root = view.folder.path
        sensitivity = root / SENSITIVITY_FILE
        fidelity = sorted(root.glob(f"{FIDELITY_PREFIX}*.json"))
        if not sensitivity.is_file() and not fidelity:
            continue
        found.append(
            RunStudies(
                view.label,
                _read(sensitivity, Sensitivity) if sensitivity.is_file() else None,
                [_read(path, FidelityReport) for path in fidelity],
            )
        )
    return found


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _ci(interval: Sequence[float] | None, digits: int = 3) -> str:
    return "" if interval is None else f"[{interval[0]:.{digits}f}, {interval[1]:.{digits}f}]"


# ---------------------------------------------------------------------------------------------
# Sensitivity


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
                    "original": _num(row.mean_original),
                    "degraded": _num(row.mean_twin),
                    "difference": _num(row.difference),
                    "ci": _ci(
                        None if row.ci_low is None or row.ci_high is None else (row.ci_low, row.ci_high)
                    ),
                    "accuracy": [_num(row.accuracy.get(n), 2) for n in study.options.sizes],
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
    sizes = study.options.sizes
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
            if row is None:
                continue
            if row.verdict == "blind":
                axes.annotate(
                    "cannot see", (0.5, y), ha="center", va="center", fontsize=font, color=CONTROL_COLOUR
                )
                continue
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
        axes.axvline(DETECTED_ACCURACY, color="#222222", linestyle="--", linewidth=0.8)
        axes.axvline(0.5, color=CONTROL_COLOUR, linestyle=":", linewidth=0.8)
        axes.set_xlim(-0.02, 1.02)
        axes.set_title(f"twin: {kind}", fontsize=font + 1)
        axes.tick_params(labelsize=font)
        axes.grid(axis="x", alpha=0.3, linewidth=0.5)
        axes.tick_params(axis="y", length=0)
    for axes in panels[-per_row:]:
        if axes.get_visible():
            axes.set_xlabel("pairwise accuracy at n", fontsize=font)
    panels[0].set_yticks(range(len(metrics)), metrics, fontsize=font)
    panels[0].set_ylim(len(metrics) - 0.5, -0.5)
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
    figure.legend(
        handles=handles,
        loc="outside lower center",
        ncols=len(handles) if width > 8 else 3,
        fontsize=font,
        frameon=False,
    )
    return figure


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


# ---------------------------------------------------------------------------------------------
# Fidelity


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
    per_row = 4 if width > 8 else 3
    panel_rows = (len(panels_named) + per_row - 1) // per_row
    height = panel_rows * (0.24 * len(names) + 0.8) + 0.3
    figure = Figure(figsize=(width, height), layout="constrained")
    grid = figure.subplots(panel_rows, per_row, sharey=True, squeeze=False)
    panels = [a for line in grid for a in line]
    for extra in panels[len(panels_named) :]:
        extra.set_visible(False)
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
        axes.set_title(title, fontsize=font + 0.5)
        axes.tick_params(labelsize=font)
        axes.tick_params(axis="y", length=0)
        axes.xaxis.set_major_locator(MaxNLocator(4))
        axes.grid(axis="x", alpha=0.3, linewidth=0.5)
    panels[0].set_yticks(range(len(names)), [plots.wrap(n, 22) for n in names], fontsize=font)
    panels[0].set_ylim(len(names) - 0.5, -0.5)
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
    per_row = 4 if width > 8 else 3
    panel_rows = (len(measures) + per_row - 1) // per_row
    height = panel_rows * (0.24 * len(names) + 0.8) + 0.3
    figure = Figure(figsize=(width, height), layout="constrained")
    grid = figure.subplots(panel_rows, per_row, sharey=True, squeeze=False)
    panels = [a for line in grid for a in line]
    for extra in panels[len(measures) :]:
        extra.set_visible(False)
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
        axes.set_title(measure, fontsize=font + 0.5)
        axes.tick_params(labelsize=font)
        axes.tick_params(axis="y", length=0)
        axes.xaxis.set_major_locator(MaxNLocator(4))
        axes.grid(axis="x", alpha=0.3, linewidth=0.5)
    panels[0].set_yticks(range(len(names)), [plots.wrap(n, 22) for n in names], fontsize=font)
    panels[0].set_ylim(len(names) - 0.5, -0.5)
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
            "summary": _num(s.summary_distance),
            "summary_ci": _ci(s.summary_ci),
            "control": _num(s.control_summary_distance),
            "control_ci": _ci(s.control_summary_ci),
            "auc": _num(s.auc),
            "auc_ci": _ci(s.auc_ci),
            "control_auc": _num(s.control_auc),
            "control_auc_ci": _ci(s.control_auc_ci),
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
                    "simulated": _num(r.simulated),
                    "simulated_ci": _ci(r.simulated_ci),
                    "human": _num(r.human),
                    "human_ci": _ci(r.human_ci),
                    "halves": f"{_num(r.half_a)} / {_num(r.half_b)}",
                    "distance": _num(r.distance),
                    "distance_ci": _ci(r.distance_ci),
                    "control": _num(r.control_distance),
                    "control_ci": _ci(r.control_distance_ci),
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


# ---------------------------------------------------------------------------------------------
# Both, for the page and for print


def study_sections(context: ReportContext) -> dict[str, list[dict[str, Any]]]:
    """The sensitivity and fidelity sections of the report (empty lists: no study in the runs)."""
    sensitivity: list[dict[str, Any]] = []
    fidelity: list[dict[str, Any]] = []
    for found in run_studies(context):
        section = sensitivity_section(context, found)
        if section is not None:
            sensitivity.append(section)
        fidelity.extend(fidelity_sections(found))
    return {"sensitivity": sensitivity, "fidelity": fidelity}


def _stem(*parts: str) -> str:
    text = "-".join(parts)
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)


def study_print_figures(
    context: ReportContext, width: float, font: float, colours: dict[str, str]
) -> list[tuple[str, Figure]]:
    """The study figures at print size, with their file stems: `sensitivity-<crs>-<simulator>` and
    `fidelity-<corpus>` (the run's name after them when the report shows several runs). `colours`:
    CRS -> the hue the print figures give it."""
    several = len(context.views) > 1
    figures: list[tuple[str, Figure]] = []
    for found in run_studies(context):
        tail = (found.label,) if several else ()
        if found.sensitivity is not None:
            for simulator, crs, rows in sensitivity_blocks(found.sensitivity):
                colour = colours.get(crs, "#0072B2")
                figure = sensitivity_figure(found.sensitivity, rows, colour, width=width, font=font)
                figures.append((_stem("sensitivity", crs, simulator, *tail), figure))
        for report in found.fidelity:
            figures.append(
                (_stem("fidelity", report.against, *tail), fidelity_figure(report, width=width, font=font))
            )
            values = values_figure(report, width=width, font=font)
            if values is not None:
                figures.append((_stem("fidelity-values", report.against, *tail), values))
    return figures
