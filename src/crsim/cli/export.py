"""`crsim export`: a run's dialogues, utterances and scores as Parquet or CSV tables."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from crsim.cli._support import console, errors, user_errors
from crsim.core.errors import CrsimError
from crsim.model.run_folder.files import RunPaths

app = typer.Typer(add_completion=False)


@app.command()
def export(
    run_dir: Annotated[Path, typer.Argument(help="A run folder written by `crsim run`.")],
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format", help="parquet or csv (default: parquet when pyarrow is installed, else csv)."
        ),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--out", "-o", help="Output folder (default: RUN_DIR/export).")
    ] = None,
) -> None:
    """Dialogues, utterances and scores of a run as Parquet or CSV tables (crsim.report.dataframes)."""
    from crsim.report.dataframes import export_run

    with user_errors():
        if not _installed("pandas"):
            raise CrsimError(
                "crsim export needs pandas (and pyarrow for Parquet): pip install 'crsim[analysis]'"
            )
        if fmt is None:
            fmt = "parquet" if _installed("pyarrow") else "csv"
            if fmt == "csv":
                errors.print(
                    "pyarrow is not installed: writing CSV (pip install 'crsim[analysis]' for Parquet)",
                    highlight=False,
                    markup=False,
                    soft_wrap=True,
                )
        if fmt not in ("parquet", "csv"):
            raise CrsimError(f"--format: unknown format {fmt!r}; expected parquet or csv")
        written = export_run(
            run_dir, output or RunPaths(run_dir).export_dir, "parquet" if fmt == "parquet" else "csv"
        )
    for path in written:
        console.print(escape(str(path)), highlight=False)


def _installed(module: str) -> bool:
    """Whether `module` imports (a module hidden as None in sys.modules does not)."""
    try:
        __import__(module)
    except ImportError:
        return False
    return True
