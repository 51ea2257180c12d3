"""The report's results tables, plots and rank table, as the template shows them.

Every part takes its pairings from `pairings` and its colours from the one `Palette` of the report,
so a colour names the same CRS × simulator pairing in every table and plot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from crsim.eval.scores import GroupSummary
from crsim.eval.stats import USER_BOOTSTRAP, Aggregate
from crsim.report import plots
from crsim.report.collect import RunView
from crsim.report.figures import (
    Palette,
    Series,
    binary_metrics,
    declared_binary,
    judge_scale,
    rank_range,
    rank_text,
)
from crsim.report.tables import USER_MARK, ambiguous_text, evaluable_text, failures, failures_text, users_text
from crsim.studies.compare import MetricComparison, Verdict

#: Metric columns per results table: more would push the table past a laptop screen.
COLUMNS_PER_TABLE = 6
#: Above this many metrics of a kind, the distributions give way to one figure of means with CIs.
MOST_BOX_PANELS = 6


@dataclass(frozen=True)
class Pairing:
    series: Series
    view: RunView
    summary: GroupSummary


@dataclass
class ReportContext:
    """What every part of one report shares: the runs, the palette and the paired comparisons."""

    views: Sequence[RunView]
    palette: Palette
    compared: Sequence[tuple[str, MetricComparison]]
    #: Per run, each pair of CRSs' verdict across metrics (wins, ties, losses by direction).
    verdicts: Sequence[tuple[str, Verdict]] = ()

    @property
    def pairings(self) -> list[Pairing]:
        return pairings(self.views)


def pairings(views: Sequence[RunView]) -> list[Pairing]:
    """Every CRS × simulator pairing of the runs, in report order (runs, then their summaries)."""
    several = len(views) > 1
    return [
        Pairing(Series(s.crs_id or "", s.simulator_id or "", v.label if several else None), v, s)
        for v in views
        for s in v.summaries
    ]


def format_cell(agg: Aggregate) -> dict[str, str]:
    """A metric cell: the mean, and on its own line the interval (or why there is none)."""
    if agg.mean is None:
        return {"mean": "n/a", "ci": ""}
    if agg.ci_low is not None and agg.ci_high is not None:
        ci = f"[{agg.ci_low:.3f}, {agg.ci_high:.3f}]" + (USER_MARK if agg.method == USER_BOOTSTRAP else "")
    else:
        ci = f"(n = {agg.n}, no CI)"
    if agg.missing:
        ci += f" ({agg.missing} missing)"
    return {"mean": f"{agg.mean:.3f}", "ci": ci}


def _evaluated(summary: GroupSummary) -> int:
    return summary.n_evaluable if summary.n_evaluable is not None else summary.n_dialogues


# ---------------------------------------------------------------------------------------------
# Results tables


def count_rows(context: ReportContext) -> list[dict[str, Any]]:
    """One row per pairing: its colour in the plots, dialogues, evaluable, users, errors, ambiguous links."""
    return [
        {
            "name": p.series.name,
            "colour": context.palette.colour(p.series.name),
            "run": p.view.label,
            "dataset": p.view.folder.dataset,
            "crs": p.series.crs,
            "simulator": p.series.simulator,
            "n": p.summary.n_dialogues,
            "evaluable": evaluable_text(p.summary),
            "users": users_text(p.summary),
            "failed": failures(p.summary),
            "errors": failures_text(p.summary),
            "ambiguous": ambiguous_text(p.summary),
        }
        for p in context.pairings
    ]


def _families(metrics: Sequence[str]) -> dict[str, list[str]]:
    """Metrics by family: plain metrics under "", an evaluator's aspects (`quality5/…`) under its name."""
    found: dict[str, list[str]] = {}
    for label in metrics:
        family = label.split("/", 1)[0] if "/" in label else ""
        found.setdefault(family, []).append(label)
    return found


