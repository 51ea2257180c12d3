"""`crsim data annotate`: dialogue acts and information needs, by rules or an LLM, and their
scores against gold labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from crsim.cli._support import parse_args, user_errors
from crsim.model.run_folder.files import LLM_CACHE

annotate_app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    help="Annotate dialogues.",
)
console = Console(soft_wrap=True)
T = TypeVar("T")

_ARG_HELP = "A component argument as KEY=VALUE (repeatable)."
_ITEMS_HELP = "Item collection (.jsonl/.jsonl.gz) to link titles against; default: the domain's items."


_LLM_HELP = (
    "YAML file with an `llm:` section (crsim.llm.config.LLMSettings; an experiment config will do) "
    "for annotators that use an LLM (role 'annotator'); default: the local model."
)
_CACHE_HELP = "LLM response cache (SQLite) for annotators that use an LLM; default: {default}."
_LIMIT_HELP = "Only the first N gold dialogues (a sample; LLM annotators are slow)."

# Options several annotate commands share.
ArgsOption = Annotated[list[str] | None, typer.Option("--arg", help=_ARG_HELP)]
ItemsOption = Annotated[Path | None, typer.Option(help=_ITEMS_HELP)]
DomainOption = Annotated[
    str,
    typer.Option(
        "--domain",
        help="Domain whose slots and vocabulary annotate: a shipped one (movies, restaurants, hotels), an "
        "installed one, or a domain file's path; --items replaces its items.",
    ),
]
LimitOption = Annotated[int | None, typer.Option(min=1, help=_LIMIT_HELP)]
LLMOption = Annotated[Path | None, typer.Option("--llm", help=_LLM_HELP)]
OutCacheOption = Annotated[
    Path | None, typer.Option(help=_CACHE_HELP.format(default=f"{LLM_CACHE} next to OUT"))
]
HereCacheOption = Annotated[
    Path | None, typer.Option(help=_CACHE_HELP.format(default=f"{LLM_CACHE} in the current folder"))
]
DatasetArgOption = Annotated[
    list[str] | None, typer.Option("--dataset-arg", help="Reader argument KEY=VALUE.")
]


@annotate_app.command("acts")
def annotate_acts(
    file: Annotated[Path, typer.Argument(help="A dialogues JSONL file.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Annotated dialogues JSONL to write.")],
    annotator: Annotated[str, typer.Option(help="A registered act annotator (rules, llm).")] = "rules",
    arg: ArgsOption = None,
    overwrite: Annotated[bool, typer.Option(help="Re-annotate utterances that already have acts.")] = False,
    items: ItemsOption = None,
    domain: DomainOption = "movies",
    llm: LLMOption = None,
    cache: OutCacheOption = None,
) -> None:
    """Add dialogue acts to utterances without them; each records its annotator in `acts_source`.

    An utterance whose LLM answer cannot be read gets no acts and `annotations["acts_error"]`."""
    from crsim.eval.annotators.jobs import LLMSource, annotate_acts
    from crsim.runner.progress import ProgressReport

    progress = ProgressReport()
    with user_errors(), progress.phase("annotating", _total(file)) as meter:
        result = annotate_acts(
            file,
            out,
            annotator=annotator,
            args=parse_args(arg or []),
            overwrite=overwrite,
            items=items,
            domain=domain,
            llm=LLMSource(llm, cache),
            progress=meter,
        )
    progress.print_summary()
    report = result.report
    unreadable = f" ({result.failed} unreadable: no acts, see annotations.acts_error)" if result.llm else ""
    _say(
        f"{report.dialogues} dialogues: {report.annotated} utterances annotated by {result.annotator}"
        f"{unreadable}, {report.kept} kept their acts -> {out}"
    )
    _print_llm_use(result.llm)


@annotate_app.command("eval")
def annotate_eval(
    gold: Annotated[Path, typer.Argument(help="Dialogues with gold acts: crsim JSONL, or a dataset's file.")],
    dataset: Annotated[
        str | None, typer.Option(help="Read GOLD with this dataset reader (e.g. the IARD reader).")
    ] = None,
    dataset_arg: DatasetArgOption = None,
    annotator: Annotated[str, typer.Option(help="A registered act annotator (rules, llm).")] = "rules",
    arg: ArgsOption = None,
    items: ItemsOption = None,
    domain: DomainOption = "movies",
    limit: LimitOption = None,
    llm: LLMOption = None,
    cache: HereCacheOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the scores as JSON.")] = False,
) -> None:
    """Re-annotate gold dialogues from scratch; intent and slot-value P/R/F1, micro and per intent."""
    from crsim.eval.annotators.jobs import LLMSource, evaluate_acts
    from crsim.runner.progress import ProgressReport

    progress = ProgressReport(enabled=not as_json)
    with user_errors(), progress.phase("annotating", _total(gold, dataset, limit)) as meter:
        summary = evaluate_acts(
            gold,
            dataset=dataset,
            dataset_args=parse_args(dataset_arg or []),
            annotator=annotator,
            args=parse_args(arg or []),
            items=items,
            domain=domain,
            limit=limit,
            llm=LLMSource(llm, cache),
            progress=meter,
        )
    progress.print_summary()
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    console.print(_scores_table(summary))
    if "llm" in summary:
        use, seconds = summary["llm"], summary["llm"]["seconds"]
        _say(
            f"{use['failed_utterances']} utterances unreadable (scored as no acts); "
            f"{seconds:.1f} s in all, model load included "
            f"({seconds / summary['utterances']:.2f} s per scored utterance)"
        )
        _print_llm_use(use)


@annotate_app.command("need")
def annotate_need(
    file: Annotated[Path, typer.Argument(help="A dialogues JSONL file.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Dialogues JSONL with information needs.")],
    extractor: Annotated[
        str, typer.Option(help="rules: read off the user's acts; llm: an LLM reads the whole dialogue.")
    ] = "rules",
    annotator: Annotated[
        str | None,
        typer.Option(help="--extractor rules: act annotator for user utterances without acts (rules, llm)."),
    ] = None,
    arg: Annotated[
        list[str] | None, typer.Option("--arg", help="An argument of the act annotator or the llm extractor.")
    ] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an information need a dialogue has.")] = False,
    items: ItemsOption = None,
    domain: DomainOption = "movies",
    llm: LLMOption = None,
    cache: OutCacheOption = None,
) -> None:
    """Extract each dialogue's information need (constraints, requests, targets) from its user acts,
    or with `--extractor llm` from the whole dialogue by an LLM."""
    from crsim.eval.annotators.jobs import LLMSource, extract_needs
    from crsim.runner.progress import ProgressReport

    progress = ProgressReport()
    with user_errors(), progress.phase("extracting", _total(file)) as meter:
        result = extract_needs(
            file,
            out,
            extractor=extractor,
            annotator=annotator,
            args=parse_args(arg or []),
            overwrite=overwrite,
            items=items,
            domain=domain,
            llm=LLMSource(llm, cache),
            progress=meter,
        )
    progress.print_summary()
    report = result.report
    if result.extractor == "llm":
        _say(
            f"{report.dialogues} dialogues: {report.extracted} needs extracted by llm, "
            f"{report.failed} unreadable (no need; see metadata.information_need_error), "
            f"{report.kept} kept their need -> {out}"
        )
    else:
        failed = "?" if result.failed is None else result.failed
        unreadable = f", {failed} of them unreadable" if result.llm else ""
        _say(
            f"{report.dialogues} dialogues: {report.extracted} needs extracted "
            f"({report.utterances_annotated} utterances given acts by {result.user_annotator}{unreadable}), "
            f"{report.kept} kept their need -> {out}"
        )
    _print_llm_use(result.llm)


@annotate_app.command("need-eval")
def annotate_need_eval(
    gold: Annotated[Path, typer.Argument(help="Dialogues with gold needs or accepted-item labels.")],
    dataset: Annotated[str | None, typer.Option(help="Read GOLD with this dataset reader.")] = None,
    dataset_arg: DatasetArgOption = None,
    extractor: Annotated[
        str, typer.Option(help="rules: read off the user's acts; llm: an LLM reads the whole dialogue.")
    ] = "rules",
    annotator: Annotated[
        str | None, typer.Option(help="--extractor rules: act annotator (rules, llm).")
    ] = None,
    arg: Annotated[
        list[str] | None, typer.Option("--arg", help="An argument of the act annotator or the llm extractor.")
    ] = None,
    items: Annotated[
        Path | None,
        typer.Option(
            help="Item collection to link titles against; default: the reader's, else the domain's."
        ),
    ] = None,
    domain: DomainOption = "movies",
    from_text: Annotated[
        bool, typer.Option(help="Strip all acts first (--no-from-text: use the dialogue's own acts).")
    ] = True,
    limit: LimitOption = None,
    llm: LLMOption = None,
    cache: HereCacheOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the scores as JSON.")] = False,
) -> None:
    """Extract needs and compare: constraint, request and target P/R/F1 (micro)."""
    from crsim.eval.annotators.jobs import LLMSource, evaluate_need_extraction
    from crsim.runner.progress import ProgressReport

    progress = ProgressReport(enabled=not as_json)
    with user_errors(), progress.phase("extracting", _total(gold, dataset, limit)) as meter:
        summary, use = evaluate_need_extraction(
            gold,
            dataset=dataset,
            dataset_args=parse_args(dataset_arg or []),
            extractor=extractor,
            annotator=annotator,
            args=parse_args(arg or []),
            items=items,
            domain=domain,
            from_text=from_text,
            limit=limit,
            llm=LLMSource(llm, cache),
            progress=meter,
        )
    progress.print_summary()
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    console.print(_need_scores_table(summary, from_text))
    if "failed" in summary:
        _say(f"{summary['failed']} dialogues unreadable (scored as an empty need)")
    _print_llm_use(use)


def _need_scores_table(summary: dict[str, Any], from_text: bool) -> Table:
    """Precision, recall and F1 of the extracted needs, one row per part (constraints, requests, target)."""
    source = "text" if from_text else "own acts"
    table = Table(title=f"needs from {source}: {summary['dialogues']} dialogues", box=box.SIMPLE)
    for column in ("", "dialogues", "gold", "P", "R", "F1"):
        table.add_column(column, justify="left" if not column else "right")
    for part, row in summary["parts"].items():
        scores = (f"{row[k]:.3f}" for k in ("precision", "recall", "f1"))
        table.add_row(part, str(row["dialogues"]), str(row["gold"]), *scores)
    return table


def _total(file: Path, dataset: str | None = None, limit: int | None = None) -> int | None:
    """The dialogues a job will read, for its progress: the lines of a crsim JSONL file (at most
    `limit`); unknown (None) for a dataset's own files or a file that is not there (the job says why)."""
    from crsim.model.run_folder.folder import count_lines

    if dataset is not None or not file.is_file():
        return None
    lines = count_lines(file)
    return min(lines, limit) if limit is not None else lines


