"""`crsim` command line: run experiments, score runs, serve CRSs, convert data, check files."""

from __future__ import annotations

import atexit
import gc
import json
import shlex
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from crsim.cli_support import errors, parse_args, state, user_errors
from crsim.data.cli import data_app
from crsim.errors import ConfigError, CrsimError
from crsim.eval.analysis.cli import analyze_app
from crsim.eval.gcdf1.cli import gcdf1_app
from crsim.eval.judge.cli import judge_app
from crsim.meta.cli import meta_eval
from crsim.model.run_folder.files import EXPORT_DIR, REPORT
from crsim.redact import protect_process_output
from crsim.run.config import field_description
from crsim.sim.pepper.cli import pepper_app

app = typer.Typer(
    add_completion=False, no_args_is_help=True, pretty_exceptions_show_locals=False, help=__doc__
)
app.add_typer(data_app, name="data")
app.add_typer(analyze_app, name="analyze")
app.add_typer(judge_app, name="judge")
app.add_typer(gcdf1_app, name="gcdf1")
app.add_typer(pepper_app, name="pepper")
app.command("meta-eval")(meta_eval)
cache_app = typer.Typer(no_args_is_help=True, help="Inspect or empty an LLM response cache.")
app.add_typer(cache_app, name="cache")
console = Console()


@app.callback()
def _main(debug: Annotated[bool, typer.Option(help="Show tracebacks for errors.")] = False) -> None:
    state["debug"] = debug
    protect_process_output()  # secrets are masked in everything printed or logged from here on


def _option(path: str, flag: str) -> Any:
    return typer.Option(flag, help=field_description(path))


