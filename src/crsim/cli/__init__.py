"""`crsim` command line: run experiments, score runs, serve CRSs, convert data, check files."""

from __future__ import annotations

import atexit
import gc
import importlib
import signal
import sys
import threading
from dataclasses import dataclass
from types import FrameType
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

__all__ = ["COMMANDS", "LazyCommand", "app", "main"]


@dataclass(frozen=True)
class LazyCommand:
    """Where a command group lives (module and its typer app) and the line `crsim --help` shows for it.

    The line is kept here so that listing the commands imports none of them; a test checks that it
    matches the command's own help."""

    module: str
    attribute: str
    summary: str

    def load(self) -> typer.Typer:
        """Import the command's module (and whatever it needs) and return its typer app."""
        app: typer.Typer = getattr(importlib.import_module(self.module), self.attribute)
        return app


#: Every command of `crsim`, in the order `crsim --help` lists them; one module each under crsim/cli/.
COMMANDS: dict[str, LazyCommand] = {
    "meta-eval": LazyCommand(
        "crsim.cli.meta_eval",
        "meta_app",
        "Correlate an evaluator's scores (or a run file) with CRSArena-Eval's human labels.",
    ),
    "init": LazyCommand(
        "crsim.cli.init",
        "app",
        "Write a commented starter config (YAML) that runs as it is: `crsim run FILE`.",
    ),
    "run": LazyCommand(
        "crsim.cli.run",
        "app",
        "Simulate the configured users against the configured CRSs and score the dialogues.",
    ),
    "evaluate": LazyCommand(
        "crsim.cli.evaluate",
        "app",
        "Score a run's dialogues: metrics, LLM judges, act annotation where acts are missing.",
    ),
    "report": LazyCommand(
        "crsim.cli.report",
        "app",
        "One self-contained HTML report: manifests, results with CIs, plots and a dialogue browser.",
    ),
    "compare": LazyCommand(
        "crsim.cli.compare",
        "app",
        "Paired comparisons between CRSs: differences with bootstrap CIs, paired tests, Holm-corrected\n"
        "p-values, ranks with significance groups and the smallest difference the run could detect.",
    ),
    "export": LazyCommand(
        "crsim.cli.export",
        "app",
        "Dialogues, utterances and scores of a run as Parquet or CSV tables (crsim.report.dataframes).",
    ),
    "serve": LazyCommand(
        "crsim.cli.serve",
        "app",
        "Expose a crsim CRS over HTTP (CRS Arena protocol and the generic JSON protocol).",
    ),
    "crs": LazyCommand("crsim.cli.crs", "crs_app", "`crsim crs`: check a CRS server before a study."),
    "schema": LazyCommand(
        "crsim.cli.schema", "app", "Print the JSON Schema of a record type of the unified format."
    ),
    "validate": LazyCommand(
        "crsim.cli.validate",
        "app",
        "Check a file against the unified format; check whether simulated verdicts can be trusted.",
    ),
    "data": LazyCommand(
        "crsim.cli.data",
        "data_app",
        "`crsim data`: convert published datasets, describe them, download them, annotate dialogue acts.",
    ),
    "analyze": LazyCommand(
        "crsim.cli.analyze",
        "analyze_app",
        "`crsim analyze`: diversity and controllability of simulated users' language, the consistency\n"
        "of two judge configurations' scores, and the behaviour report of a run.",
    ),
    "judge": LazyCommand(
        "crsim.cli.judge",
        "judge_app",
        "LLM judges: rubrics for scoring dialogues, pairwise comparison of simulators.",
    ),
    "gcdf1": LazyCommand(
        "crsim.cli.gcdf1",
        "gcdf1_app",
        "GCDF1 (I-GCDF1, R-GCDF1): how well a simulated user states its goal's constraints and requests.",
    ),
    "pepper": LazyCommand(
        "crsim.cli.pepper",
        "pepper_app",
        "`crsim pepper`: PEPPER's analyses of a run (PC curves, selected vs residual) and the preference\n"
        "representation accuracy study (docs/pepper.md).",
    ),
    "cache": LazyCommand(
        "crsim.cli.cache", "app", "Inspect or empty an LLM response cache, or the cache of built domains."
    ),
    "domain": LazyCommand(
        "crsim.cli.domain",
        "domain_app",
        "`crsim domain`: check a domain file and see what it holds; list the domains a config can name.",
    ),
    "list": LazyCommand(
        "crsim.cli.components",
        "list_app",
        "List the known components: simulators, CRSs, metrics, annotators, datasets, rubrics, domains.",
    ),
    "describe": LazyCommand(
        "crsim.cli.components",
        "describe_app",
        "Describe a component: kind, class, what it does, and every argument with type, default and meaning.",
    ),
}


