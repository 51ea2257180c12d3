"""What the study sections share: the study results a run folder holds (read once, with errors that
name the file and the field), how their numbers are written, and the colours of their figures."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from crsim.core.errors import CrsimError
from crsim.model.run_folder.files import FIDELITY_PREFIX
from crsim.report.sections import ReportContext
from crsim.studies.fidelity import FidelityReport
from crsim.studies.sensitivity import SENSITIVITY_FILE, Sensitivity

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


def number(value: float | None, digits: int = 3) -> str:
    """A value as the tables write it ("–" for none)."""
    return "–" if value is None else f"{value:.{digits}f}"


def interval(bounds: Sequence[float] | None, digits: int = 3) -> str:
    """An interval as the tables write it ("" for none)."""
    return "" if bounds is None else f"[{bounds[0]:.{digits}f}, {bounds[1]:.{digits}f}]"
