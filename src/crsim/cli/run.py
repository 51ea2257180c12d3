"""`crsim run`: simulate the configured users against the configured CRSs and score the dialogues."""

from __future__ import annotations

import shlex
import time
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from crsim.cli._support import console, errors, show_summaries, stopped_by_signals, user_errors
from crsim.core.errors import ConfigError, CrsimError
from crsim.runner.config import field_description

app = typer.Typer(add_completion=False)


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
    from crsim.runner.build import build_experiment
    from crsim.runner.config import load_config
    from crsim.runner.retry import retry_reasons

    overrides = {
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
    with user_errors(), stopped_by_signals("before the first dialogue; nothing written"):
        if retry_kinds is not None and not retry_errors:
            raise CrsimError("--retry-kinds chooses what --retry-errors holds again; add --retry-errors")
        if retry_errors and not resume:
            raise CrsimError(
                "--retry-errors needs --resume: it holds failed dialogues of an existing run again"
            )
        retry = retry_reasons(retry_kinds) if retry_errors else frozenset()
        cfg = load_config(config, overrides)
        if resume and cfg.out is None:
            raise CrsimError("--resume needs --out (or `out` in the config): the run folder to continue")
        run_dir = cfg.out or Path("runs") / f"{cfg.name}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
        started = time.perf_counter()
        try:
            experiment = build_experiment(cfg, run_folder=run_dir)
        except ConfigError as exc:  # names a field; say in which file
            raise ConfigError(f"{config or 'config'}: {exc}") from None
        if preflight:
            from crsim.core.interrupt import run_interruptibly
            from crsim.model.run_folder.lock import ensure_free
            from crsim.runner.preflight import needed
            from crsim.runner.preflight import preflight as check_servers

            ensure_free(run_dir)  # a busy folder is refused before the servers are tried
            if needed(experiment, run_dir, resume, retry):
                run_interruptibly(check_servers(experiment))
    command = _resume_command(config, overrides, run_dir)
    kept = (
        f"the dialogues finished so far stay in the folder; once it can be written, continue with: {command}"
    )
    with user_errors(run_dir, after_os_error=kept):
        result, summaries = _hold_and_score(experiment, run_dir, resume, as_json, command, retry)
        elapsed = result.finished_at - started
    _closing(result, summaries, cfg, run_dir, elapsed, as_json, command if not retry_errors else "")


def _closing(
    result: Any, summaries: list[Any], cfg: Any, run_dir: Path, elapsed: float, as_json: bool, command: str
) -> None:
    """The table, what was held, the errored dialogues a retry could hold again (`command`: the
    resume command, '' when this was a retry), and exit code 3 when a pairing failed."""
    from crsim.model.run_folder.folder import completeness
    from crsim.runner.outcome import EXIT_FAILED_PAIRINGS, closing_line, failed_pairings

    failed = failed_pairings(summaries, cfg.failed_pairing_share)
    show_summaries(summaries, as_json, frozenset(p.label for p in failed), completeness(run_dir).complete)
    if not as_json:
        cut = f", cut a {result.dropped_bytes}-byte half-written last line" if result.dropped_bytes else ""
        again = f", {result.retried} of them again" if result.retried else ""
        console.print(
            f"{result.ran} dialogues held{again} ({result.already_done} already done{cut}) in "
            f"{elapsed:.1f}s; run folder: [bold]{escape(str(run_dir))}[/bold]",
            highlight=False,
        )
        _legend(summaries, cfg, run_dir)
    if result.errored and command:
        kinds = ", ".join(f"{reason} ×{n}" for reason, n in sorted(result.errored.items()))
        errors.print(
            f"{sum(result.errored.values())} dialogues of this run ended in errors or timeouts ({kinds}); "
            f"to hold them again: {escape(command.replace(' --resume', ' --resume --retry-errors'))}",
            highlight=False,
            soft_wrap=True,
        )
    if failed:
        errors.print(f"[red]error:[/red] {escape(closing_line(failed))}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_FAILED_PAIRINGS)


def _estimate(experiment: Any, meter: Any, held: int, *, enabled: bool) -> Any:
    """The LLM run's duration, said once after its first calls (runner/estimate.py)."""
    from contextlib import nullcontext

    from crsim.runner.estimate import llm_duration_estimate, planned_llm_calls

    if not enabled:
        return nullcontext()
    return llm_duration_estimate(meter, planned_llm_calls(experiment, max(held, 0)))


def _legend(summaries: list[Any], cfg: Any, run_dir: Path) -> None:
    """What the table's metrics mean and which way is better, then the next commands."""
    from crsim.cli._legend import legend_lines, next_steps

    shown = list(dict.fromkeys(label for group in summaries for label in group.metrics))
    lines = legend_lines(cfg.metrics, shown)
    if lines:
        console.print("metrics (docs/metrics.md):", highlight=False)
        for line in lines:
            console.print(escape(line), highlight=False, soft_wrap=True)
    console.print("next:", highlight=False)
    for line in next_steps(run_dir):
        console.print(escape(line), highlight=False, soft_wrap=True)


def _hold_and_score(
    experiment: Any,
    run_dir: Path,
    resume: bool,
    quiet: bool,
    resume_command: str,
    retry: frozenset[str] = frozenset(),
) -> tuple[Any, list[Any]]:
    """Hold the run's dialogues and score them, under the run folder's lock (taken once); a stop
    signal ends the command with what was kept and how to resume."""
    from crsim.core.interrupt import Interrupted, run_interruptibly, signals_interrupt
    from crsim.eval.run_scoring import evaluate_path
    from crsim.model.run_folder.lock import run_folder_lock
    from crsim.runner.batch import kept_dialogues, run_batch
    from crsim.runner.progress import ProgressReport, dialogue_failed, scoring_failed
    from crsim.runner.retry import errored_records

    report = ProgressReport(enabled=not quiet)
    try:
        with signals_interrupt(), run_folder_lock(run_dir) as lock:
            kept = min(kept_dialogues(run_dir), len(experiment.tasks)) if resume else 0
            again = sum(errored_records(run_dir, retry).values()) if retry else 0
            with (
                report.phase("dialogues", len(experiment.tasks) - kept + again) as meter,
                _estimate(experiment, meter, kept - again, enabled=not quiet),
            ):
                held = run_batch(
                    experiment,
                    run_dir,
                    resume=resume,
                    on_dialogue=lambda d: meter.advance(error=dialogue_failed(d)),
                    held=lock,
                    retry=retry,
                )
                result = run_interruptibly(held)
            with report.phase("scoring", len(experiment.tasks)) as meter:
                scored = evaluate_path(
                    run_dir, on_scored=lambda _d, r: meter.advance(error=scoring_failed(r)), held=lock
                )
        report.print_summary()
        return result, scored.summaries
    except Interrupted as stop:
        _say_stopped(stop, run_dir, len(experiment.tasks), resume_command)
        raise typer.Exit(stop.exit_code) from None


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