@app.command()
def run(
    config: Annotated[
        Path | None, typer.Argument(help="Experiment config (YAML/JSON); default: quickstart.")
    ] = None,
    out: Annotated[Path | None, _option("out", "--out")] = None,
    seed: Annotated[int | None, _option("seed", "--seed")] = None,
    users: Annotated[int | None, _option("users.size", "--users")] = None,
    concurrency: Annotated[int | None, _option("concurrency", "--concurrency")] = None,
    max_turns: Annotated[int | None, _option("max_turns", "--max-turns")] = None,
    trials: Annotated[int | None, _option("trials", "--trials")] = None,
    dialogue_timeout: Annotated[float | None, _option("dialogue_timeout_s", "--dialogue-timeout")] = None,
    allow_reuse: Annotated[bool | None, _option("users.allow_reuse", "--allow-reuse")] = None,
    executor: Annotated[str | None, _option("executor", "--executor")] = None,
    address: Annotated[str | None, _option("ray_address", "--address")] = None,
    resume: Annotated[
        bool, typer.Option(help="Continue the run in --out, holding only missing dialogues.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Simulate the configured users against the configured CRSs and score the dialogues.

    Ctrl-C or SIGTERM stop the run within about a second; every dialogue written is kept, and the
    command that resumes the run is printed (exit code 130 or 143)."""
    from crsim.run.build import build_experiment
    from crsim.run.config import load_config

    overrides = {
        "out": out,
        "seed": seed,
        "users": users,
        "concurrency": concurrency,
        "max_turns": max_turns,
        "trials": trials,
        "dialogue_timeout": dialogue_timeout,
        "allow_reuse": allow_reuse,
        "executor": executor,
        "address": address,
    }
    with user_errors(), _stopped_by_signals("before the first dialogue; nothing written"):
        cfg = load_config(config, overrides)
        if resume and cfg.out is None:
            raise CrsimError("--resume needs --out (or `out` in the config): the run folder to continue")
        run_dir = cfg.out or Path("runs") / f"{cfg.name}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
        started = time.perf_counter()
        try:
            experiment = build_experiment(cfg)
        except ConfigError as exc:  # names a field; say in which file
            raise ConfigError(f"{config or 'config'}: {exc}") from None
    with user_errors():
        command = _resume_command(config, overrides, run_dir)
        result, summaries = _hold_and_score(experiment, run_dir, resume, as_json, command)
        elapsed = result.finished_at - started
    _show(summaries, as_json)
    if not as_json:
        cut = f", cut a {result.dropped_bytes}-byte half-written last line" if result.dropped_bytes else ""
        console.print(
            f"{result.ran} dialogues held ({result.already_done} already done{cut}) in {elapsed:.1f}s; "
            f"run folder: [bold]{escape(str(run_dir))}[/bold]",
            highlight=False,
        )


def _hold_and_score(
    experiment: Any, run_dir: Path, resume: bool, quiet: bool, resume_command: str
) -> tuple[Any, list[Any]]:
    """Hold the run's dialogues and score them, under the run folder's lock; a stop signal ends the
    command with what was kept and how to resume."""
    from crsim.interrupt import Interrupted, run_interruptibly, signals_interrupt
    from crsim.model.run_folder.lock import run_folder_lock
    from crsim.run.batch import run_batch

    try:
        with signals_interrupt(), run_folder_lock(run_dir):
            with _progress(len(experiment.tasks), quiet=quiet) as advance:
                result = run_interruptibly(run_batch(experiment, run_dir, resume=resume, on_dialogue=advance))
            return result, _evaluate(run_dir)
    except Interrupted as stop:
        _say_stopped(stop, run_dir, len(experiment.tasks), resume_command)
        raise typer.Exit(stop.exit_code) from None


@contextmanager
def _stopped_by_signals(outcome: str) -> Iterator[None]:
    """SIGINT/SIGTERM in the block stop the command with one line saying what that left, and exit
    128 + the signal number (as a shell reports a process a signal ended)."""
    from crsim.interrupt import Interrupted, signals_interrupt

    try:
        with signals_interrupt():
            yield
    except Interrupted as stop:
        errors.print(f"stopped by {stop.signal_name}: {escape(outcome)}", highlight=False, soft_wrap=True)
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
    from crsim.run.batch import kept_dialogues

    kept = kept_dialogues(run_dir)
    state = "all held, the scoring did not finish" if kept >= planned else "the rest not held"
    errors.print(
        f"stopped by {stop.signal_name}: {kept} of {planned} dialogues kept in {escape(str(run_dir))} "
        f"({state}); to resume: {escape(command)}",
        highlight=False,
        soft_wrap=True,
    )


def _show(summaries: list[Any], as_json: bool) -> None:
    """The summary as JSON, or as a table followed by the errors by kind."""
    if as_json:
        typer.echo(json.dumps([s.model_dump(mode="json") for s in summaries], indent=2))
        return
    from crsim.report.tables import summary_table

    console.print(summary_table(summaries))
    _print_errors(summaries)


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


@contextmanager
def _progress(total: int, quiet: bool) -> Iterator[Any]:
    if quiet or not sys.stderr.isatty():
        yield lambda _dialogue: None
        return
    columns = (TextColumn("dialogues"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=errors, transient=True) as progress:
        task = progress.add_task("run", total=total)
        yield lambda _dialogue: progress.advance(task)


def _evaluate(run_dir: Path) -> list[Any]:
    """Score every dialogue of a run with the metrics of its manifest; write scores and summary."""
    from crsim.eval.evaluation import evaluate_path

    return evaluate_path(run_dir).summaries


def parse_metric_specs(values: list[str]) -> list[Any]:
    """`--metrics` values: `name`, `name:arg=value,arg=value` (values read as YAML scalars; `id=` sets
    the label), or several bare names separated by commas."""
    from crsim.registry import ComponentSpec

    specs: list[ComponentSpec] = []
    for value in values:
        name, sep, rest = value.partition(":")
        if not sep:
            specs.extend(ComponentSpec(name=n.strip()) for n in name.split(",") if n.strip())
            continue
        args = parse_args([pair for pair in rest.split(",") if pair.strip()])
        label = args.pop("id", None)
        specs.append(ComponentSpec(name=name.strip(), args=args, id=None if label is None else str(label)))
    if not specs:
        raise CrsimError(
            "--metrics: expected metric names, e.g. --metrics success_rate,srrr --metrics recall:k=5"
        )
    return specs


@app.command()
def evaluate(
    run_dir: Annotated[
        Path, typer.Argument(help="A run folder written by `crsim run`, or a dialogue JSONL file.")
    ],
    metrics: Annotated[
        list[str] | None,
        typer.Option(
            "--metrics",
            help="Metrics instead of the run's: `name`, `a,b,c` or `name:arg=value,…` (repeatable).",
        ),
    ] = None,
    judge: Annotated[
        Path | None,
        typer.Option(
            help="Judge config (YAML: `llm:` models, `judges:` evaluators; default judge: quality5)."
        ),
    ] = None,
    annotator: Annotated[
        str, typer.Option(help="Act annotator for dialogues without acts: rules, llm, or none.")
    ] = "rules",
    annotator_arg: Annotated[
        list[str] | None, typer.Option("--annotator-arg", help="An annotator argument KEY=VALUE.")
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Dialogues scored at the same time.")] = 8,
    out: Annotated[
        Path | None, typer.Option(help="Output folder (default: the run folder; for a file, <stem>-eval/).")
    ] = None,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace", help="Replace earlier scores; by default scores of metrics not re-scored stay."
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Score a run's dialogues: metrics, LLM judges, act annotation where acts are missing.

    Writes scores.jsonl (one line per dialogue and metric/aspect) and summary.json; LLM answers are
    cached in llm_cache.sqlite of the output folder. Earlier scores are merged: the metrics scored now
    replace their own records, the others stay (--replace drops them).
    """
    from crsim.eval.evaluation import EvaluateOptions, evaluate_path, load_judge_config

    with (
        user_errors(),
        _stopped_by_signals(f"the evaluation did not finish; run `crsim evaluate {run_dir}` again"),
    ):
        options = EvaluateOptions(
            metrics=parse_metric_specs(metrics) if metrics else None,
            judge=load_judge_config(judge) if judge is not None else None,
            annotator=annotator,
            annotator_args=parse_args(annotator_arg or []),
            concurrency=concurrency,
            replace=replace,
        )
        result = evaluate_path(run_dir, options, out=out)
    _show(result.summaries, as_json)
    if as_json:
        return
    notes = []
    if result.annotation.annotator and (result.annotation.annotated or result.annotation.failed):
        notes.append(
            f"acts filled in by {result.annotation.annotator!r} for {result.annotation.annotated} dialogues"
            + (f", {result.annotation.failed} failed" if result.annotation.failed else "")
        )
    if result.llm_roles:
        notes.append(
            f"{result.llm_calls} LLM calls ({', '.join(f'{k}: {v}' for k, v in result.llm_roles.items())})"
        )
    if result.kept:
        notes.append(f"earlier scores kept: {', '.join(result.kept)} (--replace drops them)")
    notes.append(f"scores and summary in {result.out_dir}")
    for note in notes:
        console.print(escape(note), highlight=False)
    for kind, message in result.annotation.failures.items():
        console.print(f"[red]annotation failed[/red] {escape(kind)}: {escape(message)}", highlight=False)


@app.command()
def report(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run folders written by `crsim run`.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The HTML file to write.")] = Path(REPORT),
    max_dialogues: Annotated[
        int, typer.Option(min=0, help="Dialogues per run in the browser, spread evenly (tables use all).")
    ] = 2000,
    rank_metric: Annotated[
        str | None, typer.Option(help="Metric label that ranks CRSs per simulator (default: Success).")
    ] = None,
) -> None:
    """One self-contained HTML report: manifests, results with CIs, plots and a dialogue browser.

    A run without scores.jsonl/summary.json is evaluated first with its manifest's metrics (as
    `crsim evaluate RUN_DIR` does), and the results are written into the run folder.
    """
    from crsim.eval.evaluation import evaluate_path
    from crsim.model.run_folder.folder import open_run
    from crsim.report.html import build_report, write_report

    with user_errors(), _stopped_by_signals("no report written"):
        folders = [open_run(path) for path in run_dirs]
        for folder in folders:
            if not folder.evaluated:
                console.print(
                    f"{escape(str(folder.path))}: no scores yet; evaluating", highlight=False, soft_wrap=True
                )
                evaluate_path(folder.path)
        html = build_report(folders, max_dialogues=max_dialogues, rank_metric=rank_metric)
        write_report(html, output)
    console.print(f"report: [bold]{escape(str(output))}[/bold]", highlight=False, soft_wrap=True)


@app.command()
def compare(
    run_dirs: Annotated[
        list[Path], typer.Argument(help="Evaluated run folders (CRSs that met the same users).")
    ],
    baseline: Annotated[
        str | None, typer.Option(help="Compare every CRS with this one only (default: all pairs).")
    ] = None,
    metrics: Annotated[
        list[str] | None,
        typer.Option("--metrics", help="Metric labels to compare, e.g. Success,SRRR (default: all scored)."),
    ] = None,
    detect: Annotated[
        float | None, typer.Option(min=0.0, help="Also say how many users would detect this difference.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Paired comparisons between CRSs: differences with bootstrap CIs, paired tests, Holm-corrected
    p-values, ranks with significance groups and the smallest difference the run could detect.

    Pairs are the dialogues of the same simulated user (and trial); dialogues broken by the simulator
    or the infrastructure are dropped with their pair. See docs/compare.md.
    """
    from crsim.eval.compare import ComparisonOptions
    from crsim.model.run_folder.folder import open_run
    from crsim.report.compare import compare_folders, comparison_lines

    with user_errors():
        labels = [m.strip() for spec in metrics or [] for m in spec.split(",") if m.strip()]
        options = ComparisonOptions(baseline=baseline, metrics=labels or None, detect=detect or None)
        found = compare_folders([open_run(path) for path in run_dirs], options)
    if as_json:
        typer.echo(json.dumps({**found.comparison.model_dump(mode="json"), "notes": found.notes}, indent=2))
        return
    for line in comparison_lines(found):
        typer.echo(line)


@app.command()
def export(
    run_dir: Annotated[Path, typer.Argument(help="A run folder written by `crsim run`.")],
    fmt: Annotated[str, typer.Option("--format", help="parquet or csv.")] = "parquet",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Output folder (default: RUN_DIR/export).")
    ] = None,
) -> None:
    """Dialogues, utterances and scores of a run as Parquet or CSV tables (crsim.analysis)."""
    from crsim.analysis import export_run

    with user_errors():
        if fmt not in ("parquet", "csv"):
            raise CrsimError(f"--format: unknown format {fmt!r}; expected parquet or csv")
        written = export_run(
            run_dir, output or run_dir / EXPORT_DIR, "parquet" if fmt == "parquet" else "csv"
        )
    for path in written:
        console.print(escape(str(path)), highlight=False)


@app.command()
def serve(
    crs_name: Annotated[str, typer.Argument(help="A registered CRS, e.g. retrieval or popular.")],
    arg: Annotated[
        list[str] | None, typer.Option("--arg", help="A CRS argument as KEY=VALUE (repeatable).")
    ] = None,
    args_json: Annotated[str | None, typer.Option(help="CRS arguments as a JSON object.")] = None,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on (0: any free port).")] = 8000,
    seed: Annotated[int, typer.Option(help="Seed for the sessions' random choices.")] = 0,
    max_sessions: Annotated[
        int,
        typer.Option(
            min=1, help="Open conversations at most; when full, the least recently used idle one is closed."
        ),
    ] = 10_000,
    session_idle_timeout: Annotated[
        float, typer.Option(min=0.001, help="Seconds after which an idle conversation is closed.")
    ] = 3600.0,
    max_body_bytes: Annotated[
        int, typer.Option(min=1, help="Largest request body accepted; larger ones get 413.")
    ] = 1_000_000,
    access_log: Annotated[
        bool, typer.Option(help="One line per request on stderr: method, path, status, duration.")
    ] = True,
) -> None:
    """Expose a crsim CRS over HTTP (CRS Arena protocol and the generic JSON protocol)."""
    from crsim.crs.server import ServeLimits
    from crsim.crs.server import serve as serve_crs

    def listening(url: str) -> None:
        console.print(
            f"crsim serve: {escape(crs_name)} listening on {url} (Ctrl-C stops)",
            highlight=False,
            soft_wrap=True,
        )
        sys.stdout.flush()  # a pipe would otherwise hold the line until the server stops

    with user_errors():
        args = parse_args(arg or [], args_json)
        limits = ServeLimits(
            max_sessions=max_sessions, idle_timeout_s=session_idle_timeout, max_body_bytes=max_body_bytes
        )
        serve_crs(
            crs_name,
            args,
            host,
            port,
            seed=seed,
            limits=limits,
            access_log=access_log,
            on_listening=listening,
        )


@app.command()
def schema(
    kind: Annotated[str, typer.Option(help="dialogue, item, user or config.")] = "dialogue",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file.")] = None,
) -> None:
    """Print the JSON Schema of a record type of the unified format."""
    from crsim.model import Dialogue, Item, SimulatedUser
    from crsim.run.config import ExperimentConfig

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
        raise typer.Exit(1)
    console.print(f"{file}: {count} {kind} valid", highlight=False, markup=False, soft_wrap=True)


def _cache_file(path: Path) -> Path:
    """A run folder means the cache inside it."""
    from crsim.model.run_folder.files import LLM_CACHE

    return path / LLM_CACHE if path.is_dir() else path


@cache_app.command("stats")
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


@cache_app.command("clear")
def cache_clear(
    path: Annotated[Path, typer.Argument(help="A run folder or an LLM cache file (.sqlite).")],
) -> None:
    """Delete every cached answer (the next run calls the models again)."""
    from crsim.llm.cache import clear_cache
    from crsim.model.run_folder.lock import lock_if_run_folder

    with user_errors(), lock_if_run_folder(path if path.is_dir() else path.parent):
        removed = clear_cache(_cache_file(path))
    console.print(f"removed {removed} cached answers from {escape(str(_cache_file(path)))}", highlight=False)


def main() -> None:
    # At exit, objects that live until then are left out of the collector's final passes (they are
    # still freed by reference counting as modules are torn down): those passes over a built
    # experiment took 1.3 s, which every command paid on exit and Ctrl-C had to wait for. crsim's
    # own files are flushed and closed before this point, never left to the collector.
    atexit.register(gc.freeze)
    app()
