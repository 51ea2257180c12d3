"""The self-contained HTML report: manifests, results with CIs, plots and a dialogue browser.

Everything is in the one file: CSS and JavaScript inline, plots as base64 PNG, dialogues as JSON in a
`<script type="application/json">` block. Text recorded from CRSs, users and LLMs reaches the page
only through Jinja's autoescaping or, in the browser, through `textContent`; the JSON block escapes
`<`, `>` and `&` so no recorded text can close the block or open a comment.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader
from markupsafe import Markup

from crsim import __version__
from crsim.errors import ConfigError
from crsim.eval.stats import USER_BOOTSTRAP, Aggregate
from crsim.model.run_folder.files import part_path
from crsim.model.run_folder.folder import RunFolder
from crsim.redact import redact
from crsim.report import plots
from crsim.report.collect import RunView, collect_run
from crsim.report.compare import html_comparisons
from crsim.report.run_folder import item_titles
from crsim.report.tables import USER_MARK, USER_NOTE, evaluable_text, failures, failures_text, users_text

#: Dialogues per run kept for the browser unless told otherwise (the plots and tables use all).
DEFAULT_MAX_DIALOGUES = 2000


def script_json(data: Any) -> Markup:
    """JSON for a `<script type="application/json">` block: `<`, `>`, `&` and the JavaScript line
    separators as \\u escapes, so recorded text can neither end the block nor start `<!--`."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escape)
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return Markup(text)  # escaped above for this context


def _static(name: str) -> Markup:
    """Our own CSS/JS, shipped in the package (never data), inlined as it is."""
    return Markup((files("crsim.report") / "templates" / name).read_text(encoding="utf-8"))


def _labels(folders: Sequence[RunFolder]) -> list[str]:
    labels: list[str] = []
    for folder in folders:
        label, n = folder.name, 2
        while label in labels:
            label, n = f"{folder.name} ({n})", n + 1
        labels.append(label)
    return labels


def format_cell(agg: Aggregate) -> str:
    if agg.mean is None:
        return "n/a"
    text = f"{agg.mean:.3f}"
    if agg.ci_low is not None and agg.ci_high is not None:
        text += f" [{agg.ci_low:.3f}, {agg.ci_high:.3f}]"
        if agg.method == USER_BOOTSTRAP:
            text += USER_MARK
    return text


def build_report(
    folders: Sequence[RunFolder],
    *,
    max_dialogues: int = DEFAULT_MAX_DIALOGUES,
    rank_metric: str | None = None,
) -> str:
    """The report of one or more evaluated run folders, as one HTML string."""
    views = [
        collect_run(folder, label, max_dialogues)
        for folder, label in zip(folders, _labels(folders), strict=True)
    ]
    several = len(views) > 1
    metrics: list[str] = []
    for view in views:
        for summary in view.summaries:
            metrics.extend(label for label in summary.metrics if label not in metrics)
    if rank_metric is not None and rank_metric not in metrics:
        raise ConfigError(f"--rank-metric: no metric {rank_metric!r}; the runs have {', '.join(metrics)}")
    rank_by = rank_metric or ("Success" if "Success" in metrics else (metrics[0] if metrics else None))
    titles = _titles(views)
    env = Environment(loader=PackageLoader("crsim.report", "templates"), autoescape=True)
    template = env.get_template("report.html.j2")
    return template.render(
        version=__version__,
        runs=[_run_context(v) for v in views],
        metrics=metrics,
        rows=_rows(views, metrics),
        user_note=USER_NOTE
        if any(a.method == USER_BOOTSTRAP for v in views for s in v.summaries for a in s.metrics.values())
        else None,
        plots=_plots(views, several, rank_by),
        ranks=_rank_table(views, rank_by),
        comparisons=html_comparisons([v.folder for v in views], [v.label for v in views]),
        rank_by=rank_by,
        shown=sum(len(v.browser) for v in views),
        total=sum(v.total_dialogues for v in views),
        data=script_json(
            {
                "runs": [v.label for v in views],
                "metrics": metrics,
                "titles": titles,
                "dialogues": [entry for v in views for entry in v.browser],
            }
        ),
        css=_static("report.css"),
        js=_static("report.js"),
    )


def _titles(views: Sequence[RunView]) -> dict[str, str]:
    """Item id -> title of every item the sampled dialogues show, in id order: the ids are
    collected in sets, whose order follows PYTHONHASHSEED, and the report must not."""
    titles: dict[str, str] = {}
    shown = sorted(set().union(*(v.item_ids for v in views)))
    for domain in sorted({v.folder.domain for v in views}):
        found = item_titles(domain)
        titles.update({i: found[i] for i in shown if i in found})
    return titles