def metric_tables(context: ReportContext, metrics: Sequence[str]) -> list[dict[str, Any]]:
    """The results as tables of at most `COLUMNS_PER_TABLE` metrics, one row per pairing: plain metrics
    first, then each evaluator's aspects in a table of their own, so none hides behind a scroll bar."""
    judged = {label for v in context.views for label in v.judged}
    tables = []
    for family, labels in _families(metrics).items():
        chunks = [labels[i : i + COLUMNS_PER_TABLE] for i in range(0, len(labels), COLUMNS_PER_TABLE)]
        for index, chunk in enumerate(chunks):
            title = family or "Metrics"
            if family and any(label in judged for label in chunk):
                title += " (LLM judge)"
            if len(chunks) > 1:
                title += f", part {index + 1} of {len(chunks)}"
            rows = [
                {
                    "name": p.series.name,
                    "colour": context.palette.colour(p.series.name),
                    "cells": [
                        format_cell(p.summary.metrics[m]) if m in p.summary.metrics else None for m in chunk
                    ],
                }
                for p in context.pairings
            ]
            columns = [m.split("/", 1)[1] if family else m for m in chunk]
            tables.append({"title": title, "columns": columns, "rows": rows})
    return tables


# ---------------------------------------------------------------------------------------------
# Plots


def _add(found: list[dict[str, str]], key: str, title: str, caption: str, figure: Any) -> None:
    drawn = plots.draw(figure)
    found.append({"key": key, "title": title, "caption": caption, "uri": drawn.uri, "boxes": drawn.boxes})


def _counts(context: ReportContext) -> dict[str, int]:
    return {p.series.name: _evaluated(p.summary) for p in context.pairings}


def _curves(context: ReportContext, found: list[dict[str, str]]) -> None:
    panels: dict[str, dict[str, list[float | None]]] = {}
    bands: dict[str, dict[str, plots.Band]] = {}
    longest = max((v.longest for v in context.views), default=0)
    for p in context.pairings:
        for label, groups in p.view.curves.items():
            curve = groups.get((p.series.crs, p.series.simulator))
            means = curve.means(max(1, longest)) if curve is not None else []
            if curve is not None and any(m is not None for m in means):
                panels.setdefault(label, {})[p.series.name] = means
                bands.setdefault(label, {})[p.series.name] = curve.intervals(max(1, longest))
    if panels:
        _add(
            found,
            "curves",
            "Coverage and recall per turn",
            "Population mean of PC_t@K (targets recommended up to turn t) and Recall@(t,K) (targets in "
            "the list standing at turn t) over the evaluable dialogues (n per pairing in the legend); a "
            "dialogue that ended keeps its last state. The band is the 95% normal interval of the mean "
            "at each turn (mean ± 1.96 s/√n), clipped to [0, 1].",
            plots.turn_curves(list(panels.items()), context.palette, _counts(context), bands),
        )


def _values(context: ReportContext, labels: Sequence[str]) -> dict[str, dict[str, Sequence[float]]]:
    """Per metric, per pairing: the per-dialogue values (turn-level ones averaged per dialogue)."""
    found: dict[str, dict[str, Sequence[float]]] = {}
    for label in labels:
        for p in context.pairings:
            values = p.view.values.get(label, {}).get((p.series.crs, p.series.simulator))
            if values:
                found.setdefault(label, {})[p.series.name] = values
    return found


def _proportions(context: ReportContext, labels: Sequence[str], found: list[dict[str, str]]) -> None:
    values = _values(context, labels)
    if not values:
        return
    counts = {
        label: {name: (int(sum(v)), len(v)) for name, v in groups.items()} for label, groups in values.items()
    }
    _add(
        found,
        "proportions",
        "0/1 metrics as proportions",
        "Share of evaluable dialogues scoring 1 (k of n beside each pairing) with its 95% Wilson score "
        "interval, which stays inside [0, 1] and is not zero-width at 0 or n successes. The results "
        "table gives the bootstrap interval of the same mean.",
        plots.proportions(counts, context.palette),
    )


def _interval(agg: Aggregate | None) -> plots.Interval | None:
    if agg is None or agg.mean is None:
        return None
    return (agg.mean, agg.ci_low, agg.ci_high, agg.n)


