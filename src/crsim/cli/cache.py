"""`crsim cache`: inspect or empty an LLM response cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from crsim.cli._support import console, user_errors

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Inspect or empty an LLM response cache.")


def _cache_file(path: Path) -> Path:
    """A run folder means the cache inside it."""
    from crsim.model.run_folder.files import RunPaths

    return RunPaths(path).llm_cache if path.is_dir() else path


@app.command("stats")
def cache_stats(
    path: Annotated[Path, typer.Argument(help="A run folder or an LLM cache file (.sqlite).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the numbers as JSON.")] = False,
) -> None:
    """Entries per model and size on disk."""
    from crsim.llm.cache import cache_stats as read_stats

    with user_errors():
        stats = read_stats(_cache_file(path))
    if as_json:
        payload = {"path": str(stats.path), "entries": stats.entries, "size_bytes": stats.size_bytes}
        typer.echo(json.dumps({**payload, "by_model": stats.by_model}, indent=2))
        return
    console.print(
        f"{escape(str(stats.path))}: {stats.entries} answers, {stats.size_bytes / 1e6:.2f} MB",
        highlight=False,
    )
    for model, count in stats.by_model.items():
        console.print(f"  {escape(model)}: {count}", highlight=False)


@app.command("clear")
def cache_clear(
    path: Annotated[Path, typer.Argument(help="A run folder or an LLM cache file (.sqlite).")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
) -> None:
    """Delete every cached answer (the next run calls the models again); asks first unless --yes."""
    from crsim.llm.cache import cache_stats as read_stats
    from crsim.llm.cache import clear_cache
    from crsim.model.run_folder.lock import lock_if_run_folder

    with user_errors():
        entries = read_stats(_cache_file(path)).entries if _cache_file(path).is_file() else 0
    if not yes and entries:
        question = f"delete {entries} cached answers from {_cache_file(path)}? (the models are asked again)"
        if not typer.confirm(question, default=False, err=True):
            console.print("nothing deleted", highlight=False)
            raise typer.Exit(1)
    with user_errors(), lock_if_run_folder(path if path.is_dir() else path.parent):
        removed = clear_cache(_cache_file(path))
    console.print(f"removed {removed} cached answers from {escape(str(_cache_file(path)))}", highlight=False)
