"""`crsim cache`: inspect or empty an LLM response cache, or the cache of built domains."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from crsim.cli._support import console, user_errors

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Inspect or empty an LLM response cache, or the cache of built domains.",
)


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


@app.command("domains")
def cache_domains(
    clear: Annotated[bool, typer.Option("--clear", help="Delete every entry (runs build again).")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="With --clear: delete without asking.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the entries as JSON.")] = False,
) -> None:
    """The built domains kept for large catalogues ($CRSIM_CACHE_DIR/domains, else the user's cache
    folder): one entry per catalogue, rebuilt when the catalogue or crsim changes."""
    from crsim.domains.disk_cache import cache_entries, cache_folder, clear_cache

    folder = cache_folder()
    if folder is None:
        console.print("the domain cache is off (CRSIM_CACHE_DIR=off)", highlight=False)
        return
    entries = cache_entries(folder)
    if clear:
        total = sum(e.size_bytes for e in entries)
        question = f"delete {len(entries)} built domains ({total / 1e6:.0f} MB) from {folder}?"
        if entries and not yes and not typer.confirm(question, default=False, err=True):
            console.print("nothing deleted", highlight=False)
            raise typer.Exit(1)
        removed = clear_cache(folder)
        console.print(f"removed {removed} built domains from {escape(str(folder))}", highlight=False)
        return
    if as_json:
        rows = [{"path": str(e.path), "size_bytes": e.size_bytes, **(e.header or {})} for e in entries]
        typer.echo(json.dumps({"folder": str(folder), "entries": rows}, indent=2))
        return
    console.print(f"{escape(str(folder))}: {len(entries)} built domains", highlight=False)
    for entry in entries:
        header = entry.header or {}
        what = f"{header.get('domain', '?')} ({header.get('items', '?')} items) from {header.get('source')}"
        console.print(
            f"  {escape(entry.path.name)}: {escape(what)}, {entry.size_bytes / 1e6:.1f} MB, "
            f"{header.get('created', 'unreadable header')}",
            highlight=False,
        )