#: Typer's type names in help, in the words a reader of `--help` expects.
_TYPE_WORDS = {
    "str": "text",
    "int": "integer",
    "float": "number",
    "Path": "path",
    "int range": "integer range",
    "float range": "number range",
}


def _plain_type(shown: str | None) -> str | None:
    """`<list[str]>` -> `<text>`, `<tuple[str, Ellipsis]>` -> `<text …>`, `<bool>` -> nothing: help
    says what to type, not Python's annotation (a list option is repeated; a flag takes no value)."""
    if not shown or not (shown.startswith("<") and shown.endswith(">")):
        return shown
    inner = shown[1:-1]
    if inner == "bool":
        return None
    if inner.startswith("list[") and inner.endswith("]"):
        inner = inner[5:-1]
    if inner.startswith("tuple[") and inner.endswith("]"):
        parts = [p.strip() for p in inner[6:-1].split(",")]
        inner = " ".join("…" if p in ("Ellipsis", "...") else _TYPE_WORDS.get(p, p) for p in parts)
    return f"<{_TYPE_WORDS.get(inner, inner)}>"


def plain_help(command: Any) -> Any:
    """`command` (and its subcommands) with plain type names in `--help` (see `_plain_type`); set on
    each parameter, so nothing of typer changes globally."""
    for param in getattr(command, "params", []):
        _plain_param(param)
    help_option = getattr(command, "get_help_option", None)
    if help_option is not None and not getattr(command, "_crsim_plain", False):
        command.get_help_option = lambda ctx, made=help_option: _plain_param(made(ctx))
        command._crsim_plain = True
    for sub in getattr(command, "commands", {}).values():
        plain_help(sub)
    return command


def _plain_param(param: Any) -> Any:
    show = getattr(param, "display_type_rich", None)
    if show is not None and not getattr(param, "_crsim_plain", False):
        param.display_type_rich = lambda ctx, show=show: _plain_type(show(ctx))
        param._crsim_plain = True
    return param


class LazyGroup(TyperGroup):
    """The top-level group: a command's module is imported only when that command runs (or shows its
    own help), so `crsim --help` and every command start without the others' dependencies.

    Typer has no lazy groups; this one keeps a light placeholder per command (name and summary) for
    listing, suggestions and completion, and swaps in the real click command on first use. Click's
    types are written `Any`: typer 0.12 uses the click package, newer typers a copy of their own."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self._listing = False
        for name, lazy in COMMANDS.items():
            self.commands[name] = TyperCommand(name=name, help=lazy.summary)
        self._loaded: dict[str, Any] = {}
        plain_help(self)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        lazy = COMMANDS.get(cmd_name)
        if lazy is None:
            return super().get_command(ctx, cmd_name)
        if self._listing or ctx.resilient_parsing:
            return self.commands[cmd_name]  # the placeholder: enough to list or complete the name
        if cmd_name not in self._loaded:
            command = plain_help(typer.main.get_command(lazy.load()))
            command.name = cmd_name
            self._loaded[cmd_name] = command
        return self._loaded[cmd_name]

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


app = typer.Typer(
    cls=LazyGroup,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    help=__doc__,
)


def _print_version(value: bool) -> None:
    if value:
        from crsim import __version__

        typer.echo(f"crsim {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option(help="Show tracebacks for errors.")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="Print crsim's version and exit."
        ),
    ] = False,
) -> None:
    from crsim.cli._support import state
    from crsim.core.secrets import protect_process_output

    state["debug"] = debug
    protect_process_output()  # secrets are masked in everything printed or logged from here on


def main() -> None:
    """The `crsim` entry point (also `python -m crsim`)."""
    # At exit, objects that live until then are left out of the collector's final passes (they are
    # still freed by reference counting as modules are torn down): those passes over a built
    # experiment took 1.3 s, which every command paid on exit and Ctrl-C had to wait for. crsim's
    # own files are flushed and closed before this point, never left to the collector.
    atexit.register(gc.freeze)
    # A signal while no command has its own handling in place (mostly while a command imports what it
    # needs) ends the process with one line and the shell's code, never a traceback or a silent -15.
    # Commands that write install their own handling, which says what was kept and how to go on.
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, _stop)
    app()


def _stop(signum: int, _frame: FrameType | None) -> None:
    sys.stderr.write(f"stopped by {signal.Signals(signum).name}\n")
    sys.stderr.flush()
    raise SystemExit(128 + signum)
