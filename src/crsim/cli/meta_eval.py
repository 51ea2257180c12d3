"""`crsim meta-eval`: how far can an evaluator be trusted? Its correlation with CRSArena-Eval's human
labels, beside the published baselines, and (with --rank) whether it orders the CRSs as humans do.

`crsim.cli` loads `meta_app` (the one command) when `crsim meta-eval` runs; tests invoke it directly.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from crsim.cli._support import parse_args, user_errors
from crsim.core.errors import CrsimError
from crsim.core.plugins import ComponentSpec
from crsim.model.run_folder.files import LLM_CACHE, RunPaths

if (
    TYPE_CHECKING
):  # crsim.studies.meta (scipy, scikit-learn) is imported when the command runs, not for --help
    from crsim.llm.config import LLMSettings
    from crsim.runner.progress import ProgressReport
    from crsim.studies.meta.gold import GoldSet
    from crsim.studies.meta.learned import Protocol
    from crsim.studies.meta.predictions import Predictions
    from crsim.studies.meta.report import MetaReport


console = Console()


def _aspect(value: str, option: str) -> str:
    from crsim.studies.meta.aspects import ASPECTS, canonical_aspect

    aspect = canonical_aspect(value)
    if aspect is None:
        raise CrsimError(f"{option}: unknown aspect {value!r}; expected one of: {', '.join(ASPECTS)}")
    return aspect


def _run_name(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".json"):
        name = name.removesuffix(suffix)
    return name


def meta_eval(
    run_file: Annotated[
        Path | None,
        typer.Option("--run-file", help="Predictions to score (FACE run file format, .json[.gz])."),
    ] = None,
    evaluator: Annotated[
        str | None, typer.Option("--evaluator", help="A registered metric or evaluator to run and score.")
    ] = None,
    arg: Annotated[
        list[str] | None, typer.Option("--arg", help="An evaluator argument KEY=VALUE (repeatable).")
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="YAML with an `llm:` section (default: the local model).")
    ] = None,
    work_dir: Annotated[
        Path | None, typer.Option("--work-dir", help=f"Folder for {LLM_CACHE} (default: current folder).")
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Conversations scored at the same time.")] = 8,
    aspect: Annotated[
        str, typer.Option(help="Aspect that values without an aspect (a plain metric) stand for.")
    ] = "overall",
    save_run: Annotated[
        Path | None, typer.Option("--save-run", help="Also write the predictions as a run file.")
    ] = None,
    gold: Annotated[
        Path | None, typer.Option(help="CRSArena-Eval file (default: the copy shipped with crsim).")
    ] = None,
    limit: Annotated[
        int | None, typer.Option(min=1, help="Only the first N conversations of each split (quick tries).")
    ] = None,
    name: Annotated[
        str | None, typer.Option(help="Row name in the tables (default: evaluator/file).")
    ] = None,
    protocol: Annotated[
        str | None,
        typer.Option(
            help="With --evaluator learned_crsarena: retrain and predict out of fold, cv5 (grouped 5-fold"
            " CV by conversation), loso (leave one system out) or both; without it the shipped model"
            " is scored on the conversations it was trained on."
        ),
    ] = None,
    rank: Annotated[
        bool, typer.Option("--rank", help="Also rank the CRSs: evaluator versus humans.")
    ] = False,
    rank_aspect: Annotated[
        str, typer.Option(help="Aspect whose per-dialogue scores rank the CRSs.")
    ] = "overall",
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print the report as Markdown.")] = False,
) -> None:
    """Correlate an evaluator's scores (or a run file) with CRSArena-Eval's human labels.

    Pearson r and Spearman rho per split (ReDial, OpenDialKG) and aspect, pooled over all labelled
    turns or dialogues, with N and the labels that had no prediction; the published baselines beside.
    """
    from crsim.runner.progress import ProgressReport
    from crsim.studies.meta.predictions import write_run_file

    progress = ProgressReport(enabled=not as_json)
    with user_errors():
        _check_choices(run_file, evaluator, as_json=as_json, markdown=markdown)
        default_aspect = _aspect(aspect, "--aspect")
        ranked_by = _aspect(rank_aspect, "--rank-aspect")
        if protocol is not None:
            protocols = _protocols(protocol, evaluator, arg, config, save_run)
            reports = _learned_reports(protocols, gold, limit, name, ranked_by if rank else None, progress)
            progress.print_summary()
            _print_learned(reports, as_json=as_json, markdown=markdown, save_run=save_run)
            return
        predictions, label, gold_set, calls = _predictions(
            run_file, evaluator, arg, config, work_dir, concurrency, default_aspect, gold, limit, progress
        )
        if save_run is not None:
            write_run_file(predictions, save_run, order=[c.conv_id for c in gold_set])
        report = _report(gold_set, predictions, name or label, evaluator, ranked_by if rank else None)
    progress.print_summary()
    _print_report(report, calls, save_run, as_json=as_json, markdown=markdown)


def _check_choices(run_file: Path | None, evaluator: str | None, *, as_json: bool, markdown: bool) -> None:
    """One source of predictions (a run file or an evaluator) and at most one output format."""
    if (run_file is None) == (evaluator is None):
        raise CrsimError("give exactly one of --run-file FILE or --evaluator NAME")
    if as_json and markdown:
        raise CrsimError("--json and --markdown: choose one output format")


def _report(
    gold_set: GoldSet, predictions: Predictions, label: str, evaluator: str | None, ranked_by: str | None
) -> MetaReport:
    """The report of one set of predictions: correlations beside the baselines, the ranking when
    `ranked_by` names an aspect; the shipped learned model scored on its own training data says so."""
    from crsim.studies.meta.baselines import load_baselines
    from crsim.studies.meta.correlation import meta_evaluate
    from crsim.studies.meta.ranking import rank_systems
    from crsim.studies.meta.report import build_report

    result = meta_evaluate(gold_set, predictions, label)
    if evaluator == LEARNED:
        result.notes[IN_SAMPLE] = len(gold_set)
    ranking = rank_systems(gold_set, predictions, ranked_by) if ranked_by is not None else None
    return build_report(result, load_baselines(), ranking)


def _predictions(
    run_file: Path | None,
    evaluator: str | None,
    arg: list[str] | None,
    config: Path | None,
    work_dir: Path | None,
    concurrency: int,
    default_aspect: str,
    gold: Path | None,
    limit: int | None,
    progress: ProgressReport,
) -> tuple[Predictions, str, GoldSet, dict[str, int]]:
    """The predictions to score (read from a run file, or made by running the evaluator on the gold
    conversations), their label, the gold set and the LLM calls made by role."""
    from crsim.eval.metrics.base import metric_registry
    from crsim.llm.config import LLMSettings, load_llm_settings
    from crsim.studies.meta.gold import load_gold
    from crsim.studies.meta.predictions import read_run_file

    if run_file is not None:
        return read_run_file(run_file), _run_name(run_file), load_gold(gold, limit_per_split=limit), {}
    assert evaluator is not None
    args = parse_args(arg or [])
    # bad names, arguments or model settings fail before the data is read
    metric_registry.params(evaluator, args, where="--evaluator")
    settings = load_llm_settings(config) if config is not None else LLMSettings()
    gold_set = load_gold(gold, link_items=True, limit_per_split=limit)
    predictions, label, calls = _evaluate(
        ComponentSpec(name=evaluator, args=args),
        settings,
        work_dir,
        concurrency,
        default_aspect,
        gold_set,
        progress,
    )
    return predictions, label, gold_set, calls


def _print_report(
    report: MetaReport, calls: dict[str, int], save_run: Path | None, *, as_json: bool, markdown: bool
) -> None:
    from crsim.studies.meta.report import markdown_report, rich_report

    if as_json:
        typer.echo(json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False))
    elif markdown:
        typer.echo(markdown_report(report))
    else:
        console.print(rich_report(report))
        if calls:
            made = ", ".join(f"{role}: {count}" for role, count in calls.items())
            console.print(escape(f"LLM calls made (cache hits excluded): {made}"), highlight=False)
        if save_run is not None:
            console.print(escape(f"predictions written to {save_run}"), highlight=False)


LEARNED = "learned_crsarena"
IN_SAMPLE = (
    "conversation(s) the shipped learned_crsarena model was trained on: in-sample numbers, not a"
    " validation (use --protocol cv5|loso|both)"
)


def _protocols(
    protocol: str, evaluator: str | None, arg: list[str] | None, config: Path | None, save_run: Path | None
) -> list[Protocol]:
    """The protocols asked for; options that a retrained evaluator would ignore are errors."""
    from crsim.studies.meta.learned import PROTOCOLS

    if evaluator != LEARNED:
        raise CrsimError(
            f"--protocol: only --evaluator {LEARNED} is trained here (got {evaluator or 'a run file'})"
        )
    if arg or config is not None:
        raise CrsimError("--protocol retrains the model in every fold; --arg and --config do not apply")
    chosen: list[Protocol] = (
        list(PROTOCOLS) if protocol == "both" else [p for p in PROTOCOLS if p == protocol]
    )
    if not chosen:
        raise CrsimError(f"--protocol: expected cv5, loso or both, got {protocol!r}")
    if save_run is not None and len(chosen) > 1:
        raise CrsimError("--save-run writes one run file: choose --protocol cv5 or loso")
    return chosen


def _learned_reports(
    protocols: list[Protocol],
    gold: Path | None,
    limit: int | None,
    name: str | None,
    ranked_by: str | None,
    progress: ProgressReport,
) -> dict[str, tuple[MetaReport, Predictions, list[str]]]:
    """Out-of-fold predictions of every protocol, correlated like any evaluator's (one progress phase
    per protocol, its folds the items)."""
    from crsim.studies.meta.baselines import load_baselines
    from crsim.studies.meta.correlation import meta_evaluate
    from crsim.studies.meta.gold import load_gold
    from crsim.studies.meta.learned import PROTOCOL_TITLES, cross_validate
    from crsim.studies.meta.ranking import rank_systems
    from crsim.studies.meta.report import build_report

    gold_set = load_gold(gold, link_items=True, limit_per_split=limit)
    out: dict[str, tuple[MetaReport, Predictions, list[str]]] = {}
    for protocol in protocols:
        started = time.perf_counter()
        with progress.phase(f"{protocol} folds") as meter:
            run = cross_validate(gold_set, protocol, progress=meter)
        seconds = time.perf_counter() - started
        label = f"{name or LEARNED} ({PROTOCOL_TITLES[protocol]})"
        result = meta_evaluate(gold_set, run.predictions, label)
        ranking = rank_systems(gold_set, run.predictions, ranked_by) if ranked_by else None
        order = [c.conv_id for c in gold_set]
        out[protocol] = (build_report(result, load_baselines(), ranking), run.predictions, order)
        typer.echo(f"{PROTOCOL_TITLES[protocol]}: {len(run.folds)} folds in {seconds:.1f} s", err=True)
    return out


def _print_learned(
    reports: dict[str, tuple[MetaReport, Predictions, list[str]]],
    *,
    as_json: bool,
    markdown: bool,
    save_run: Path | None,
) -> None:
    from crsim.studies.meta.predictions import write_run_file
    from crsim.studies.meta.report import markdown_report, rich_report

    for _, predictions, order in reports.values():
        if save_run is not None:
            write_run_file(predictions, save_run, order=order)
    if as_json:
        data = {protocol: report.model_dump(mode="json") for protocol, (report, _, _) in reports.items()}
        typer.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    for report, _, _ in reports.values():
        if markdown:
            typer.echo(markdown_report(report))
        else:
            console.print(rich_report(report))
    if save_run is not None:
        console.print(escape(f"predictions written to {save_run}"), highlight=False)


def _evaluate(
    spec: ComponentSpec,
    settings: LLMSettings,
    work_dir: Path | None,
    concurrency: int,
    default_aspect: str,
    gold_set: GoldSet,
    progress: ProgressReport,
) -> tuple[Predictions, str, dict[str, int]]:
    """Run a registered evaluator over the gold conversations; LLM answers cached in the work folder."""
    from crsim.studies.meta.evaluator import run_evaluator

    folder = work_dir or Path.cwd()
    folder.mkdir(parents=True, exist_ok=True)
    with progress.phase("scoring") as meter:
        run = run_evaluator(
            spec,
            gold_set,
            llm=settings,
            cache_path=RunPaths(folder).llm_cache,
            concurrency=concurrency,
            default_aspect=default_aspect,
            progress=meter,
        )
    return run.predictions, run.label, run.llm_calls


meta_app = typer.Typer(add_completion=False, pretty_exceptions_show_locals=False, help=__doc__)
meta_app.command("meta-eval")(meta_eval)
