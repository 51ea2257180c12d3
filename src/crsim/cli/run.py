"""`crsim run`: simulate the configured users against the configured CRSs and score the dialogues."""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from crsim.cli._support import console, errors, show_summaries, stopped_by_signals, user_errors
from crsim.core.errors import CrsimError
from crsim.runner.config import field_description

app = typer.Typer(add_completion=False)

#: What a stop signal before the dialogue phase left behind.
BEFORE_DIALOGUES = "before the first dialogue; nothing written"


def _option(path: str, *flags: str) -> Any:
    return typer.Option(*flags, help=field_description(path))


@app.command()
def run(
    config: Annotated[
        Path | None, typer.Argument(help="Experiment config (YAML/JSON); default: quickstart.")
    ] = None,
    out: Annotated[Path | None, _option("out", "--out", "-o")] = None,
    seed: Annotated[int | None, _option("seed", "--seed")] = None,
    users: Annotated[int | None, _option("users.size", "--users")] = None,
    concurrency: Annotated[int | None, _option("concurrency", "--concurrency")] = None,
    max_turns: Annotated[int | None, _option("max_turns", "--max-turns")] = None,
    trials: Annotated[int | None, _option("trials", "--trials")] = None,
    dialogue_timeout: Annotated[float | None, _option("dialogue_timeout_s", "--dialogue-timeout")] = None,
    allow_reuse: Annotated[bool | None, _option("users.allow_reuse", "--allow-reuse")] = None,
    limit: Annotated[int | None, _option("limit", "--limit")] = None,
    executor: Annotated[str | None, _option("executor", "--executor")] = None,
    address: Annotated[str | None, _option("ray_address", "--address")] = None,
    failed_pairing_share: Annotated[
        float | None, _option("failed_pairing_share", "--failed-pairing-share")
    ] = None,
    resume: Annotated[
        bool, typer.Option(help="Continue the run in --out, holding only missing dialogues.")
    ] = False,
    retry_errors: Annotated[
        bool,
        typer.Option(
            "--retry-errors",
            help="With --resume: hold again, with their seeds, the dialogues that ended in crs_error, "
            "infrastructure_error or timeout (replaced records go to retried.jsonl).",
        ),
    ] = False,
    retry_kinds: Annotated[
        str | None,
        typer.Option(
            "--retry-kinds", help="Which failures --retry-errors holds again: crs,infrastructure,timeout."
        ),
    ] = None,
    preflight: Annotated[
        bool,
        typer.Option(
            help="Before the first dialogue, open one session with each HTTP CRS and call each LLM "
            "endpoint once; a failure ends the command (exit 2) before anything is written."
        ),
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Simulate the configured users against the configured CRSs and score the dialogues.

    Exit codes: 0 done; 2 bad input or a failed preflight (nothing written); 3 done, but a CRS ×
    simulator pairing failed (its dialogues ended in errors or timeouts; see --failed-pairing-share);
    130/143 stopped by Ctrl-C/SIGTERM: every dialogue written is kept, and the command that resumes
    the run is printed."""
    from crsim.api import plan_run

    overrides: dict[str, Any] = {
        "out": out,
        "seed": seed,
        "users": users,
        "concurrency": concurrency,
        "max_turns": max_turns,
        "trials": trials,
        "dialogue_timeout": dialogue_timeout,
        "allow_reuse": allow_reuse,
        "limit": limit,
        "executor": executor,
        "address": address,
        "failed_pairing_share": failed_pairing_share,
    }
    with user_errors(), stopped_by_signals(BEFORE_DIALOGUES):
        _check_retry_options(resume, retry_errors, retry_kinds)
        plan = plan_run(
            config,
            resume=resume,
            retry_errors=(retry_kinds or True) if retry_errors else False,
            **overrides,
        )
    command = _resume_command(config, overrides, plan.folder)
    started = time.perf_counter()
    result, failed = _executed(plan, preflight, as_json, command)
    held = result.held
    again = "" if retry_errors else command
    elapsed = held.finished_at - started
    _closing(result, failed, plan.folder, elapsed, as_json, again, list(plan.config.metrics))


def _check_retry_options(resume: bool, retry_errors: bool, retry_kinds: str | None) -> None:
    """--retry-kinds only with --retry-errors, and --retry-errors only with --resume."""
    if retry_kinds is not None and not retry_errors:
        raise CrsimError("--retry-kinds chooses what --retry-errors holds again; add --retry-errors")
    if retry_errors and not resume:
        raise CrsimError("--retry-errors needs --resume: it holds failed dialogues of an existing run again")


def _executed(plan: Any, preflight: bool, quiet: bool, command: str) -> tuple[Any, list[Any]]:
    """`plan.execute` (`crsim.run`'s path), with its failed pairings, and stop signals and refused
    files said in one line: before the dialogues, that nothing was written; after, what was kept
    and how to go on."""
    from crsim.core.interrupt import Interrupted, signals_interrupt
    from crsim.runner.outcome import FailedPairings

    kept = (
        f"the dialogues finished so far stay in the folder; once it can be written, continue with: {command}"
    )
    with user_errors():
        try:
            with signals_interrupt():
                return plan.execute(progress=not quiet, preflight=preflight), []
        except FailedPairings as failure:
            return failure.result, failure.pairings
        except Interrupted as stop:
            if plan.holding:
                _say_stopped(stop, plan.folder, plan.planned, command)
            else:
                errors.print(
                    f"stopped by {stop.signal_name}: {escape(BEFORE_DIALOGUES)}",
                    highlight=False,
                    soft_wrap=True,
                )
            raise typer.Exit(stop.exit_code) from None
        except OSError:
            if not plan.holding:
                raise
            with user_errors(plan.folder, after_os_error=kept):
                raise


def _closing(
    result: Any,
    failed: list[Any],
    run_dir: Path,
    elapsed: float,
    as_json: bool,
    command: str,
    metrics: list[Any],
) -> None:
    """The table (the `failed` pairings marked), what was held, the errored dialogues a retry could
    hold again (`command`: the resume command, '' when this was a retry), and exit code 3 when a
    pairing failed."""
    from crsim.runner.outcome import EXIT_FAILED_PAIRINGS, closing_line

    held = result.held
    show_summaries(result.summaries, as_json, frozenset(p.label for p in failed), result.complete)
    if not as_json:
        cut = f", cut a {held.dropped_bytes}-byte half-written last line" if held.dropped_bytes else ""
        again = f", {held.retried} of them again" if held.retried else ""
        console.print(
            f"{held.ran} dialogues held{again} ({held.already_done} already done{cut}) in "
            f"{elapsed:.1f}s; run folder: [bold]{escape(str(run_dir))}[/bold]",
            highlight=False,
        )
        _legend(result.summaries, metrics, run_dir)
    if held.errored and command:
        kinds = ", ".join(f"{reason} ×{n}" for reason, n in sorted(held.errored.items()))
        errors.print(
            f"{sum(held.errored.values())} dialogues of this run ended in errors or timeouts ({kinds}); "
            f"to hold them again: {escape(command.replace(' --resume', ' --resume --retry-errors'))}",
            highlight=False,
            soft_wrap=True,
        )
    if failed:
        errors.print(f"[red]error:[/red] {escape(closing_line(failed))}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_FAILED_PAIRINGS)


def _legend(summaries: list[Any], metrics: list[Any], run_dir: Path) -> None:
    """What the table's metrics mean and which way is better, then the next commands."""
    from crsim.cli._legend import legend_lines, next_steps

    shown = list(dict.fromkeys(label for group in summaries for label in group.metrics))
    lines = legend_lines(metrics, shown)
    if lines:
        console.print("metrics (docs/metrics.md):", highlight=False)
        for line in lines:
            console.print(escape(line), highlight=False, soft_wrap=True)
    console.print("next:", highlight=False)
    for line in next_steps(run_dir):
        console.print(escape(line), highlight=False, soft_wrap=True)


def _resume_command(config: Path | None, overrides: dict[str, Any], run_dir: Path) -> str:
    """The `crsim run` command that continues this run: the same config and options, `--resume`."""
    words = ["crsim", "run", *([str(config)] if config is not None else []), "--out", str(run_dir)]
    for option, value in overrides.items():
        if option == "out" or value is None or value is False:
            continue
        flag = f"--{option.replace('_', '-')}"
        words += [flag] if value is True else [flag, str(value)]
    return shlex.join([*words, "--resume"])


def _say_stopped(stop: Any, run_dir: Path, planned: int, command: str) -> None:
    """What a signal left behind: the dialogues kept in the run folder, and how to go on."""
    from crsim.runner.batch import kept_dialogues

    kept = kept_dialogues(run_dir)
    state = "all held, the scoring did not finish" if kept >= planned else "the rest not held"
    errors.print(
        f"stopped by {stop.signal_name}: {kept} of {planned} dialogues kept in {escape(str(run_dir))} "
        f"({state}); to resume: {escape(command)}",
        highlight=False,
        soft_wrap=True,
    )
