"""`crsim report`: one self-contained HTML report of run folders."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from crsim.cli._support import console, stopped_by_signals, user_errors, warn_incomplete
from crsim.model.run_folder.files import REPORT

app = typer.Typer(add_completion=False)


class TableFormat(StrEnum):
    latex = "latex"
    markdown = "markdown"


class FigureFormat(StrEnum):
    svg = "svg"
    pdf = "pdf"


@app.command()
def report(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run folders written by `crsim run`.")],
    output: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")] = Path(REPORT),
    max_dialogues: Annotated[
        int, typer.Option(min=0, help="Dialogues per run in the browser, spread evenly (tables use all).")
    ] = 2000,
    rank_metric: Annotated[
        str | None, typer.Option(help="Metric label that ranks CRSs per simulator (default: Success).")
    ] = None,
    tables: Annotated[
        TableFormat | None,
        typer.Option(
            help="Also write the results and comparison tables (results.tex/.md, comparisons.tex/.md)."
        ),
    ] = None,
    figures: Annotated[
        FigureFormat | None,
        typer.Option(help="Also write every figure as a vector file at print size, into figures/."),
    ] = None,
) -> None:
    """One self-contained HTML report: manifests, results with CIs, plots and a dialogue browser.

    A run without scores.jsonl/summary.json is evaluated first with its manifest's metrics (as
    `crsim evaluate RUN_DIR` does), and the results are written into the run folder.
    """
    from crsim.eval.run_scoring import evaluate_path
    from crsim.model.run_folder.folder import open_run
    from crsim.report.html import build_report, report_context, write_report
    from crsim.report.paper_files import write_paper
    from crsim.runner.progress import ProgressReport

    progress = ProgressReport()

    with user_errors(), stopped_by_signals("no report written"):
        folders = [open_run(path) for path in run_dirs]
        for folder in folders:
            if not folder.evaluated:
                console.print(
                    f"{escape(str(folder.path))}: no scores yet; evaluating", highlight=False, soft_wrap=True
                )
                with progress.phase("scoring") as meter:
                    evaluate_path(folder.path, progress=meter)
        context = report_context(folders, max_dialogues=max_dialogues)
        html = build_report(folders, rank_metric=rank_metric, context=context)
        write_report(html, output)
        written = write_paper(
            context,
            output.parent,
            tables=tables.value if tables else None,
            figures=figures.value if figures else None,
            rank_metric=rank_metric,
        )
    progress.print_summary()
    for folder in folders:
        warn_incomplete(folder.completeness())
    console.print(f"report: [bold]{escape(str(output))}[/bold]", highlight=False, soft_wrap=True)
    for path in written:
        console.print(f"  {escape(str(path))}", highlight=False, soft_wrap=True)
