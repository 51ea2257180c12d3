"""`crsim compare`: paired comparisons between the CRSs of evaluated run folders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from crsim.cli._support import user_errors, warn_incomplete
from crsim.core.errors import CrsimError

if TYPE_CHECKING:
    from crsim.model.run_folder.folder import RunFolder

app = typer.Typer(add_completion=False)


@app.command()
def compare(
    run_dirs: Annotated[
        list[Path], typer.Argument(help="Evaluated run folders (CRSs that met the same users).")
    ],
    baseline: Annotated[
        str | None, typer.Option(help="Compare every CRS with this one only (default: all pairs).")
    ] = None,
    metrics: Annotated[
        list[str] | None,
        typer.Option(
            "--metrics",
            help="Metrics to compare, by name or label (success_rate, 'Recall@(t,10)'), comma-separated "
            "or repeated (default: all scored).",
        ),
    ] = None,
    detect: Annotated[
        float | None, typer.Option(min=0.0, help="Also say how many users would detect this difference.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Paired comparisons between CRSs: differences with bootstrap CIs, paired tests, Holm-corrected
    p-values, ranks with significance groups and the smallest difference the run could detect.

    Pairs are the dialogues of the same simulated user (and trial); dialogues broken by the simulator
    or the infrastructure are dropped with their pair. See docs/compare.md.
    """
    from crsim.model.run_folder.folder import open_run
    from crsim.report.compare import compare_folders, comparison_lines
    from crsim.studies.compare import ComparisonOptions

    with user_errors():
        for path in run_dirs:
            if metrics and not path.exists():  # `--metrics a b`: b was taken for a run folder
                raise CrsimError(
                    f"{path}: no such run folder; several metrics are given as --metrics a,b or "
                    "--metrics a --metrics b"
                )
        folders = [open_run(path) for path in run_dirs]
        labels = _labels(metrics, folders) if metrics else None
        options = ComparisonOptions(baseline=baseline, metrics=labels, detect=detect or None)
        found = compare_folders(folders, options)
    held = [folder.completeness() for folder in folders]
    for one in held:
        warn_incomplete(one)
    if as_json:
        runs = [
            {"path": str(c.path), "planned": c.planned, "held": c.held, "complete": c.complete} for c in held
        ]
        data = {**found.comparison.model_dump(mode="json"), "notes": found.notes}
        complete = all(c.complete for c in held)
        typer.echo(json.dumps({**data, "complete": complete, "runs": runs}, indent=2))
        return
    for line in comparison_lines(found):
        typer.echo(line)


def _labels(values: list[str], folders: list[RunFolder]) -> list[str]:
    """The scored labels `--metrics` names (by label or metric name) in these runs."""
    from crsim.cli._metrics import metric_labels

    scored: dict[str, None] = {}
    configured: list[Any] = []
    for folder in folders:
        if folder.scores_path.is_file():
            scored.update(dict.fromkeys(record.metric for record in folder.scores()))
        configured += [spec.model_dump() for spec in folder.typed_manifest.metrics or []]
    return metric_labels(values, list(scored), configured)
