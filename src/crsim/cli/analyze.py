"""`crsim analyze`: diversity and controllability of simulated users' language, and the consistency
of two judge configurations' scores."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from crsim.cli._support import atomic_output, user_errors
from crsim.errors import ConfigError, CrsimError
from crsim.model.run_folder.files import DIALOGUES, LLM_CACHE, SCORES
from crsim.studies.language.measures import DialogueMeasures, Thresholds

if TYPE_CHECKING:
    from crsim.studies.language.measuring import Measurer

analyze_app = typer.Typer(
    add_completion=False, no_args_is_help=True, pretty_exceptions_show_locals=False, help=__doc__
)
console = Console(soft_wrap=True)


class Method(StrEnum):
    RULES = "rules"
    LLM = "llm"


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


@dataclass
class Measured:
    dialogues: list[DialogueMeasures]
    runs: list[str]
    thresholds: Thresholds


@dataclass(frozen=True)
class MeasureOptions:
    """How to measure: the CLI options every measuring command shares."""

    method: Method
    judge: Path | None
    cache: Path | None
    items: Path | None
    concurrency: int
    thresholds: Thresholds

    def check(self) -> None:
        if self.method is Method.RULES and (self.judge is not None or self.cache is not None):
            raise CrsimError("--judge and --cache apply to --measure llm only")
        if self.method is Method.LLM and self.items is not None:
            raise CrsimError("--items applies to --measure rules only")


def _dialogue_file(run: Path) -> Path:

    path = run / DIALOGUES if run.is_dir() else run
    if not path.is_file():
        raise CrsimError(f"{run}: expected a run folder with {DIALOGUES} or a dialogue JSONL file")
    return path


def _thresholds(short_max: int, medium_max: int, low_max: int) -> Thresholds:
    try:
        return Thresholds(short_max=short_max, medium_max=medium_max, low_richness_max=low_max)
    except ValidationError as exc:
        raise ConfigError(f"--medium-max: {exc.errors()[0]['msg']}") from None


async def _measure_llm(path: Path, run: str, options: MeasureOptions) -> list[DialogueMeasures]:
    """One run with the LLM judges; the response cache defaults to the run folder's."""
    from crsim.llm.client import LLMHub
    from crsim.llm.config import LLMSettings, load_llm_settings
    from crsim.model.io import iter_dialogues
    from crsim.studies.language.judge import LLMJudge
    from crsim.studies.language.measuring import LLMMeasurer, measure_dialogues

    settings = load_llm_settings(options.judge) if options.judge is not None else LLMSettings()
    if options.cache is not None:
        cache = settings.cache.model_copy(update={"path": options.cache})
        settings = settings.model_copy(update={"cache": cache})
    hub = LLMHub(settings, cache_path=path.parent / LLM_CACHE)
    try:
        hub.check(["judge"])
        measurer: Measurer = LLMMeasurer(LLMJudge(hub))
        dialogues = iter_dialogues(path)
        return await measure_dialogues(
            dialogues, measurer, options.thresholds, run=run, concurrency=options.concurrency
        )
    finally:
        await hub.aclose()


async def _measure_all(
    paths: list[Path], names: list[str], options: MeasureOptions
) -> list[DialogueMeasures]:
    from crsim.model.io import iter_dialogues
    from crsim.studies.language.measuring import RuleMeasurer, measure_dialogues

    measured: list[DialogueMeasures] = []
    rules: Measurer | None = None
    for path, name in zip(paths, names, strict=True):
        if options.method is Method.LLM:
            measured += await _measure_llm(path, name, options)
            continue
        if rules is None:
            from crsim.data.augment.base import annotation_domain

            rules = RuleMeasurer(annotation_domain(options.items))
        measured += await measure_dialogues(
            iter_dialogues(path), rules, options.thresholds, run=name, concurrency=options.concurrency
        )
    return measured


def _measure(runs: list[Path], options: MeasureOptions) -> Measured:
    """Every run's user utterances; all paths are checked before the first is measured."""
    from crsim.studies.language.measuring import name_groups

    options.check()
    paths = [_dialogue_file(run) for run in runs]
    names = [run.name if run.is_dir() else run.stem for run in runs]
    if len(set(names)) < len(names):
        names = [str(run) for run in runs]
    measured = asyncio.run(_measure_all(paths, names, options))
    return Measured(name_groups(measured), names, options.thresholds)


def _write_utterances(measured: Measured, path: Path) -> None:
    with atomic_output(path) as handle:
        for item in measured.dialogues:
            for utterance in item.utterances:
                record = {"group": item.group, "run": item.run, "pattern": item.pattern}
                handle.write(
                    json.dumps({**record, **utterance.model_dump(mode="json")}, ensure_ascii=False) + "\n"
                )


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
        thresholds = _thresholds(short_max, medium_max, low_richness_max)
        options = MeasureOptions(method, judge, cache, items, concurrency, thresholds)
        measured = _measure(runs, options)
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
        thresholds = _thresholds(short_max, medium_max, low_richness_max)
        options = MeasureOptions(method, judge, cache, items, concurrency, thresholds)
        measured = _measure(runs, options)
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


def _outputs(
    measured: Measured, utterances: Path | None, plots: Path | None, plot: Callable[[Path], list[Path]]
) -> list[Path]:
    """Write the per-utterance file and the plots that were asked for; returns the files written."""
    written: list[Path] = []
    if utterances is not None:
        _write_utterances(measured, utterances)
        written.append(utterances)
    if plots is not None:
        written += plot(plots)
    return written


def _say_written(written: list[Path]) -> None:
    for path in written:
        console.print(f"wrote {escape(str(path))}", highlight=False)