def _say(text: str) -> None:
    """Print plain text (file names and counts; no markup, no highlighting)."""
    console.print(text, highlight=False, markup=False)


def _print_llm_use(use: dict[str, Any] | None) -> None:
    if use is None:
        return
    calls = ", ".join(f"{n} provider calls (role {r})" for r, n in use["provider_calls"].items())
    where = f" from the cache {use['cache']}" if use["cache"] else " (no cache)"
    _say(f"LLM: {calls}; {use['cache_hits']} answers{where}")


def _scores_table(summary: dict[str, Any]) -> Table:
    """Rows: micro, per role, per intent; columns: intent P/R/F1 then slot-value P/R/F1."""
    table = Table(
        title=f"annotator {summary['annotator']}: {summary['dialogues']} dialogues, "
        f"{summary['utterances']} utterances with gold acts",
        caption="intent: gold, P, R, F1 | slot-value: P, R, F1, gold",
        box=box.SIMPLE,
    )
    table.add_column("", no_wrap=True, min_width=22)
    for column in ("gold", "P", "R", "F1", "sv P", "sv R", "sv F1", "sv gold"):
        table.add_column(column, justify="right")
    rows = [("micro", summary["micro"])]
    rows += [(f"role {role}", s) for role, s in summary["by_role"].items()]
    rows += list(summary["per_intent"].items())
    for label, scores in rows:
        intent, slot = scores["intent"], scores["slot_value"]
        table.add_row(
            label,
            str(intent["gold"]),
            *(f"{intent[k]:.3f}" for k in ("precision", "recall", "f1")),
            *(f"{slot[k]:.3f}" for k in ("precision", "recall", "f1")),
            str(slot["gold"]),
        )
    return table
