"""`crsim judge`: list and show rubrics, and compare two runs' simulators pairwise with an LLM judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from crsim.cli._support import atomic_output, user_errors
from crsim.model.run_folder.files import DIALOGUES, LLM_CACHE

if TYPE_CHECKING:
    from crsim.studies.pairwise import PairwiseReport, Rate

judge_app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    help="LLM judges: rubrics for scoring dialogues, pairwise comparison of simulators.",
)
console = Console(soft_wrap=True)


@judge_app.command("rubrics")
def list_rubrics() -> None:
    """List the rubrics shipped with crsim (use them as `rubric:` of the `judge` metric)."""
    from crsim.eval.judge.rubric import load_rubric, shipped_rubrics

    table = Table(box=box.SIMPLE_HEAD)
    for column in ("rubric", "aspects", "source"):
        table.add_column(column)
    for name in shipped_rubrics():
        rubric = load_rubric(name)
        aspects = ", ".join(
            f"{a.name} ({a.level}, {a.scale[0]}-{a.scale[1]})" for a in rubric.aspects.values()
        )
        derived = ", ".join(f"{d} (sum)" for d in rubric.derived)
        table.add_row(name, aspects + (f"; {derived}" if derived else ""), rubric.source)
    console.print(table)


@judge_app.command("show")
def show(
    rubric: Annotated[str, typer.Argument(help="A shipped rubric's name or a rubric YAML file.")],
) -> None:
    """Print a rubric's aspects with every level's description."""
    from crsim.eval.judge.rubric import load_rubric

    with user_errors():
        loaded = load_rubric(rubric)
    console.print(f"[bold]{loaded.name}[/bold]: {loaded.description}", highlight=False)
    if loaded.source:
        console.print(f"source: {loaded.source}", highlight=False)
    if loaded.user_preferences != "none":
        console.print(f"user preferences: {loaded.user_preferences}", highlight=False)
    for aspect in loaded.aspects.values():
        console.print(
            f"\n[bold]{aspect.name}[/bold] ({aspect.level} level, {aspect.scale[0]}..{aspect.scale[1]}): "
            f"{aspect.description}",
            highlight=False,
        )
        for score, text in aspect.described_levels():
            console.print(f"  {score:>3}  {text}", highlight=False)
    for name, derived in loaded.derived.items():
        console.print(
            f"\n[bold]{name}[/bold] (= {' + '.join(derived.sum)}): {derived.description}", highlight=False
        )


@judge_app.command("compare")
def compare(
    run_a: Annotated[Path, typer.Argument(help=f"Run folder A (or its {DIALOGUES}).")],
    run_b: Annotated[Path, typer.Argument(help=f"Run folder B (or its {DIALOGUES}).")],
    judge: Annotated[
        Path | None,
        typer.Option(
            "--judge",
            help="YAML with an `llm:` section (role 'judge' or the default model); default: the local model.",
        ),
    ] = None,
    criteria: Annotated[
        str, typer.Option(help="Shipped criteria (recusersim6) or a criteria YAML file.")
    ] = "recusersim6",
    cache: Annotated[
        Path | None,
        typer.Option(help=f"LLM response cache; default: the config's, else {LLM_CACHE} in RUN_A."),
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Compare only the first N pairs.")] = None,
    sim_a: Annotated[
        str | None, typer.Option("--sim-a", help="Simulator of run A (if it has several).")
    ] = None,
    sim_b: Annotated[
        str | None, typer.Option("--sim-b", help="Simulator of run B (if it has several).")
    ] = None,
    role: Annotated[str, typer.Option(help="Model role of the judge.")] = "judge",
    concurrency: Annotated[int, typer.Option(min=1, help="Judge calls in flight at once.")] = 8,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full report as JSON.")] = False,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the full report (JSON) here.")
    ] = None,
) -> None:
    """Which simulator plays the user better: win/draw/loss of A against B per criterion (95% Wilson CIs).

    Pairs share CRS, user and trial; both orders are asked; orders that disagree are a draw."""
    import asyncio

    from crsim.llm.config import LLMSettings, load_llm_settings
    from crsim.runner.progress import ProgressReport
    from crsim.studies.pairwise import compare_runs

    progress = ProgressReport(enabled=not as_json)
    with user_errors(), progress.phase("pairs") as meter:
        settings = load_llm_settings(judge) if judge is not None else LLMSettings()
        report = asyncio.run(
            compare_runs(
                run_a,
                run_b,
                settings=settings,
                criteria=criteria,
                cache=cache,
                role=role,
                simulator_a=sim_a,
                simulator_b=sim_b,
                limit=limit,
                concurrency=concurrency,
                progress=meter,
            )
        )
    progress.print_summary()
    data = report.model_dump(mode="json")
    if out is not None:
        _write_json(data, out)
    if as_json:
        typer.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    _print_report(report)
    if out is not None:
        console.print(f"report written to {out}", highlight=False)


def _write_json(data: dict[str, Any], out: Path) -> None:
    """The full report as indented JSON (non-ASCII kept), written whole or not at all."""
    with atomic_output(out) as handle:
        json.dump(data, handle, indent=2, ensure_ascii=False)
        handle.write("\n")


def _print_report(report: PairwiseReport) -> None:
    def cell(value: Rate) -> str:
        if value.rate is None or value.ci_low is None or value.ci_high is None:
            return "-"
        return f"{value.rate:.0%} ({value.ci_low * 100:.0f}-{value.ci_high * 100:.0f})"

    console.print(
        f"A = {report.simulator_a} ({report.run_a})  vs  B = {report.simulator_b} ({report.run_b})\n"
        f"judge: {report.judge}; criteria: {report.criteria}",
        highlight=False,
    )
    table = Table(
        box=box.SIMPLE_HEAD, title=f"A against B: rate ({report.confidence:.0%} Wilson interval, in %)"
    )
    for column in ("criterion", "n", "win", "draw", "loss", "disagree", "errors"):
        table.add_column(column, justify="left" if column == "criterion" else "right", no_wrap=True)
    for s in report.summaries:
        table.add_row(
            s.criterion,
            str(s.n),
            cell(s.win),
            cell(s.draw),
            cell(s.loss),
            str(s.disagreements),
            str(s.errors),
        )
    console.print(table)
    console.print(
        f"pairs compared: {report.pairs_compared}"
        + (f" (another {report.left_out_by_limit} left out by --limit)" if report.left_out_by_limit else "")
        + f"; unpaired: {len(report.unpaired_a)} in A, {len(report.unpaired_b)} in B"
        + (
            f"; repeated keys: {len(report.duplicates_a)} in A, {len(report.duplicates_b)} in B"
            if report.duplicates_a or report.duplicates_b
            else ""
        ),
        highlight=False,
    )