def _continuous(context: ReportContext, labels: Sequence[str], found: list[dict[str, str]]) -> None:
    values = _values(context, labels)
    if not values:
        return
    if len(values) <= MOST_BOX_PANELS:
        _add(
            found,
            "distributions",
            "Score distributions per metric",
            "Per-dialogue values of the evaluable dialogues (turn-level aspects averaged per dialogue), "
            "n per pairing on the left; the box spans the middle half, the line is the median, the "
            "white triangle the mean, the whiskers reach 1.5 box lengths, circles are dialogues beyond them.",
            plots.distributions(values, context.palette),
        )
        return
    means: dict[str, dict[str, plots.Interval]] = {}
    for label in values:
        for p in context.pairings:
            cell = _interval(p.summary.metrics.get(label))
            if cell is not None:
                means.setdefault(label, {})[p.series.name] = cell
    _add(
        found,
        "summary",
        f"{len(means)} metrics at a glance",
        "Mean per pairing with its 95% bootstrap interval (from the run's summary, as in the results table), "
        "one small panel per metric; n = evaluable dialogues per pairing, on the left.",
        plots.means_grid(means, context.palette),
    )


def _judges(context: ReportContext, found: list[dict[str, str]]) -> None:
    judged = list(dict.fromkeys(label for v in context.views for label in v.judged))
    scores: dict[str, dict[str, tuple[Sequence[float], plots.Interval]]] = {}
    for label in judged:
        for p in context.pairings:
            cell = _interval(p.summary.metrics.get(label))
            values: Sequence[float] = p.view.values.get(label, {}).get((p.series.crs, p.series.simulator), [])
            if cell is not None:
                scores.setdefault(label, {})[p.series.name] = (values, cell)
    if scores:
        _add(
            found,
            "judge",
            "Judge scores per pairing",
            f"Scores a language model gave, on each rubric's scale. From n = {plots.FEW} dialogues up: "
            "the mean with its 95% bootstrap interval; below that, every dialogue's score as a point "
            "(equal scores side by side) and the mean as a bar, since an interval from so few values "
            "says little.",
            plots.judge_scores(scores, {label: judge_scale(label) for label in scores}, context.palette),
        )


def plot_list(context: ReportContext, rank_by: str | None) -> list[dict[str, str]]:
    """Every plot of the report, with its title, caption (how it was computed, its n) and boxes."""
    found: list[dict[str, str]] = []
    _curves(context, found)
    judged = {label for v in context.views for label in v.judged}
    labels = [
        label for label in dict.fromkeys(m for v in context.views for m in v.values) if label not in judged
    ]
    declared: dict[str, bool] = {}
    for view in context.views:
        recorded = view.metrics or None  # empty: a summary from before crsim recorded the metadata
        declared.update(declared_binary(recorded, view.folder.typed_manifest.metrics or []))
    binary = binary_metrics({label: g.values() for label, g in _values(context, labels).items()}, declared)
    _proportions(context, binary, found)
    _continuous(context, [label for label in labels if label not in binary], found)
    _judges(context, found)
    _ranks_plot(context, rank_by, found)
    return found


# ---------------------------------------------------------------------------------------------
# Simulator disagreement


@dataclass
class Ranks:
    """Columns (one per simulator, and run when several) and each CRS's cell in each."""

    columns: list[str]
    cells: dict[str, dict[str, plots.RankCell]]
    colours: dict[tuple[str, str], str]
    runs: list[str]


def _told_apart(
    context: ReportContext, run: str, simulator: str, metric: str, cells: dict[str, Aggregate]
) -> set[frozenset[str]]:
    """Pairs of CRSs significantly different under one simulator: from the paired comparison (Holm),
    or where there is none, pairs whose 95% intervals do not overlap."""
    for label, result in context.compared:
        if label == run and result.simulator == simulator and result.metric == metric:
            return {frozenset((p.crs_a, p.crs_b)) for p in result.pairs if p.significant}
    apart = set()
    for a, x in cells.items():
        for b, y in cells.items():
            if a < b and _disjoint(x, y):
                apart.add(frozenset((a, b)))
    return apart


