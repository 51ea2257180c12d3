"""`crsim gcdf1`: score SGD-style dialogue files with I-/R-GCDF1 and query the behaviour log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from crsim.cli._support import errors as error_console
from crsim.cli._support import user_errors
from crsim.core.errors import ConfigError, CrsimError

if TYPE_CHECKING:
    from crsim.studies.gcdf1.behaviour import BehaviourFile, Event

gcdf1_app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    help="GCDF1 (I-GCDF1, R-GCDF1): how well a simulated user states its goal's constraints and requests.",
)
console = Console(soft_wrap=True)

_COLUMNS = (
    ("I-F1", "igcd_f1"),
    ("I-P", "igcd_precision"),
    ("I-R", "igcd_recall"),
    ("R-F1", "rgcd_f1"),
    ("R-P", "rgcd_precision"),
    ("R-R", "rcgd_recall"),
)


def _means_table(means: dict[str, Any], n_dialogues: int) -> Table:
    table = Table(box=box.SIMPLE_HEAD, title=f"GCDF1 corpus means ({n_dialogues} dialogues)")
    table.add_column("domain")
    for label, _ in _COLUMNS:
        table.add_column(label, justify="right")
    table.add_column("n (I/R)", justify="right")
    domains = sorted(
        {d for by_domain in means.values() for d in by_domain}, key=lambda d: (d == "combined", d)
    )
    for domain in domains:
        cells = []
        for _, key in _COLUMNS:
            mean = means[key].get(domain)
            cells.append("NA" if mean is None else f"{mean.value:.4f}")
        n_inform = means["igcd_f1"].get(domain)
        n_request = means["rgcd_f1"].get(domain)
        counts = f"{n_inform.n if n_inform else 0}/{n_request.n if n_request else 0}"
        table.add_row(domain, *cells, counts)
    return table


@gcdf1_app.command("score")
def score(
    files: Annotated[list[Path], typer.Argument(help="SGD-style dialogue files (.json or .json.gz).")],
    canonical_map: Annotated[
        Path | None,
        typer.Option("--canonical-map", help="Canonical value map (multiwoz21_canonical_map.json)."),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="Evaluator YAML (thresholds, switches); default: built-in."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write per-dialogue scores here (JSON).")
    ] = None,
    behaviour_out: Annotated[
        Path | None,
        typer.Option("--behaviour-out", help="Behaviour log path (default: <output stem>.behaviour.json)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the corpus means as JSON.")] = False,
) -> None:
    """Score dialogues; print corpus means, write per-dialogue scores and the behaviour log."""
    from crsim.studies.gcdf1.canonical import CanonicalMap
    from crsim.studies.gcdf1.config import Gcdf1Config, load_config
    from crsim.studies.gcdf1.corpus import behaviour_path, score_files, write_json

    with user_errors():
        settings = load_config(config) if config else Gcdf1Config()
        matching = settings.igcd_f1.value_matching
        if matching.use_fuzzy_match and matching.use_canonical_map and canonical_map is None:
            raise ConfigError(
                "the config matches values against a canonical map (igcd_f1.value_matching.use_canonical_map)"
                " but no --canonical-map was given; pass one or set use_canonical_map: false"
            )
        cmap = CanonicalMap.load(canonical_map) if canonical_map and matching.use_canonical_map else None
        result = score_files(files, settings, cmap)
        for line in result.problems():
            error_console.print(f"[yellow]skipped:[/yellow] {escape(line)}", highlight=False, soft_wrap=True)
        if not result.scores:
            raise CrsimError("no dialogue could be scored")
        if output is not None:
            write_json(result.per_dialogue(), output)
        log_path = behaviour_out or (behaviour_path(output) if output is not None else None)
        if log_path is not None:
            write_json(result.behaviour().to_json(), log_path)
    means = result.means()
    if as_json:
        summary = {
            "dialogues": len(result.scores),
            "skipped": len(result.issues) + len(result.failures),
            "means": {k: {d: {"mean": m.value, "n": m.n} for d, m in v.items()} for k, v in means.items()},
        }
        console.print_json(json.dumps(summary))
        return
    console.print(_means_table(means, len(result.scores)))
    if output is not None:
        console.print(f"per-dialogue scores: {output}", highlight=False)
    if log_path is not None:
        console.print(f"behaviour log: {log_path}", highlight=False)


def _log_file(path: Path) -> Path:
    """The behaviour log written beside a per-dialogue scores file, else `path` itself."""
    from crsim.studies.gcdf1.corpus import behaviour_path

    beside = behaviour_path(path)
    return beside if beside.is_file() else path


@gcdf1_app.command("query")
def query(
    out: Annotated[
        Path | None, typer.Argument(help="Behaviour log, or the per-dialogue scores it was written beside.")
    ] = None,
    behaviour: Annotated[
        str | None, typer.Option("--behaviour", "-b", help="Behaviour name (see --list).")
    ] = None,
    domain: Annotated[str | None, typer.Option("--domain", "-d", help="Only events in this domain.")] = None,
    list_names: Annotated[
        bool, typer.Option("--list", help="List the behaviour names (and counts in OUT).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List the dialogues that show a behaviour, with how often; `--list` shows the behaviour names."""
    from crsim.studies.gcdf1.behaviour import Behaviour, BehaviourFile

    with user_errors():
        log = BehaviourFile.read(_log_file(out)) if out is not None else None
        if list_names:
            _print_behaviour_names(log, as_json)
            return
        if log is None or behaviour is None:
            raise CrsimError("give the behaviour log (OUT) and --behaviour NAME, or --list")
        if behaviour not in {b.value for b in Behaviour}:
            raise CrsimError(f"unknown behaviour {behaviour!r}; `crsim gcdf1 query --list` shows the names")
    found = log.query(behaviour, domain)
    if as_json:
        _print_found_json(log, behaviour, domain, found)
    else:
        _print_found_table(log, behaviour, domain, found)


