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

from crsim.core.errors import ConfigError
from crsim.core.secrets import redact
from crsim.core.version import installed_version
from crsim.eval.stats import USER_BOOTSTRAP
from crsim.model.run_folder.files import part_path
from crsim.model.run_folder.folder import RunFolder
from crsim.report.behaviour import behaviour_sections
from crsim.report.collect import RunView, collect_run
from crsim.report.compare import html_comparisons, html_verdicts, run_comparisons
from crsim.report.figures import Palette
from crsim.report.sections import (
    ReportContext,
    count_rows,
    metric_tables,
    pairings,
    plot_list,
    rank_table,
)
from crsim.report.studies import study_sections
from crsim.report.tables import USER_NOTE
from crsim.report.titles import item_titles

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


def report_context(
    folders: Sequence[RunFolder], *, max_dialogues: int = DEFAULT_MAX_DIALOGUES
) -> ReportContext:
    """What the HTML report and the paper tables and figures are made from: the runs as the report
    sees them, the palette and the paired comparisons (computed once for all of them)."""
    views = [
        collect_run(folder, label, max_dialogues)
        for folder, label in zip(folders, _labels(folders), strict=True)
    ]
    compared, verdicts = run_comparisons([v.folder for v in views], [v.label for v in views])
    return ReportContext(views, Palette([p.series for p in pairings(views)]), compared, verdicts)


def report_metrics(context: ReportContext) -> list[str]:
    """Every metric label of the runs' summaries, in order of first appearance."""
    metrics: list[str] = []
    for view in context.views:
        for summary in view.summaries:
            metrics.extend(label for label in summary.metrics if label not in metrics)
    return metrics


def ranked_by(metrics: Sequence[str], rank_metric: str | None) -> str | None:
    """The metric that ranks CRSs per simulator: the one asked for, else Success, else the first."""
    if rank_metric is not None and rank_metric not in metrics:
        raise ConfigError(f"--rank-metric: no metric {rank_metric!r}; the runs have {', '.join(metrics)}")
    return rank_metric or ("Success" if "Success" in metrics else (metrics[0] if metrics else None))


def build_report(
    folders: Sequence[RunFolder],
    *,
    max_dialogues: int = DEFAULT_MAX_DIALOGUES,
    rank_metric: str | None = None,
    context: ReportContext | None = None,
) -> str:
    """The report of one or more evaluated run folders, as one HTML string (from `context` when the
    caller has already built it from the same folders)."""
    context = context or report_context(folders, max_dialogues=max_dialogues)
    views = context.views
    metrics = report_metrics(context)
    rank_by = ranked_by(metrics, rank_metric)
    env = Environment(loader=PackageLoader("crsim.report", "templates"), autoescape=True)
    template = env.get_template("report.html.j2")
    return template.render(
        version=installed_version(),
        runs=[_run_context(v) for v in views],
        counts=count_rows(context),
        tables=metric_tables(context, metrics),
        user_note=USER_NOTE
        if any(a.method == USER_BOOTSTRAP for v in views for s in v.summaries for a in s.metrics.values())
        else None,
        plots=plot_list(context, rank_by),
        ranks=rank_table(context, rank_by),
        comparisons=html_comparisons(context.compared),
        verdicts=html_verdicts(context.verdicts),
        behaviour=behaviour_sections(context),
        **study_sections(context),
        rank_by=rank_by,
        shown=sum(len(v.browser) for v in views),
        total=sum(v.total_dialogues for v in views),
        browser_seeds=sorted({v.browser_seed for v in views if v.browser_seed is not None}),
        data=script_json(
            {
                "runs": [v.label for v in views],
                "metrics": metrics,
                "titles": _titles(views),
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
