"""`crsim validate fidelity`: how far the simulated users of a run are from the human users of a corpus."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from crsim.cli._support import console, user_errors

if TYPE_CHECKING:
    from crsim.studies.fidelity import FidelityReport

app = typer.Typer(add_completion=False)

_AGAINST_HELP = "redial, crsarena_dial, inspired (converted from --data), or a unified dialogues .jsonl file."


def _number(value: float | None, digits: int = 3, ci: tuple[float, float] | None = None) -> str:
    if value is None:
        return "–"
    return f"{value:.{digits}f}" + ("" if ci is None else f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]")


def fidelity_tables(report: FidelityReport) -> list[Table]:
    """One table per simulator: each measure on the simulated users, the human corpus and its two
    halves, with the distances simulated-vs-human and half-vs-half (the control)."""
    a, b = report.half_dialogues
    tables = []
    for sim in report.simulators:
        table = Table(
            title=f"{sim.simulator} ({sim.dialogues} dialogues) vs {report.against} "
            f"({report.human_dialogues} dialogues, halves {a}/{b})"
        )
        for column in ("measure", "simulated", "human", "half A", "half B", "JSD sim-human", "JSD A-B"):
            table.add_column(column, justify="left" if column == "measure" else "right")
        for row in sim.rows:
            table.add_row(
                row.measure,
                _number(row.simulated, ci=row.simulated_ci),
                _number(row.human, ci=row.human_ci),
                _number(row.half_a),
                _number(row.half_b),
                _number(row.distance, ci=row.distance_ci),
                _number(row.control_distance, ci=row.control_distance_ci),
            )
        table.add_section()
        table.add_row(
            "summary distance",
            "",
            "",
            "",
            "",
            _number(sim.summary_distance, ci=sim.summary_ci),
            _number(sim.control_summary_distance, ci=sim.control_summary_ci),
        )
        table.add_row(
            "classifier AUC",
            "",
            "",
            "",
            "",
            _number(sim.auc, ci=sim.auc_ci),
            _number(sim.control_auc, ci=sim.control_auc_ci),
        )
        if report.intervals is not None:
            table.caption = (
                f"[95% CI]: {report.intervals.resamples} bootstrap replicates over dialogues "
                f"(percentile; AUC: out-of-fold scores resampled by dialogue), seed {report.intervals.seed}"
            )
        tables.append(table)
    return tables


@app.command("fidelity")
def fidelity_command(
    run: Annotated[Path, typer.Argument(help="A run folder written by `crsim run`.")],
    against: Annotated[str, typer.Option("--against", help=_AGAINST_HELP)],
    data: Annotated[
        Path | None,
        typer.Option(help="The corpus's files as published; default datasets/NAME (`crsim data download`)."),
    ] = None,
    max_human: Annotated[
        int, typer.Option(min=4, help="Human dialogues drawn from the corpus at most.")
    ] = 400,
    max_simulated: Annotated[
        int, typer.Option(min=1, help="Dialogues per simulator drawn from the run at most.")
    ] = 400,
    seed: Annotated[
        int, typer.Option(help="Seed of the samples, the halves, the folds and the bootstrap.")
    ] = 0,
    resamples: Annotated[
        int,
        typer.Option(min=0, help="Bootstrap replicates over dialogues per interval (0: no intervals)."),
    ] = 200,  # crsim.studies.fidelity.RESAMPLES (imported when the command runs, not for --help)
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the report as JSON instead of a table.")
    ] = False,
) -> None:
    """Compare a run's simulated users with the human users of a corpus: utterance length, questions,
    acceptance and rejection per recommendation, dialogue acts, distinct-1/2, turns, and a human-vs-
    simulated classifier's AUC, each beside a human-vs-human control (docs/fidelity.md). Writes
    fidelity_<corpus>.json into the run folder."""
    with user_errors():
        report, out = _measure_and_write(
            run,
            against,
            data,
            seed=seed,
            max_human=max_human,
            max_simulated=max_simulated,
            resamples=resamples,
        )
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
        return
    for table in fidelity_tables(report):
        console.print(table)
    if report.left_out:
        console.print(
            f"{report.left_out} run dialogue(s) left out: the simulator or the infrastructure broke them",
            highlight=False,
            soft_wrap=True,
        )
    console.print(f"wrote {escape(str(out))}", highlight=False, soft_wrap=True)


def _measure_and_write(
    run: Path,
    against: str,
    data: Path | None,
    *,
    seed: int,
    max_human: int,
    max_simulated: int,
    resamples: int,
) -> tuple[FidelityReport, Path]:
    """The fidelity report of a run against a corpus, written into the run folder (under its lock:
    not while a run or another study writes it); the report and the file it went to."""
    from crsim.core.atomic_files import atomic_output
    from crsim.eval.annotators.base import annotation_domain, build_annotator
    from crsim.model.run_folder import files, open_run, run_folder_lock
    from crsim.studies.fidelity import fidelity, read_corpus

    folder = open_run(run)
    with run_folder_lock(folder.path):
        label, corpus = read_corpus(against, data)
        annotator = build_annotator("rules", {}, annotation_domain(domain=folder.domain))
        report = fidelity(
            folder.name,
            folder.dialogues(),
            label,
            corpus,
            annotator,
            seed=seed,
            max_human=max_human,
            max_simulated=max_simulated,
            resamples=resamples,
        )
        out = folder.path / files.fidelity_file(label)
        with atomic_output(out) as handle:
            handle.write(report.model_dump_json(indent=2) + "\n")
    return report, out
