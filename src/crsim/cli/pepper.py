"""`crsim pepper`: PEPPER's analyses of a run (PC curves, selected vs residual) and the preference
representation accuracy study (docs/pepper.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from crsim.cli._support import user_errors

pepper_app = typer.Typer(
    add_completion=False, no_args_is_help=True, pretty_exceptions_show_locals=False, help=__doc__
)
console = Console(soft_wrap=True)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


@pepper_app.command("curves")
def curves_command(
    run: Annotated[
        Path, typer.Argument(help="Run folder written by `crsim run` (or a dialogue JSONL file).")
    ],
    k: Annotated[int, typer.Option(min=1, help="Cut-off K of the plotted PC_t@K curve.")] = 10,
    split_k: Annotated[int, typer.Option("--split-k", min=1, help="K of the selected/residual table.")] = 50,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Folder for pepper_curves.json and the PNG plots (default: the run folder)."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the curves and table as JSON.")] = False,
) -> None:
    """PC_t@K and Recall@(t,K) per turn for K in 5, 10, 20, 50 per CRS × simulator, a PC_t plot and
    Recall plot (PNG), and PC on the selected and residual targets with the gap Δ = PC_res − PC_sel."""
    from crsim.studies.pepper.curves import curves_of_run

    with user_errors():
        computed = curves_of_run(run, k, split_k, out)
    curves, rows, ks, result = computed.curves, computed.split, computed.ks, computed.record
    if as_json:
        typer.echo(json.dumps(result, indent=1))
        return
    horizon = len(curves[0].curve.mean)
    table = Table(title=f"PC_T@K at T = {horizon} and Recall@(t,K) averaged over turns 1..{horizon}")
    for column in ("CRS", "simulator", "measure", *(f"K={x}" for x in ks)):
        table.add_column(column, justify="right" if column.startswith("K=") else "left")
    values: dict[tuple[str, str, str], dict[int, float | None]] = {}
    for c in curves:
        name, k_text = c.curve.metric.rsplit("@", 1)
        cutoff = int(k_text.strip("()").split(",")[-1])
        defined = [v for v in c.curve.mean if v is not None]
        if name == "PC":
            value = c.curve.mean[-1]
            measure = f"PC_{horizon}"
        else:
            value = sum(defined) / len(defined) if defined else None
            measure = "Recall avg"
        values.setdefault((c.crs_id, c.simulator_id, measure), {})[cutoff] = value
    for (crs_id, simulator_id, measure), by_k in values.items():
        table.add_row(crs_id, simulator_id, measure, *(_number(by_k.get(x)) for x in ks))
    console.print(table)
    split = Table(title=f"Selected vs residual targets: PC@{split_k} at the last turn")
    for column in ("CRS", "simulator", "n", "PC_sel", "PC_res", "Δ"):
        split.add_column(column, justify="left" if column in ("CRS", "simulator") else "right")
    for r in rows:
        split.add_row(
            r.crs_id, r.simulator_id, str(r.n), _number(r.selected), _number(r.residual), _number(r.gap)
        )
    console.print(split)
    console.print(f"wrote {computed.json_path}, {computed.pc_png}, {computed.recall_png}", highlight=False)


@pepper_app.command("pref-accuracy")
def pref_accuracy_command(
    config: Annotated[
        Path | None,
        typer.Argument(
            help="Experiment config: its `users` (a PEPPER source) and `llm` (role 'user') sections."
        ),
    ] = None,
    users: Annotated[int | None, typer.Option(min=1, help="Number of users (default: the config's).")] = None,
    pairs: Annotated[int, typer.Option(min=1, help="Target pairs with different ratings per user.")] = 5,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="JSON file for the scores and every choice.")
    ] = None,
    cache: Annotated[
        Path | None, typer.Option(help="LLM response cache (SQLite); default: none, or beside --out.")
    ] = None,
    both_orders: Annotated[
        bool, typer.Option("--both-orders", help="Ask each pair in both orders; count only consistent picks.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Preference representation accuracy (PEPPER Table 2): for pairs of a user's targets with
    different ratings, which one the LLM picks given general preferences, raw feedback or binary
    likes/dislikes; accuracy against the true ratings."""
    from crsim.runner.config import load_config
    from crsim.runner.progress import ProgressReport
    from crsim.studies.pepper.accuracy_run import preference_accuracy_study

    progress = ProgressReport(enabled=not as_json)
    with user_errors():
        experiment = load_config(config, {"users": users})
        cache_path = cache or (out.with_name(out.stem + ".llm_cache.sqlite") if out else None)
        with progress.phase("users") as meter:
            report = preference_accuracy_study(
                experiment, pairs, both_orders=both_orders, cache_path=cache_path, out=out, progress=meter
            )
    progress.print_summary()
    if as_json:
        typer.echo(report.model_dump_json(indent=1))
        return
    table = Table(title=f"Preference representation accuracy ({report.users} users)")
    for column in ("representation", "pairs", "answered", "correct", "accuracy", "picked first"):
        table.add_column(column, justify="left" if column == "representation" else "right")
    for s in report.scores:
        table.add_row(
            s.representation,
            str(s.pairs),
            str(s.answered),
            str(s.correct),
            _number(s.accuracy),
            _number(s.picked_first),
        )
    console.print(table)
    if out is not None:
        console.print(f"wrote {out}", highlight=False)
