"""`crsim analyze`: diversity and controllability of simulated users' language, the consistency
of two judge configurations' scores, and the behaviour report of a run."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from crsim.cli._support import user_errors
from crsim.core.errors import CrsimError
from crsim.model.run_folder.files import LLM_CACHE, SCORES
from crsim.studies.language.runs import Measured, MeasureOptions, Method, measure_runs, write_utterances
from crsim.studies.language.runs import thresholds as make_thresholds

analyze_app = typer.Typer(
    add_completion=False, no_args_is_help=True, pretty_exceptions_show_locals=False, help=__doc__
)
console = Console(soft_wrap=True)


class UnitChoice(StrEnum):
    DIALOGUE = "dialogue"
    UTTERANCE = "utterance"


RunsArgument = Annotated[
    list[Path], typer.Argument(help="Run folders written by `crsim run` (or dialogue JSONL files).")
]
MethodOption = Annotated[
    Method, typer.Option("--measure", help="Formality and key points by rules (offline) or by an LLM judge.")
]
JudgeOption = Annotated[
    Path | None,
    typer.Option(
        "--judge",
        help="YAML with an `llm:` section (role 'judge'; default: the local model); only with --measure llm.",
    ),
]
CacheOption = Annotated[
    Path | None,
    typer.Option(help=f"LLM response cache (SQLite); default: {LLM_CACHE} in each run folder."),
]
ItemsOption = Annotated[
    Path | None,
    typer.Option(
        help="Item collection (.jsonl/.jsonl.gz) for the rule key-point counter; default: the shipped movies."
    ),
]
PlotsOption = Annotated[Path | None, typer.Option("--plots", help="Write PNG bar charts to this folder.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the report as JSON instead of a table.")]
UtterancesOption = Annotated[
    Path | None, typer.Option(help="Also write every measured utterance (JSON Lines) to this file.")
]
ShortOption = Annotated[int, typer.Option(min=1, help="Most words of a short utterance.")]
MediumOption = Annotated[int, typer.Option(min=2, help="Most words of a medium utterance (more: long).")]
LowOption = Annotated[int, typer.Option(min=0, help="Most key points of a low-richness utterance.")]
ConcurrencyOption = Annotated[int, typer.Option(min=1, help="Dialogues measured at the same time.")]


def _say_errors(measured: Measured) -> None:
    from crsim.studies.language.measuring import error_counts

    counts = error_counts(measured.dialogues)
    if any(counts.values()):
        console.print(
            "[red]unreadable judge answers[/red] "
            + ", ".join(f"{measure}: {n}" for measure, n in counts.items() if n)
            + " (counted as errors, left out of the distributions)",
            highlight=False,
        )


@analyze_app.command("diversity")
def diversity_command(
    runs: RunsArgument,
    method: MethodOption = Method.RULES,
    judge: JudgeOption = None,
    cache: CacheOption = None,
    items: ItemsOption = None,
    plots: PlotsOption = None,
    as_json: JsonOption = False,
    utterances: UtterancesOption = None,
    short_max: ShortOption = 20,
    medium_max: MediumOption = 40,
    low_richness_max: LowOption = 2,
    concurrency: ConcurrencyOption = 8,
) -> None:
    """Per simulator: user utterances per length, formality and richness category, and how uniform
    each distribution is (normalised entropy, 1 = uniform)."""
    from crsim.studies.language.diversity import diversity
    from crsim.studies.language.plots import plot_diversity
    from crsim.studies.language.tables import diversity_table

    with user_errors():
        thresholds = make_thresholds(short_max, medium_max, low_richness_max)
        options = MeasureOptions(method, judge, cache, items, concurrency, thresholds)
        measured = _measure(runs, options, as_json)
        report = diversity(measured.dialogues, method=method.value, thresholds=thresholds, runs=measured.runs)
        written = _outputs(measured, utterances, plots, lambda out: plot_diversity(report, out))
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
        return
    console.print(diversity_table(report))
    _say_errors(measured)
    _say_written(written)


@analyze_app.command("controllability")
def controllability_command(
    runs: RunsArgument,
    method: MethodOption = Method.RULES,
    judge: JudgeOption = None,
    cache: CacheOption = None,
    items: ItemsOption = None,
    plots: PlotsOption = None,
    as_json: JsonOption = False,
    utterances: UtterancesOption = None,
    alpha: Annotated[float, typer.Option(min=0.0, max=1.0, help="Significance level of the tests.")] = 0.05,
    unit: Annotated[
        UnitChoice, typer.Option(help="Mann-Whitney observations: per-dialogue means, or single utterances.")
    ] = UnitChoice.DIALOGUE,
    short_max: ShortOption = 20,
    medium_max: MediumOption = 40,
    low_richness_max: LowOption = 2,
    concurrency: ConcurrencyOption = 8,
) -> None:
    """Per simulator and persona linguistic pattern (user_profile.persona keys sentence_length,
    information_richness, formality): the measure's distribution per level, and whether the
    pattern moves it the intended way (Mann-Whitney U of the extreme levels, chi-square)."""
    from crsim.studies.language.diversity import controllability
    from crsim.studies.language.plots import plot_controllability
    from crsim.studies.language.tables import controllability_tables

    with user_errors():
        thresholds = make_thresholds(short_max, medium_max, low_richness_max)
        options = MeasureOptions(method, judge, cache, items, concurrency, thresholds)
        measured = _measure(runs, options, as_json)
        report = controllability(
            measured.dialogues,
            method=method.value,
            thresholds=thresholds,
            runs=measured.runs,
            alpha=alpha,
            unit=unit.value,
        )
        written = _outputs(measured, utterances, plots, lambda out: plot_controllability(report, out))
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
        return
    if not report.results:
        console.print(
            "no dialogue has a linguistic pattern in user_profile.persona "
            "(keys sentence_length, information_richness, formality)",
            highlight=False,
        )
    for table in controllability_tables(report):
        console.print(table)
    _say_errors(measured)
    _say_written(written)


@analyze_app.command("consistency")
def consistency_command(
    scores_a: Annotated[Path, typer.Argument(help=f"{SCORES} of the first judge configuration.")],
    scores_b: Annotated[Path, typer.Argument(help=f"{SCORES} of the second, on the same dialogues.")],
    as_json: JsonOption = False,
) -> None:
    """Per metric in both files: paired dialogues, missing pairs, Pearson and Spearman correlations
    over dialogues and over (CRS, simulator) group means."""
    from crsim.studies.language.consistency import consistency_report
    from crsim.studies.language.tables import consistency_table

    with user_errors():
        report = consistency_report(scores_a, scores_b)
        if not any(metric.paired >= 3 for metric in report.metrics):
            shared = (
                "share no metric label"
                if not report.metrics
                else "pair fewer than 3 dialogues on every metric"
            )
            raise CrsimError(
                f"{scores_a} and {scores_b} {shared}; a correlation needs at least 3 dialogues scored in both"
            )
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
        return
    if report.metrics:
        console.print(consistency_table(report))
    else:
        console.print("the two files share no metric label", highlight=False)
    for side, labels in (("A", report.only_in_a), ("B", report.only_in_b)):
        if labels:
            console.print(f"only in {side}: {escape(', '.join(labels))}", highlight=False)


@analyze_app.command("behaviour")
def behaviour_command(
    run: Annotated[
        Path, typer.Argument(help="A run folder written by `crsim run` (or a dialogue JSONL file).")
    ],
    scores: Annotated[
        list[Path] | None,
        typer.Option(
            "--scores",
            help=f"Judge scores: a {SCORES} or an evaluation folder holding one (repeatable); "
            f"default: the run folder's {SCORES}, if any.",
        ),
    ] = None,
    domain: Annotated[
        str | None,
        typer.Option(help="Domain (name or domain file) of a dialogue file; default: the run's manifest."),
    ] = None,
    as_json: JsonOption = False,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Also write the report: the tidy table for a .csv path, else JSON."),
    ] = None,
) -> None:
    """Per simulator, CRS and judge: how often each behaviour measure fires (k of n, with a 95% Wilson
    interval), computed by rules from the records without an LLM (docs/behaviour.md)."""
    from crsim.studies.behaviour import behaviour_report
    from crsim.studies.behaviour.report import write_report
    from crsim.studies.behaviour.tables import behaviour_tables, examples_text

    with user_errors():
        named = None
        if domain is not None:
            from crsim.domains import domain_named

            named = domain_named(domain)
        report = behaviour_report(run, named, scores or [])
        if out is not None:
            write_report(report, out)
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
        return
    if not report.rows:
        console.print(f"no dialogue to measure in {escape(str(run))}", highlight=False)
    for table in behaviour_tables(report):
        console.print(table)
    for line in examples_text(report):
        console.print(escape(line), highlight=False)
    if report.unreadable:
        console.print(f"[red]{len(report.unreadable)} unreadable record(s)[/red], left out:", highlight=False)
        for problem in report.unreadable[:5]:
            console.print(
                escape(f"  {problem.path}, line {problem.line}: {problem.problem}"), highlight=False
            )
    if out is not None:
        _say_written([out])


def _measure(runs: list[Path], options: MeasureOptions, as_json: bool) -> Measured:
    """`measure_runs` with its progress on stderr (none with --json) and the phase summary after it."""
    from crsim.runner.progress import ProgressReport

    progress = ProgressReport(enabled=not as_json)
    with progress.phase("measuring") as meter:
        measured = measure_runs(runs, options, meter)
    progress.print_summary()
    return measured


def _outputs(
    measured: Measured, utterances: Path | None, plots: Path | None, plot: Callable[[Path], list[Path]]
) -> list[Path]:
    """Write the per-utterance file and the plots that were asked for; returns the files written."""
    written: list[Path] = []
    if utterances is not None:
        write_utterances(measured, utterances)
        written.append(utterances)
    if plots is not None:
        written += plot(plots)
    return written


def _say_written(written: list[Path]) -> None:
    for path in written:
        console.print(f"wrote {escape(str(path))}", highlight=False)
