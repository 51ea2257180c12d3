"""Helpers shared by the command-line modules: one-line user errors, `--arg` parsing, atomic writes."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import typer
from rich.console import Console
from rich.markup import escape

from crsim.errors import CrsimError
from crsim.model.run_folder.files import PART_SUFFIX

errors = Console(stderr=True)
#: Set by the top-level callback (`crsim --debug ...`): re-raise user errors with their traceback.
state = {"debug": False}


@contextmanager
def user_errors() -> Iterator[None]:
    """Bad input ends in one line naming what was wrong, exit code 2; tracebacks only with --debug."""
    try:
        yield
    except CrsimError as exc:
        if state["debug"]:
            raise
        # The message holds paths and values from the input: "[...]" in them is text, not markup.
        errors.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None


def parse_args(pairs: list[str], as_json: str | None = None) -> dict[str, Any]:
    """`--arg k=v` pairs (values read as YAML scalars) merged over `--args-json`."""
    import yaml

    from crsim.yaml_files import YamlRefused, load_json, load_yaml

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
            raise CrsimError(f"--arg {pair!r}: expected KEY=VALUE")
        try:
            args[key.strip()] = load_yaml(value)
        except YamlRefused as exc:
            raise CrsimError(f"--arg {key.strip()}: {exc}") from None
        except yaml.YAMLError:
            args[key.strip()] = value
    return args


@contextmanager
def atomic_output(path: Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Write `path` through a temporary file in the same folder, renamed into place on success only.

    A failure (or an interrupt) part-way leaves no partial file at `path` and removes the temp file.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=PART_SUFFIX, dir=path.parent)
    try:
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(fd, mode, encoding=encoding) as handle:
            yield handle
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
