"""`crsim validate detectors`: the behaviour report's rules against a labelled set (two readers)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from crsim.cli._support import console, user_errors

if TYPE_CHECKING:
    from rich.table import Table

    from crsim.studies.behaviour.validation import DetectorValidation


def detectors_command(
    folder: Annotated[
        Path,
        typer.Argument(
            help="A labelled set: its dialogues, two readers' label files, optionally an adjudication."
        ),
    ],
    readers: Annotated[
        list[str] | None,
        typer.Option(
            "--reader", help="A reader's label file in the folder (twice; default: the two labels-*.jsonl)."
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("-o", "--out", help="Write FILE.csv (one row per behaviour) or FILE.json.")
    ] = None,
    part: Annotated[
        str,
        typer.Option(
            "--part",
            help="all, or a half of the set: dev (1st, 3rd, ... dialogue; tune rules here) or test.",
        ),
    ] = "all",
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Per behaviour of docs/behaviour.md: the two readers' agreement (share, Cohen's kappa), the rule's
    precision and recall against their gold label (95% Wilson intervals) and its status (validated:
    precision >= 0.9 and recall >= 0.8). See tests/fixtures/behaviour_labels/GUIDE.md."""
    from crsim.core.errors import CrsimError
    from crsim.studies.behaviour.validation import validate_detectors, write_checks

    with user_errors():
        if readers is not None and len(readers) != 2:
            raise CrsimError(f"--reader: give two reader files, got {len(readers)}")
        result = validate_detectors(folder, (readers[0], readers[1]) if readers else None, part)
        if out is not None:
            write_checks(result, out)
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
        return
    console.print(_checks_table(result, part))


def _checks_table(result: DetectorValidation, part: str) -> Table:
    """One row per behaviour: the readers' agreement, the gold counts, the rule's precision, recall
    and status."""
    from rich.table import Table

    from crsim.studies.behaviour.validation import rate_text

    table = Table(
        title=f"Detectors against {' and '.join(result.readers)} ({result.dialogues} dialogues, {part})"
    )
    for column in (
        "behaviour",
        "unit",
        "agree",
        "kappa",
        "gold +/n",
        "excl.",
        "precision",
        "recall",
        "status",
    ):
        table.add_column(column)
    for c in result.checks:
        table.add_row(
            c.behaviour,
            c.unit,
            "" if c.agreement is None else f"{c.agreement:.3f}",
            "-" if c.kappa is None else f"{c.kappa:.2f}",
            f"{c.gold_positive}/{c.gold_units}",
            str(c.excluded),
            rate_text(c.precision),
            rate_text(c.recall),
            c.status,
        )
    return table