def _disjoint(x: Aggregate, y: Aggregate) -> bool:
    """Whether two aggregates' intervals are known and do not overlap."""
    if x.ci_low is None or x.ci_high is None or y.ci_low is None or y.ci_high is None:
        return False
    return x.ci_high < y.ci_low or y.ci_high < x.ci_low


def ranks(context: ReportContext, rank_by: str | None) -> Ranks:
    """Each simulator's CRSs by `rank_by` (better first by its recorded direction; higher first when
    the summary does not record one), with the places each could hold."""
    found = Ranks([], {}, {}, [])
    if rank_by is None:
        return found
    columns: dict[str, tuple[str, str, dict[str, Aggregate]]] = {}
    for p in context.pairings:
        agg = p.summary.metrics.get(rank_by)
        if agg is None or agg.mean is None:
            continue
        column = p.series.simulator + (f" [{p.view.label}]" if len(context.views) > 1 else "")
        columns.setdefault(column, (p.view.label, p.series.simulator, {}))[2][p.series.crs] = agg
        found.colours[(column, p.series.crs)] = context.palette.colour(p.series.name)
    for column, (run, simulator, aggs) in columns.items():
        if len(aggs) < 2:
            continue
        apart = _told_apart(context, run, simulator, rank_by, aggs)
        means = {crs: agg.mean for crs, agg in aggs.items() if agg.mean is not None}
        info = next((v.metrics.get(rank_by) for v in context.views if v.label == run), None)
        sign = -1.0 if info is not None and info.direction == "lower" else 1.0
        placed = {crs: sign * mean for crs, mean in means.items()}
        found.columns.append(column)
        found.runs.append(run)
        found.cells[column] = {
            crs: plots.RankCell(means[crs], agg.ci_low, agg.ci_high, agg.n, *rank_range(crs, placed, apart))
            for crs, agg in aggs.items()
        }
    return found


def _ranks_plot(context: ReportContext, rank_by: str | None, found: list[dict[str, str]]) -> None:
    table = ranks(context, rank_by)
    crss = {crs for cells in table.cells.values() for crs in cells}
    # simulators by name: one simulator in two runs is one simulator, and shows no disagreement
    simulators = {p.series.simulator for p in context.pairings if rank_by in p.summary.metrics}
    if rank_by is None or len(table.columns) < 2 or len(crss) < 2 or len(simulators) < 2:
        return
    _add(
        found,
        "ranks",
        f"Simulator disagreement: CRSs by {rank_by} under each simulator",
        f"Each column is one simulator: every CRS's mean {rank_by} with its 95% bootstrap interval, "
        "CRSs set side by side so equal means stay apart. Beside each point, the places the CRS could "
        "hold: CRSs whose paired difference is not significant (Holm, as in Comparisons; intervals "
        'that overlap where there is no paired comparison) share places, so "1–2" is a tie. Lines '
        "that cross between tied CRSs are no disagreement. n (dialogues per point) on the vertical "
        "axis; a dashed rule separates runs, which met different users, and no line crosses it.",
        plots.disagreement(
            table.columns, table.cells, context.palette.crs_colours, table.colours, rank_by, table.runs
        ),
    )


def rank_table(context: ReportContext, rank_by: str | None) -> dict[str, Any]:
    """The places of each CRS under each simulator, with the mean they come from."""
    table = ranks(context, rank_by)
    crss = sorted({crs for cells in table.cells.values() for crs in cells})
    rows = []
    for crs in crss:
        cells = []
        for column in table.columns:
            cell = table.cells[column].get(crs)
            cells.append(
                None
                if cell is None
                else {"places": rank_text(cell.best, cell.worst), "mean": f"{cell.mean:.3f}", "n": cell.n}
            )
        rows.append({"crs": crs, "colour": context.palette.crs_colours.get(crs, "#555555"), "cells": cells})
    return {"columns": table.columns, "rows": rows}
