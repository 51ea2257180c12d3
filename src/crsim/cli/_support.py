"""Helpers shared by the command-line modules: one-line user errors, `--arg` parsing, signals, summaries."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from crsim.core.atomic_files import atomic_output
from crsim.core.errors import CrsimError

__all__ = ["atomic_output", "console", "errors", "parse_args", "show_summaries", "state", "user_errors"]

console = Console()
errors = Console(stderr=True)
#: Set by the top-level callback (`crsim --debug ...`): re-raise user errors with their traceback.
state = {"debug": False}


@contextmanager
def user_errors(folder: Path | None = None, after_os_error: str = "") -> Iterator[None]:
    """Bad input ends in one line naming what was wrong, exit code 2; tracebacks only with --debug.

    So does a file system that refuses (disk full, read-only, a folder removed or a file where a
    folder was expected): the line names the file (else `folder`, where the command was writing), the
    system's reason, and `after_os_error` (what was kept and how to go on)."""
    try:
        yield
    except CrsimError as exc:
        if state["debug"]:
            raise
        # The message holds paths and values from the input: "[...]" in them is text, not markup.
        errors.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    except OSError as exc:
        if state["debug"]:
            raise
        if folder is not None and not folder.exists():
            line = f"{describe_os_error(exc, folder)}; the folder {folder} no longer exists"
        else:
            line = describe_os_error(exc, folder) + (f"; {after_os_error}" if after_os_error else "")
        errors.print(f"[red]error:[/red] {escape(line)}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None


def describe_os_error(exc: OSError, folder: Path | None = None) -> str:
    """`path: reason (errno NAME)` for a refused file operation, in one line."""
    import errno

    where = exc.filename if exc.filename is not None else folder
    reason = exc.strerror or str(exc) or type(exc).__name__
    code = (
        f" ({errno.errorcode[exc.errno]})" if exc.errno is not None and exc.errno in errno.errorcode else ""
    )
    text = f"{where}: {reason}{code}" if where is not None else f"{reason}{code}"
    return " ".join(text.split())


def parse_args(pairs: list[str], as_json: str | None = None, option: str = "--arg") -> dict[str, Any]:
    """`--arg k=v` pairs (values read as YAML scalars) merged over `--args-json`; errors name `option`."""
    import yaml

    from crsim.core.yaml_files import YamlRefused, load_json, load_yaml

    args: dict[str, Any] = {}
    if as_json:
        try:
            loaded = load_json(as_json)
        except ValueError as exc:
            raise CrsimError(f"--args-json: {exc}") from None
        if not isinstance(loaded, dict):
            raise CrsimError("--args-json: expected a JSON object")
        args.update(loaded)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise CrsimError(f"{option} {pair!r}: expected KEY=VALUE")
        try:
            args[key.strip()] = load_yaml(value)
        except YamlRefused as exc:
            raise CrsimError(f"{option} {key.strip()}: {exc}") from None
        except yaml.YAMLError:
            args[key.strip()] = value
    return args


@contextmanager
def stopped_by_signals(outcome: str) -> Iterator[None]:
    """SIGINT/SIGTERM in the block stop the command with one line saying what that left, and exit
    128 + the signal number (as a shell reports a process a signal ended)."""
    from crsim.core.interrupt import Interrupted, signals_interrupt

    try:
        with signals_interrupt():
            yield
    except Interrupted as stop:
        errors.print(f"stopped by {stop.signal_name}: {escape(outcome)}", highlight=False, soft_wrap=True)
        raise typer.Exit(stop.exit_code) from None


def show_summaries(
    summaries: list[Any],
    as_json: bool,
    failed: frozenset[str] | None = None,
    complete: bool | None = None,
    more: dict[tuple[str, str], dict[str, Any]] | None = None,
) -> None:
    """The summary as JSON, or as a table followed by the errors by kind. The pairings named in
    `failed` (`crs × simulator`; given by `crsim run`) are marked in the table and, when it is given,
    each group in the JSON says whether it `failed`; `complete` (whether the run holds every planned
    dialogue), when known, is a key of each group in the JSON; `more` adds keys to the JSON of the
    groups it names by (CRS, simulator)."""
    if as_json:

        def extra(group: Any) -> dict[str, Any]:
            found: dict[str, Any] = {} if complete is None else {"complete": complete}
            if failed is not None:
                found["failed"] = f"{group.crs_id} × {group.simulator_id}" in failed
            found.update((more or {}).get((group.crs_id, group.simulator_id), {}))
            return found

        typer.echo(json.dumps([{**s.model_dump(mode="json"), **extra(s)} for s in summaries], indent=2))
        return
    from crsim.report.tables import summary_table

    console.print(summary_table(summaries, failed=failed or frozenset()))
    _print_errors(summaries)


def warn_incomplete(completeness: Any) -> None:
    """The warning line of a run folder holding fewer dialogues than planned (on stderr)."""
    if completeness is not None and not completeness.complete:
        errors.print(
            f"[yellow]warning:[/yellow] {escape(completeness.warning())}", highlight=False, soft_wrap=True
        )


def _print_errors(summaries: list[Any]) -> None:
    """How many dialogues ended with each kind of error, and the first message of each kind."""
    for summary in summaries:
        if summary.errors:
            kinds = ", ".join(f"{kind} ×{n}" for kind, n in summary.errors.items())
            pair = escape(f"{summary.crs_id} × {summary.simulator_id}: {kinds}")
            console.print(f"[red]errors[/red] {pair}", highlight=False)
            for kind, message in summary.error_examples.items():
                first_line = message.splitlines()[0] if message else ""
                console.print(f"  {escape(kind)}: {escape(first_line[:300])}", highlight=False)
