"""The report's sections of the validation studies a run folder holds.

`crsim validate sensitivity` writes `sensitivity.json` into its study folder (a run folder) and
`crsim validate fidelity` writes `fidelity_<corpus>.json` into the run it read; `crsim report` on
that folder shows them: a table and a figure per study, drawn here for the HTML page (PNG, through
`plots.draw`) and for print (`crsim report --figures svg|pdf`, through `export_figures`).

The package: `common` (reading the results, numbers, colours), `sensitivity`, `fidelity` and `output`
(the page's sections and the print figures).
"""

from __future__ import annotations

from crsim.report.studies.common import RunStudies, run_studies
from crsim.report.studies.output import study_print_figures, study_sections

__all__ = ["RunStudies", "run_studies", "study_print_figures", "study_sections"]
