"""`crsim data annotate`: dialogue acts and information needs, by rules or an LLM, and their
scores against gold labels."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Coroutine
from itertools import islice
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from crsim.cli._support import atomic_output, parse_args, user_errors
from crsim.errors import CrsimError
from crsim.model.dialogue import Dialogue
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
_ITEMS_HELP = "Item collection (.jsonl/.jsonl.gz) to link titles against; default: the shipped movies."


_LLM_HELP = (
    "YAML file with an `llm:` section (crsim.llm.config.LLMSettings; an experiment config will do) "
    "for annotators that use an LLM (role 'annotator'); default: the local model."
)
_CACHE_HELP = "LLM response cache (SQLite) for annotators that use an LLM; default: {default}."
_LIMIT_HELP = "Only the first N gold dialogues (a sample; LLM annotators are slow)."

# Options several annotate commands share.
ArgsOption = Annotated[list[str] | None, typer.Option("--arg", help=_ARG_HELP)]
ItemsOption = Annotated[Path | None, typer.Option(help=_ITEMS_HELP)]
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
    llm: LLMOption = None,
    cache: OutCacheOption = None,
) -> None:
    """Add dialogue acts to utterances without them; each records its annotator in `acts_source`.

    An utterance whose LLM answer cannot be read gets no acts and `annotations["acts_error"]`."""
    from crsim.data.augment.base import AnnotationReport, annotation_domain
    from crsim.data.augment.llm import ACTS_ERROR
    from crsim.model.io import iter_dialogues

    report = AnnotationReport()
    failed = 0
    with user_errors():
        hub = _annotation_hub(_needs_llm(annotator), annotator, llm, cache, out.parent / LLM_CACHE)
        tool = _build_annotator(annotator, parse_args(arg or []), annotation_domain(items), hub)

        async def count_failures() -> AsyncIterator[Dialogue]:
            nonlocal failed
            async for dialogue in tool.annotate_all(iter_dialogues(file), overwrite=overwrite, report=report):
                failed += sum(ACTS_ERROR in u.annotations for u in dialogue.utterances)
                yield dialogue

        _run_with(hub, _write_all(out, count_failures()))
    unreadable = f" ({failed} unreadable: no acts, see annotations.acts_error)" if hub is not None else ""
    _say(
        f"{report.dialogues} dialogues: {report.annotated} utterances annotated by {tool.name}{unreadable}, "
        f"{report.kept} kept their acts -> {out}"
    )
    _print_llm_use(hub, tool)


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
    limit: LimitOption = None,
    llm: LLMOption = None,
    cache: HereCacheOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the scores as JSON.")] = False,
) -> None:
    """Re-annotate gold dialogues from scratch; intent and slot-value P/R/F1, micro and per intent."""
    from crsim.data.augment.base import annotation_domain
    from crsim.data.augment.evaluate import evaluate_annotator

    started = time.perf_counter()
    with user_errors():
        hub = _annotation_hub(_needs_llm(annotator), annotator, llm, cache, Path(LLM_CACHE))
        tool = _build_annotator(annotator, parse_args(arg or []), annotation_domain(items), hub)
        dialogues = islice(_gold_dialogues(gold, dataset, dataset_arg or []), limit)
        result = _run_with(hub, evaluate_annotator(tool, dialogues))
    seconds = time.perf_counter() - started
    summary = result.summary()
    if hub is not None:
        summary["llm"] = {
            "failed_utterances": getattr(tool, "failed", None),
            "seconds": round(seconds, 1),
            **_llm_use(hub, _roles_of(tool)),
        }
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    console.print(_scores_table(summary))
    if hub is not None:
        _say(
            f"{summary['llm']['failed_utterances']} utterances unreadable (scored as no acts); "
            f"{seconds:.1f} s in all, model load included "
            f"({seconds / result.utterances:.2f} s per scored utterance)"
        )
        _print_llm_use(hub, tool)


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
    llm: LLMOption = None,
    cache: OutCacheOption = None,
) -> None:
    """Extract each dialogue's information need (constraints, requests, targets) from its user acts,
    or with `--extractor llm` from the whole dialogue by an LLM."""
    from crsim.data.augment.base import annotation_domain
    from crsim.model.io import iter_dialogues

    with user_errors():
        domain = annotation_domain(items)
        kind = _extractor_kind(extractor, annotator)
        user_annotator = annotator or "rules"
        uses_llm = kind == "llm" or _needs_llm(user_annotator)
        hub = _annotation_hub(
            uses_llm, kind if kind == "llm" else user_annotator, llm, cache, out.parent / LLM_CACHE
        )
        if kind == "llm":
            from crsim.data.augment.llm_need import LLMNeedReport

            tool: Any = _llm_need_extractor(parse_args(arg or []), domain, hub)
            llm_report = LLMNeedReport()
            stream = tool.annotate_all(iter_dialogues(file), overwrite=overwrite, report=llm_report)
        else:
            from crsim.data.augment.need import NeedExtractor, NeedReport

            report = NeedReport()
            tool = _build_annotator(user_annotator, parse_args(arg or []), domain, hub)
            stream = NeedExtractor(tool).annotate_all(
                iter_dialogues(file), overwrite=overwrite, report=report
            )
        _run_with(hub, _write_all(out, stream))
    if kind == "llm":
        _say(
            f"{llm_report.dialogues} dialogues: {llm_report.extracted} needs extracted by llm, "
            f"{llm_report.failed} unreadable (no need; see metadata.information_need_error), "
            f"{llm_report.kept} kept their need -> {out}"
        )
    else:
        unreadable = f", {getattr(tool, 'failed', '?')} of them unreadable" if hub is not None else ""
        _say(
            f"{report.dialogues} dialogues: {report.extracted} needs extracted "
            f"({report.utterances_annotated} utterances given acts by {user_annotator}{unreadable}), "
            f"{report.kept} kept their need -> {out}"
        )
    _print_llm_use(hub, tool)


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
        typer.Option(help="Item collection to link titles against; default: the reader's, else the movies."),
    ] = None,
    from_text: Annotated[
        bool, typer.Option(help="Strip all acts first (--no-from-text: use the dialogue's own acts).")
    ] = True,
    limit: LimitOption = None,
    llm: LLMOption = None,
    cache: HereCacheOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the scores as JSON.")] = False,
) -> None:
    """Extract needs and compare: constraint, request and target P/R/F1 (micro)."""
    from crsim.data.augment.need import NeedExtractor
    from crsim.data.augment.need_eval import evaluate_needs

    with user_errors():
        kind = _extractor_kind(extractor, annotator)
        if kind == "llm" and not from_text:
            raise CrsimError("--no-from-text: the llm extractor reads the text only; it has no acts to use")
        user_annotator = annotator or "rules"
        domain = _need_domain(gold, dataset, dataset_arg or [], items)
        uses_llm = kind == "llm" or _needs_llm(user_annotator)
        name = kind if kind == "llm" else user_annotator
        hub = _annotation_hub(uses_llm, name, llm, cache, Path(LLM_CACHE))
        dialogues = islice(_gold_dialogues(gold, dataset, dataset_arg or []), limit)
        if kind == "llm":
            from crsim.data.augment.llm_need import evaluate_llm_needs

            tool: Any = _llm_need_extractor(parse_args(arg or []), domain, hub)
            summary = _run_with(hub, evaluate_llm_needs(tool, dialogues)).summary()
        else:
            tool = _build_annotator(user_annotator, parse_args(arg or []), domain, hub)
            summary = _run_with(
                hub, evaluate_needs(NeedExtractor(tool), dialogues, from_text=from_text)
            ).summary()
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    source = "text" if from_text else "own acts"
    table = Table(title=f"needs from {source}: {summary['dialogues']} dialogues", box=box.SIMPLE)
    for column in ("", "dialogues", "gold", "P", "R", "F1"):
        table.add_column(column, justify="left" if not column else "right")
    for part, row in summary["parts"].items():
        scores = (f"{row[k]:.3f}" for k in ("precision", "recall", "f1"))
        table.add_row(part, str(row["dialogues"]), str(row["gold"]), *scores)
    console.print(table)
    if "failed" in summary:
        _say(f"{summary['failed']} dialogues unreadable (scored as an empty need)")
    _print_llm_use(hub, tool)


_EXTRACTORS = ("rules", "llm")


def _say(text: str) -> None:
    """Print plain text (file names and counts; no markup, no highlighting)."""
    console.print(text, highlight=False, markup=False)


def _extractor_kind(extractor: str, annotator: str | None) -> str:
    if extractor not in _EXTRACTORS:
        raise CrsimError(f"--extractor {extractor!r}: expected one of {', '.join(_EXTRACTORS)}")
    if extractor == "llm" and annotator is not None:
        raise CrsimError("--annotator: the llm extractor reads the text and uses no act annotator")
    return extractor


def _needs_llm(annotator: str) -> bool:
    """Whether the act annotator of that name uses an LLM (declares `needs_llm`)."""
    import crsim.data.augment.llm  # noqa: F401  (registers the `llm` annotator)
    from crsim.data.augment.base import annotator_registry

    return bool(getattr(annotator_registry.get(annotator), "needs_llm", False))


def _annotation_hub(
    uses_llm: bool, component: str, config: Path | None, cache: Path | None, default_cache: Path
) -> Any:
    """The LLM hub of an LLM-based component (None for others, which must not get --llm/--cache).

    Settings come from the `llm:` section of `config` (default: the local model); the response
    cache is `cache`, else the file the settings name, else `default_cache`."""
    if not uses_llm:
        given = [name for name, value in (("--llm", config), ("--cache", cache)) if value is not None]
        if given:
            raise CrsimError(f"{given[0]}: {component!r} uses no LLM")
        return None
    from crsim.llm.client import LLMHub
    from crsim.llm.config import LLMSettings, load_llm_settings

    settings = load_llm_settings(config) if config is not None else LLMSettings()
    if cache is not None:
        settings = settings.model_copy(update={"cache": settings.cache.model_copy(update={"path": cache})})
    return LLMHub(settings, cache_path=default_cache)


def _build_annotator(name: str, args: dict[str, Any], domain: Any, hub: Any) -> Any:
    """A registered act annotator; those that use an LLM get the hub (`llms=`)."""
    from crsim.data.augment.base import annotator_registry, build_annotator

    if hub is None:
        return build_annotator(name, args, domain)
    cls = annotator_registry.get(name)
    return cls(annotator_registry.params(name, args, where="annotator"), domain, llms=hub)


def _llm_need_extractor(args: dict[str, Any], domain: Any, hub: Any) -> Any:
    from pydantic import ValidationError

    from crsim.data.augment.llm_need import LLMNeedExtractor
    from crsim.errors import ConfigError

    try:
        params = LLMNeedExtractor.Params.model_validate(args)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(
            f"--arg {'.'.join(str(p) for p in err['loc'])}: {err['msg']} (llm extractor)"
        ) from None
    return LLMNeedExtractor(params, domain, llms=hub)


def _run_with(hub: Any, work: Coroutine[Any, Any, T]) -> T:
    """Run `work`, then close the hub's providers (a local model server, HTTP clients) and cache."""

    async def main() -> T:
        try:
            return await work
        finally:
            if hub is not None:
                await hub.aclose()

    return asyncio.run(main())


