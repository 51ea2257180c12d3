"""The paper outputs of `crsim report`: tables and vector figures written beside the HTML report."""

from __future__ import annotations

from pathlib import Path

from crsim.report.export_figures import FigureFormat, write_figures
from crsim.report.html import ranked_by, report_metrics
from crsim.report.paper import TableFormat, write_tables
from crsim.report.sections import ReportContext

#: The folder, beside the report, that holds the vector figures.
FIGURES_FOLDER = "figures"


def write_paper(
    context: ReportContext,
    directory: Path,
    *,
    tables: TableFormat | None = None,
    figures: FigureFormat | None = None,
    rank_metric: str | None = None,
) -> list[Path]:
    """The tables (in `directory`) and the figures (in `directory/figures`) asked for; the paths written."""
    written: list[Path] = []
    metrics = report_metrics(context)
    if tables is not None:
        written += write_tables(context, metrics, directory, tables)
    if figures is not None:
        written += write_figures(
            context, ranked_by(metrics, rank_metric), directory / FIGURES_FOLDER, figures
        )
    return written
