"""`crsim evaluate`: score a run's dialogues (metrics, LLM judges, act annotation)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from crsim.cli._support import (
    console,
    parse_args,
    show_summaries,
    stopped_by_signals,
    user_errors,
    warn_incomplete,
)
from crsim.core.errors import CrsimError

if TYPE_CHECKING:  # the evaluation's modules are imported when the command runs, not for --help
    from crsim.eval.run_scoring import EvaluationResult
    from crsim.studies.behaviour.attribution import IssueSample, PairingIssues

#: The simulator measures shown beside the metrics (`crsim.studies.behaviour.attribution`).
SIMULATOR_ISSUES = ("missed_recommendation", "restated_constraint", "asked_stated_slot")

app = typer.Typer(add_completion=False)


def parse_metric_specs(values: list[str], run_dir: Path | None = None) -> list[Any]:
    """`--metrics` values: names, labels (`Recall@(t,10)`, the run's own), `name:arg=value,...`
    (values read as YAML scalars; `id=` sets the label); comma-separated or repeated."""
    from crsim.cli._metrics import metric_specs
    from crsim.model.run_folder.folder import is_run_folder, open_run

    run_metrics: list[Any] = []
    if run_dir is not None and is_run_folder(run_dir):
        run_metrics = [spec.model_dump() for spec in open_run(run_dir).typed_manifest.metrics or []]
    return metric_specs(values, run_metrics)


def evaluate_command(
    run_dir: Path,
    metrics: list[str] | None,
    judge: Path | None,
    annotator: str,
    annotator_args: list[str],
    concurrency: int,
    out: Path | None,
    replace: bool,
    as_json: bool,
) -> str:
    """The `crsim evaluate` command with these options, for the line a stopping signal prints: run again,
    it scores exactly what the stopped one would have (options at their defaults are left out)."""
    words = ["crsim", "evaluate", str(run_dir)]
    for value in metrics or []:
        words += ["--metrics", value]
    if judge is not None:
        words += ["--judge", str(judge)]
    if annotator != "rules":
        words += ["--annotator", annotator]
    for value in annotator_args:
        words += ["--annotator-arg", value]
    if concurrency != 8:
        words += ["--concurrency", str(concurrency)]
    if out is not None:
        words += ["--out", str(out)]
    words += ["--replace"] * replace + ["--json"] * as_json
    return shlex.join(words)


@app.command()
def evaluate(
    run_dir: Annotated[
        Path, typer.Argument(help="A run folder written by `crsim run`, or a dialogue JSONL file.")
    ],
    metrics: Annotated[
        list[str] | None,
        typer.Option(
            "--metrics",
            help="Metrics instead of the run's: names or labels (`success_rate`, 'Recall@(t,10)'), "
            "comma-separated or repeated; `name:arg=value,…` sets arguments.",
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
        Path | None,
        typer.Option(
            "--out", "-o", help="Output folder (default: the run folder; for a file, <stem>-eval/)."
        ),
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
    from crsim.eval.run_scoring import EvaluateOptions, evaluate_path, load_judge_config
    from crsim.runner.progress import ProgressReport

    again = evaluate_command(
        run_dir, metrics, judge, annotator, annotator_arg or [], concurrency, out, replace, as_json
    )
    with (
        user_errors(
            out or run_dir,
            after_os_error=f"earlier results are as they were; once the folder can be written: {again}",
        ),
        stopped_by_signals(
            f"the evaluation did not finish, earlier results are as they were; to run it again: {again}"
        ),
    ):
        options = EvaluateOptions(
            metrics=parse_metric_specs(metrics, run_dir) if metrics else None,
            judge=load_judge_config(judge) if judge is not None else None,
            annotator=annotator,
            annotator_args=parse_args(annotator_arg or []),
            concurrency=concurrency,
            replace=replace,
        )
        from crsim.studies.behaviour.attribution import IssueSample

        report = ProgressReport(enabled=not as_json)
        sample = IssueSample()  # counted over the same pass: the file is read once
        with report.phase("scoring") as meter:
            shown = meter if report.enabled else None  # no display: no line count for its total
            result = evaluate_path(run_dir, options, out=out, progress=shown, on_batch=sample.add)
    report.print_summary()
    issues, why_not = _simulator_issues(run_dir, sample)
    known = result.completeness is not None and result.completeness.planned is not None
    more = _issues_json(issues, sample)
    show_summaries(result.summaries, as_json, complete=result.complete if known else None, more=more)
    if not as_json:
        if issues:
            console.print(issues_table(issues, sample))
        elif why_not:
            console.print(escape(f"simulator-attributed issues not counted: {why_not}"), highlight=False)
        _print_notes(result)
    warn_incomplete(result.completeness)


def _simulator_issues(run_dir: Path, sample: IssueSample) -> tuple[list[PairingIssues], str]:
    """The simulator-attributed issues per pairing of the dialogues `sample` kept while they were
    scored, or none and why (a dialogue file that does not name its domain); they never fail the
    evaluation."""
    try:
        return sample.issues(run_dir), ""
    except CrsimError as exc:
        return [], str(exc)


def sample_note(sample: IssueSample) -> str:
    """What the issue counts cover when the run held more dialogues than the sample ('' otherwise)."""
    if not sample.sampled:
        return ""
    return (
        f"counted on {sample.size:,} of {sample.seen:,} dialogues, "
        f"a uniform sample drawn with seed {sample.seed}"
    )


def _issues_json(issues: list[PairingIssues], sample: IssueSample) -> dict[tuple[str, str], dict[str, Any]]:
    """Each pairing's `simulator_issues` ({measure: {k, n, examples}}) for the JSON output, and when
    the counts cover a sample, `simulator_issues_sample` ({dialogues, of, seed})."""
    covered = {"dialogues": sample.size, "of": sample.seen, "seed": sample.seed}
    return {
        (p.crs_id, p.simulator_id): {
            "simulator_issues": {m: c.model_dump(mode="json") for m, c in p.issues.items()},
            **({"simulator_issues_sample": covered} if sample.sampled else {}),
        }
        for p in issues
    }


def issues_table(issues: list[PairingIssues], sample: IssueSample | None = None) -> Table:
    """Measures as rows, pairings as columns: dialogues flagged of those the measure could judge."""
    note = sample_note(sample) if sample is not None else ""
    table = Table(
        title="Simulator-attributed issues (dialogues flagged / judged)",
        title_justify="left",
        caption=note or None,
        caption_justify="left",
    )
    table.add_column("issue", style="bold", no_wrap=True)
    for pairing in issues:
        table.add_column(escape(f"{pairing.crs_id} × {pairing.simulator_id}"), justify="right")
    for measure in SIMULATOR_ISSUES:
        cells = [f"{p.issues[measure].k} / {p.issues[measure].n}" for p in issues]
        table.add_row(measure, *cells)
    return table


def _print_notes(result: EvaluationResult) -> None:
    """What else the evaluation did: acts filled in, LLM calls, earlier scores
    kept, where the files are, and the annotator's failures."""
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