def _roles_of(tool: Any) -> list[str]:
    """The model roles an LLM-based component uses (its `llm_roles(params)`)."""
    return list(type(tool).llm_roles(tool.params))


def _llm_use(hub: Any, roles: list[str]) -> dict[str, Any]:
    """Provider calls per role and answers taken from the cache."""
    cache = hub.cache
    return {
        "provider_calls": {role: hub.role(role).calls for role in roles},
        "cache_hits": cache.hits if cache is not None else 0,
        "cache": str(cache.path) if cache is not None else None,
    }


def _print_llm_use(hub: Any, tool: Any) -> None:
    if hub is None:
        return
    use = _llm_use(hub, _roles_of(tool))
    calls = ", ".join(f"{n} provider calls (role {r})" for r, n in use["provider_calls"].items())
    where = f" from the cache {use['cache']}" if use["cache"] else " (no cache)"
    _say(f"LLM: {calls}; {use['cache_hits']} answers{where}")


def _need_domain(gold: Path, dataset: str | None, pairs: list[str], items: Path | None) -> Any:
    """`--items`, else the dataset reader's item collection (the ids its dialogues use), else the movies."""
    from crsim.data.augment.base import annotation_domain

    collection = _reader(dataset, pairs).items(gold) if dataset is not None and items is None else None
    if collection is None:
        return annotation_domain(items)
    from crsim.data.movies import movie_domain_over

    return movie_domain_over(collection)


def _gold_dialogues(gold: Path, dataset: str | None, pairs: list[str]) -> Any:
    from crsim.model.io import iter_dialogues

    if dataset is None:
        if gold.suffix == ".json":
            raise CrsimError(f"{gold}: a .json file needs --dataset NAME to say which reader reads it")
        return iter_dialogues(gold)
    from crsim.data.datasets.base import convert_dataset

    return convert_dataset(_reader(dataset, pairs), gold)


def _reader(dataset: str, pairs: list[str]) -> Any:
    from crsim.data.datasets.base import dataset_registry

    cls = dataset_registry.get(dataset)
    return cls(dataset_registry.params(dataset, parse_args(pairs), where="--dataset-arg"))


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


async def _write_all(out: Path, dialogues: AsyncIterator[Dialogue]) -> None:
    """Write a stream of dialogues to `out` as JSONL; nothing appears at `out` unless all succeed.
    Into a run folder only while holding its lock (a run or evaluation may be writing there)."""
    from crsim.model.run_folder.lock import lock_if_run_folder

    with lock_if_run_folder(out.parent), atomic_output(out) as handle:
        async for dialogue in dialogues:
            handle.write(dialogue.model_dump_json() + "\n")