def write_report(html: str, path: str | Path) -> None:
    """Write the report through a temporary file beside it, renamed into place when complete."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = part_path(path)
    temp.write_text(redact(html), encoding="utf-8")  # a last pass: no secret in the report
    os.replace(temp, path)


def _run_context(view: RunView) -> dict[str, Any]:
    manifest = view.folder.manifest
    return {
        "label": view.label,
        "dataset": view.folder.dataset,
        "created_at": manifest.get("created_at", ""),
        "planned": manifest.get("planned_dialogues", ""),
        "dialogues": view.total_dialogues,
        "browser": len(view.browser),
        "manifest": json.dumps(manifest, indent=2, ensure_ascii=False, sort_keys=False),
    }


def _rows(views: Sequence[RunView], metrics: Sequence[str]) -> list[dict[str, Any]]:
    rows = []
    for view in views:
        for summary in view.summaries:
            rows.append(
                {
                    "run": view.label,
                    "dataset": view.folder.dataset,
                    "crs": summary.crs_id or "",
                    "simulator": summary.simulator_id or "",
                    "n": summary.n_dialogues,
                    "evaluable": evaluable_text(summary),
                    "users": users_text(summary),
                    "failed": failures(summary),
                    "errors": failures_text(summary),
                    "cells": [
                        format_cell(summary.metrics[m]) if m in summary.metrics else "" for m in metrics
                    ],
                }
            )
    return rows


def _series(view: RunView, crs: str, simulator: str, several: bool) -> str:
    name = f"{crs} × {simulator}"
    return f"{name} [{view.label}]" if several else name


def _plots(views: Sequence[RunView], several: bool, rank_by: str | None) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []

    def add(key: str, title: str, caption: str, figure: Any) -> None:
        found.append({"key": key, "title": title, "caption": caption, "uri": plots.png_data_uri(figure)})

    panels: dict[str, dict[str, list[float | None]]] = {}
    longest = max((v.longest for v in views), default=0)
    for view in views:
        for label, groups in view.curves.items():
            for (crs, sim), curve in groups.items():
                means = curve.means(max(1, longest))
                if any(m is not None for m in means):
                    panels.setdefault(label, {})[_series(view, crs, sim, several)] = means
    if panels:
        add(
            "curves",
            "Coverage and recall per turn",
            "Population mean of PC_t@K (targets recommended up to turn t) and Recall@(t,K) (targets in "
            "the list standing at turn t); a dialogue that ended keeps its last state.",
            plots.turn_curves(list(panels.items())),
        )
    spread: dict[str, dict[str, list[float]]] = {}
    for view in views:
        for label, by_group in view.values.items():
            for (crs, sim), values in by_group.items():
                if values:
                    spread.setdefault(label, {})[_series(view, crs, sim, several)] = values
    if spread:
        add(
            "distributions",
            "Score distributions per aspect",
            "Per-dialogue values (turn-level aspects averaged per dialogue); the box spans the middle "
            "half, the line is the median, the triangle the mean.",
            plots.distributions(spread),
        )
    judged: dict[str, dict[str, tuple[float, float | None, float | None]]] = {}
    for view in views:
        for summary in view.summaries:
            for label in view.judged:
                agg = summary.metrics.get(label)
                if agg is not None and agg.mean is not None:
                    name = summary.crs_id or ""
                    if len({s.simulator_id for s in view.summaries}) > 1:
                        name += f" × {summary.simulator_id}"
                    if several:
                        name += f" [{view.label}]"
                    judged.setdefault(label, {})[name] = (agg.mean, agg.ci_low, agg.ci_high)
    if judged:
        add(
            "judge",
            "Judge scores by CRS",
            "Mean judge score per CRS with its 95% bootstrap confidence interval.",
            plots.bars_with_intervals(judged),
        )
    columns, ranks = _ranks(views, rank_by)
    if rank_by and len(columns) > 1 and len(ranks) > 1:
        add(
            "ranks",
            f"Simulator disagreement: CRSs ranked by {rank_by}",
            "Each column ranks the same CRSs by the mean under one simulator (1 = highest). Crossing "
            "lines are pairs of CRSs that the simulators order differently.",
            plots.rank_chart(columns, ranks, rank_by),
        )
    return found


def competition_ranks(means: dict[str, float]) -> dict[str, int]:
    """Rank 1 for the highest mean; tied names share the better place (1, 1, 3)."""
    return {name: 1 + sum(other > mean for other in means.values()) for name, mean in means.items()}


def _ranks(views: Sequence[RunView], rank_by: str | None) -> tuple[list[str], dict[str, list[int | None]]]:
    """Columns (simulator, with run and dataset when several) and the rank of each CRS in each."""
    if rank_by is None:
        return [], {}
    means: dict[str, dict[str, float]] = {}
    several_runs = len(views) > 1
    for view in views:
        for summary in view.summaries:
            agg = summary.metrics.get(rank_by)
            if agg is None or agg.mean is None:
                continue
            column = summary.simulator_id or ""
            if several_runs:
                column = f"{column} [{view.label}]"
            means.setdefault(column, {})[summary.crs_id or ""] = agg.mean
    columns = [c for c, by_crs in means.items() if len(by_crs) > 1]
    crss = sorted({crs for c in columns for crs in means[c]})
    ranks: dict[str, list[int | None]] = {crs: [] for crs in crss}
    for column in columns:
        place = competition_ranks(means[column])
        for crs in crss:
            ranks[crs].append(place.get(crs))
    return columns, ranks


def _rank_table(views: Sequence[RunView], rank_by: str | None) -> dict[str, Any]:
    columns, ranks = _ranks(views, rank_by)
    return {"columns": columns, "rows": [{"crs": crs, "ranks": places} for crs, places in ranks.items()]}