def _print_behaviour_names(log: BehaviourFile | None, as_json: bool) -> None:
    """Every behaviour with its metric and description, and its count in `log` when there is one."""
    from crsim.studies.gcdf1.behaviour import DESCRIPTIONS, Behaviour

    totals = log.totals() if log is not None else None
    rows = [
        {
            "behaviour": b.value,
            "metric": DESCRIPTIONS[b][0],
            "description": DESCRIPTIONS[b][1],
            **({"events": totals[b.value]} if totals is not None else {}),
        }
        for b in Behaviour
    ]
    if as_json:
        console.print_json(json.dumps(rows))
        return
    table = Table(box=box.SIMPLE_HEAD)
    for column in rows[0]:
        table.add_column(column, justify="right" if column == "events" else "left")
    for row in rows:
        table.add_row(*(str(v) for v in row.values()))
    console.print(table)


def _events(log: BehaviourFile, dialogue_id: str, behaviour: str, domain: str | None) -> list[Event]:
    """A dialogue's events of one behaviour (in one domain when given)."""
    return [
        e
        for e in log.dialogues[dialogue_id]
        if e.behaviour == behaviour and (domain is None or e.domain == domain)
    ]


def _print_found_json(
    log: BehaviourFile, behaviour: str, domain: str | None, found: list[tuple[str, int]]
) -> None:
    """The dialogues that show a behaviour, with their counts and events, as JSON."""
    dialogues = [
        {"dialogue_id": d, "count": n, "events": [e.to_json() for e in _events(log, d, behaviour, domain)]}
        for d, n in found
    ]
    console.print_json(json.dumps({"behaviour": behaviour, "domain": domain, "dialogues": dialogues}))


def _print_found_table(
    log: BehaviourFile, behaviour: str, domain: str | None, found: list[tuple[str, int]]
) -> None:
    """The dialogues that show a behaviour, with their counts and the items involved, as a table."""
    where = f" in {domain}" if domain else ""
    table = Table(
        box=box.SIMPLE_HEAD, title=f"{behaviour}{where}: {len(found)} of {len(log.dialogues)} dialogues"
    )
    for column in ("dialogue", "count", "items"):
        table.add_column(column, justify="right" if column == "count" else "left")
    for dialogue_id, count in found:
        items = [e.item or e.domain or "" for e in _events(log, dialogue_id, behaviour, domain)]
        shown = ", ".join(dict.fromkeys(items))
        table.add_row(dialogue_id, str(count), shown if len(shown) < 100 else shown[:97] + "...")
    console.print(table)
