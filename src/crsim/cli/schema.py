"""`crsim schema`: the JSON Schema of a record type of the unified format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from crsim.cli._support import user_errors
from crsim.core.errors import CrsimError

app = typer.Typer(add_completion=False)


@app.command()
def schema(
    kind: Annotated[str, typer.Option(help="dialogue, item, user or config.")] = "dialogue",
    output: Annotated[Path | None, typer.Option("--out", "-o", help="Write to this file.")] = None,
) -> None:
    """Print the JSON Schema of a record type of the unified format."""
    from crsim.model import Dialogue, Item, SimulatedUser
    from crsim.runner.config import ExperimentConfig

    kinds: dict[str, Any] = {
        "dialogue": Dialogue,
        "item": Item,
        "user": SimulatedUser,
        "config": ExperimentConfig,
    }
    with user_errors():
        if kind not in kinds:
            raise CrsimError(f"--kind: unknown record type {kind!r}; expected one of: {', '.join(kinds)}")
        text = json.dumps(kinds[kind].model_json_schema(), indent=2)
    if output is None:
        typer.echo(text)
    else:
        output.write_text(text + "\n", encoding="utf-8")
