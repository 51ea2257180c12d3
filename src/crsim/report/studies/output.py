"""The study sections of the HTML page, and the study figures at print size with their file stems."""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from crsim.report.sections import ReportContext
from crsim.report.studies.common import run_studies
from crsim.report.studies.fidelity import fidelity_figure, fidelity_sections, values_figure
from crsim.report.studies.sensitivity import sensitivity_blocks, sensitivity_figure, sensitivity_section


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
