"""`crsim validate`: check every record of a file against the unified format."""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path
from typing import Annotated

import typer

from crsim.cli._support import console, errors, user_errors
from crsim.core.errors import CrsimError

app = typer.Typer(add_completion=False)


def _valid_as_another_kind(file: Path, kind: str) -> str | None:
    """The other record kind every record of the file validates as, if there is one."""
    from crsim.model.io import RECORD_KINDS, validate_file

    for other, record_type in RECORD_KINDS.items():
        if other == kind:
            continue
        with suppress(CrsimError):
            count, problems = validate_file(file, record_type)
            if count and not problems:
                return other
    return None


@app.command()
def validate(
    file: Annotated[Path, typer.Argument(help="A .jsonl (one record per line) or .json (array) file.")],
    kind: Annotated[str, typer.Option(help="dialogues or items.")] = "dialogues",
) -> None:
    """Check every record of a file against the unified format; list what is wrong and where."""
    from crsim.model.io import RECORD_KINDS, validate_file

    with user_errors():
        if kind not in RECORD_KINDS:
            raise CrsimError(
                f"--kind: unknown record type {kind!r}; expected one of: {', '.join(RECORD_KINDS)}"
            )
        count, problems = validate_file(file, RECORD_KINDS[kind])
    for problem in problems:
        errors.print(str(problem), highlight=False, soft_wrap=True, markup=False)
    if problems:
        errors.print(f"[red]{len(problems)} problem(s)[/red] in {count} record(s) checked", highlight=False)
        other = _valid_as_another_kind(file, kind)
        if other:
            hint = f"every record is valid as {other}: try --kind {other}"
            errors.print(hint, highlight=False, markup=False)
        raise typer.Exit(1)
    console.print(f"{file}: {count} {kind} valid", highlight=False, markup=False, soft_wrap=True)
