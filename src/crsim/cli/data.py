"""`crsim data`: convert published datasets, describe them, download them, annotate dialogue acts."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from crsim.cli._support import atomic_output, errors, parse_args, user_errors
from crsim.cli.annotate import annotate_app
from crsim.core.errors import CrsimError

data_app = typer.Typer(
    add_completion=False, no_args_is_help=True, pretty_exceptions_show_locals=False, help=__doc__
)
data_app.add_typer(annotate_app, name="annotate")
console = Console(soft_wrap=True)

_ARG_HELP = "A component argument as KEY=VALUE (repeatable)."
_ITEMS_HELP = "Item collection (.jsonl/.jsonl.gz) to link titles against; default: the shipped movies."


@data_app.command()
def convert(
    name: Annotated[str, typer.Argument(help="A registered dataset reader, e.g. redial.")],
    src: Annotated[Path, typer.Argument(help="The dataset's file or folder, as published.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Dialogues JSONL to write.")],
    skip_invalid: Annotated[
        bool, typer.Option(help="Skip records that do not convert; report them and their count.")
    ] = False,
    items: Annotated[
        Path | None, typer.Option(help="Also write the dataset's item collection here (.jsonl[.gz]).")
    ] = None,
    arg: Annotated[list[str] | None, typer.Option("--arg", help=_ARG_HELP)] = None,
) -> None:
    """Convert a published dataset into crsim dialogues (streamed; the output appears only when complete)."""
    from crsim.datasets.base import ConversionReport, build_reader, convert_dataset
    from crsim.runner.progress import ProgressReport

    started = time.perf_counter()
    report = ConversionReport()
    progress = ProgressReport()
    with user_errors():
        reader = build_reader(name, parse_args(arg or []), where="--arg")
        with atomic_output(out) as handle, progress.phase("converting") as meter:
            for dialogue in convert_dataset(reader, src, skip_invalid=skip_invalid, report=report):
                handle.write(dialogue.model_dump_json() + "\n")
                meter.advance()
                meter.errors = report.skipped  # records skipped so far (--skip-invalid)
        collection = reader.items(src) if items is not None else None
        if items is not None:
            if collection is None:
                raise CrsimError(f"--items: dataset {name!r} has no item collection")
            _write_items(collection, items)
    progress.print_summary()
    for message in report.errors:
        errors.print(f"[yellow]skipped:[/yellow] {escape(message)}", highlight=False, soft_wrap=True)
    if report.skipped > len(report.errors):
        errors.print(f"... and {report.skipped - len(report.errors)} more", highlight=False, markup=False)
    for renaming in report.renamings:
        errors.print(f"renamed (duplicate id): {renaming}", highlight=False, markup=False, soft_wrap=True)
    if report.renamed > len(report.renamings):
        errors.print(f"... and {report.renamed - len(report.renamings)} more", highlight=False, markup=False)
    for kind, count in report.warnings.items():
        first = report.warning_examples.get(kind, "")
        errors.print(
            f"[yellow]warning:[/yellow] {count} {escape(kind)} (first: {escape(first)})",
            highlight=False,
            soft_wrap=True,
        )
    note = f", {len(collection)} items -> {items}" if collection is not None else ""
    if report.left_out:
        note += f", {report.left_out} left out as already read from an earlier file"
    if report.replaced_code_points:
        note += f", {report.replaced_code_points} unwritable code points replaced with U+FFFD"
    console.print(
        f"{report.written} dialogues written to {out}, {report.skipped} skipped, "
        f"{report.renamed} renamed (duplicate ids){note} "
        f"({time.perf_counter() - started:.1f}s)",
        highlight=False,
        markup=False,
    )


def _write_items(collection: Any, path: Path) -> None:
    """Write an item collection through a temp file with the same suffix (so .gz is compressed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix="".join(path.suffixes), dir=path.parent)
    os.close(fd)
    try:
        collection.to_jsonl(temp)
        os.replace(temp, path)
    finally:
        Path(temp).unlink(missing_ok=True)


@data_app.command()
def stats(
    file: Annotated[Path, typer.Argument(help="A dialogues JSONL file (e.g. written by `data convert`).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Dialogues, utterances, words and acts per utterance by role, distinct items mentioned."""
    from crsim.datasets.stats import file_stats

    with user_errors():
        summary = file_stats(file).summary()
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    table = Table(title=str(file), show_header=True)
    for column in ("", "utterances", "words / utt.", "acts / utt.", "with acts"):
        table.add_column(column, justify="left" if not column else "right")
    for role, row in summary["by_role"].items():
        table.add_row(role, *(str(row[k]) for k in ("utterances", "words_per_utterance")), *_acts(row))
    table.add_row(
        "all",
        str(summary["utterances"]),
        str(summary["words_per_utterance"]),
        str(summary["acts_per_utterance"]),
        "",
    )
    console.print(table)
    console.print(
        f"{summary['dialogues']} dialogues ({summary['empty_dialogues']} empty), "
        f"{summary['utterances_per_dialogue']} utterances per dialogue; "
        f"items mentioned: {summary['items_mentioned']} (recommended: {summary['items_recommended']})",
        highlight=False,
        markup=False,
    )


def _acts(row: dict[str, Any]) -> tuple[str, str]:
    return str(row["acts_per_utterance"]), str(row["utterances_with_acts"])


@data_app.command()
def download(
    name: Annotated[str, typer.Argument(help="Dataset to fetch: redial, inspired, iard, usersimcrs, ...")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder; files go to OUT/NAME/.")] = Path(
        "datasets"
    ),
    base_url: Annotated[
        str | None,
        typer.Option(
            help="Mirror laid out as BASE/NAME/FILE instead of the official locations.",
            envvar="CRSIM_DOWNLOAD_BASE",
        ),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the server.")] = 60.0,
) -> None:
    """Fetch a dataset's official full release, verified before it is put in place."""
    from crsim.datasets.download import CATALOG, download_dataset
    from crsim.runner.progress import ProgressReport

    progress = ProgressReport()
    with user_errors(), progress.phase("bytes") as meter:
        written = download_dataset(name, out, base_url=base_url, timeout=timeout, progress=meter)
    progress.print_summary()
    source = CATALOG[name]
    for path in written:
        console.print(f"{path} ({path.stat().st_size:,} bytes)", highlight=False, markup=False)
    console.print(f"{source.name}: {source.licence}; see {source.homepage}", highlight=False, markup=False)
