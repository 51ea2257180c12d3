"""Annotation jobs over files: what `crsim data annotate` runs, callable from Python too.

`annotate_acts` and `extract_needs` write annotated copies of a dialogue file; `evaluate_acts` and
`evaluate_need_extraction` re-annotate gold dialogues (crsim JSONL, or a dataset's own files through
its reader) and score them. Annotators that use an LLM get a hub built from an `llm:` settings file
(default: the local model) with a response cache; the others refuse LLM settings. Each job returns
its counts and, for LLM components, the provider calls per role and the cache hits.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Coroutine, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar

from crsim.core.atomic_files import atomic_output
from crsim.core.components import BuildContext
from crsim.core.errors import ConfigError, CrsimError
from crsim.core.progress import Progress
from crsim.datasets.base import DatasetReader, build_reader, convert_dataset
from crsim.eval.annotators.base import (
    ActAnnotator,
    AnnotationReport,
    annotation_domain,
    annotator_registry,
    build_annotator,
)
from crsim.eval.annotators.llm_need import LLMNeedExtractor
from crsim.eval.annotators.need import NeedExtractor, NeedReport
from crsim.llm.client import LLMHub
from crsim.llm.config import LLMSettings, load_llm_settings
from crsim.model.dialogue import Dialogue
from crsim.model.domain import Domain
from crsim.model.io import iter_dialogues
from crsim.model.run_folder.files import LLM_CACHE, RunPaths
from crsim.model.run_folder.lock import lock_if_run_folder

T = TypeVar("T")
#: The information-need extractors: rules (from the user acts) or one LLM call per dialogue.
EXTRACTORS = ("rules", "llm")


@dataclass(frozen=True)
class LLMSource:
    """Where an LLM component's model and cache come from: an `llm:` settings file (None: the local
    model) and a cache file (None: the file the settings name, else the job's default)."""

    config: Path | None = None
    cache: Path | None = None


@dataclass
class ActsResult:
    """`annotate_acts`: the counts, utterances whose LLM answer was unreadable, and the LLM use."""

    report: AnnotationReport
    annotator: str
    failed: int
    llm: dict[str, Any] | None


@dataclass
class NeedsResult:
    """`extract_needs`: the counts of the extractor (`NeedReport` or `LLMNeedReport`) and the LLM use."""

    extractor: str
    user_annotator: str
    report: Any
    failed: int | None
    llm: dict[str, Any] | None


def annotate_acts(
    file: Path,
    out: Path,
    *,
    annotator: str = "rules",
    args: dict[str, Any] | None = None,
    overwrite: bool = False,
    items: Path | None = None,
    domain: str = "movies",
    llm: LLMSource | None = None,
    progress: Progress | None = None,
) -> ActsResult:
    """Add dialogue acts to utterances without them (all with `overwrite`) and write `out`
    (`progress` advances with each dialogue written)."""
    from crsim.eval.annotators.llm import ACTS_ERROR

    report, failed = AnnotationReport(), 0
    hub = annotation_hub(needs_llm(annotator), annotator, llm or LLMSource(), RunPaths(out.parent).llm_cache)
    tool = build_annotator(annotator, args or {}, annotation_domain(items, domain), hub)

    async def count_failures() -> AsyncIterator[Dialogue]:
        nonlocal failed
        async for dialogue in tool.annotate_all(iter_dialogues(file), overwrite=overwrite, report=report):
            unreadable = sum(ACTS_ERROR in u.annotations for u in dialogue.utterances)
            failed += unreadable
            if progress is not None:
                progress.advance(error=unreadable > 0)
            yield dialogue

    run_with(hub, write_all(out, count_failures()))
    return ActsResult(report, tool.name, failed, llm_use(hub, roles_of(tool)) if hub else None)


def evaluate_acts(
    gold: Path,
    *,
    dataset: str | None = None,
    dataset_args: dict[str, Any] | None = None,
    annotator: str = "rules",
    args: dict[str, Any] | None = None,
    items: Path | None = None,
    domain: str = "movies",
    limit: int | None = None,
    llm: LLMSource | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Re-annotate gold dialogues from scratch and score intents and slot values (the summary of
    `AnnotationEval`, plus `llm` (unreadable utterances, seconds, calls) for LLM annotators);
    `progress` advances with each gold dialogue done."""
    from crsim.eval.annotators.evaluate import evaluate_annotator

    started = time.perf_counter()
    hub = annotation_hub(needs_llm(annotator), annotator, llm or LLMSource(), Path(LLM_CACHE))
    tool = build_annotator(annotator, args or {}, annotation_domain(items, domain), hub)
    dialogues = islice(gold_dialogues(gold, dataset, dataset_args or {}), limit)
    result = run_with(hub, evaluate_annotator(tool, reporting(dialogues, tool, progress)))
    seconds = time.perf_counter() - started
    summary = result.summary()
    if hub is not None:
        summary["llm"] = {
            "failed_utterances": getattr(tool, "failed", None),
            "seconds": round(seconds, 1),
            **llm_use(hub, roles_of(tool)),
        }
    return summary


def extract_needs(
    file: Path,
    out: Path,
    *,
    extractor: str = "rules",
    annotator: str | None = None,
    args: dict[str, Any] | None = None,
    overwrite: bool = False,
    items: Path | None = None,
    domain: str = "movies",
    llm: LLMSource | None = None,
    progress: Progress | None = None,
) -> NeedsResult:
    """Each dialogue's information need, from its user acts (acts annotated where missing) or by an
    LLM from the whole dialogue; writes `out` (`progress` advances with each dialogue written)."""
    from crsim.eval.annotators.llm_need import LLMNeedReport

    over = annotation_domain(items, domain)
    kind = extractor_kind(extractor, annotator)
    user_annotator = annotator or "rules"
    name = kind if kind == "llm" else user_annotator
    hub = annotation_hub(
        kind == "llm" or needs_llm(user_annotator), name, llm or LLMSource(), RunPaths(out.parent).llm_cache
    )
    tool: LLMNeedExtractor | ActAnnotator
    if kind == "llm":
        tool = llm_need_extractor(args or {}, over, hub)
        report: Any = LLMNeedReport()
        stream = tool.annotate_all(iter_dialogues(file), overwrite=overwrite, report=report)
    else:
        tool = build_annotator(user_annotator, args or {}, over, hub)
        report = NeedReport()
        stream = NeedExtractor(tool).annotate_all(iter_dialogues(file), overwrite=overwrite, report=report)
    run_with(hub, write_all(out, reporting_stream(stream, tool, progress)))
    failed = getattr(tool, "failed", None) if hub is not None else None
    return NeedsResult(kind, user_annotator, report, failed, llm_use(hub, roles_of(tool)) if hub else None)


def evaluate_need_extraction(
    gold: Path,
    *,
    dataset: str | None = None,
    dataset_args: dict[str, Any] | None = None,
    extractor: str = "rules",
    annotator: str | None = None,
    args: dict[str, Any] | None = None,
    items: Path | None = None,
    domain: str = "movies",
    from_text: bool = True,
    limit: int | None = None,
    llm: LLMSource | None = None,
    progress: Progress | None = None,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Extract the needs of gold dialogues and compare: constraint, request and target P/R/F1
    (micro); returns the summary and the LLM use (None without an LLM). `progress` advances with each
    gold dialogue read (those without a gold need included)."""
    from crsim.eval.annotators.llm_need import evaluate_llm_needs
    from crsim.eval.annotators.need_eval import evaluate_needs

    kind = extractor_kind(extractor, annotator)
    if kind == "llm" and not from_text:
        raise CrsimError("--no-from-text: the llm extractor reads the text only; it has no acts to use")
    user_annotator = annotator or "rules"
    over = need_domain(gold, dataset, dataset_args or {}, items, domain)
    name = kind if kind == "llm" else user_annotator
    hub = annotation_hub(
        kind == "llm" or needs_llm(user_annotator), name, llm or LLMSource(), Path(LLM_CACHE)
    )
    gold_read = islice(gold_dialogues(gold, dataset, dataset_args or {}), limit)
    tool: LLMNeedExtractor | ActAnnotator
    if kind == "llm":
        tool = llm_need_extractor(args or {}, over, hub)
        summary = run_with(hub, evaluate_llm_needs(tool, reporting(gold_read, tool, progress))).summary()
    else:
        tool = build_annotator(user_annotator, args or {}, over, hub)
        dialogues = reporting(gold_read, tool, progress)
        evaluation = evaluate_needs(NeedExtractor(tool), dialogues, from_text=from_text)
        summary = run_with(hub, evaluation).summary()
    if not summary["dialogues"]:
        reader = f"with --dataset {dataset}" if dataset else "as crsim dialogues (no --dataset)"
        raise CrsimError(f"{gold}: read {reader}, it holds no dialogues; is that the file and format meant?")
    return summary, llm_use(hub, roles_of(tool)) if hub else None


def reporting(dialogues: Iterable[Dialogue], tool: object, progress: Progress | None) -> Iterator[Dialogue]:
    """The dialogues, advancing `progress` with each once its consumer asks for the next one (the
    evaluations take one dialogue at a time), with whether the tool's count of unreadable answers
    (`failed`, on the LLM tools) grew meanwhile."""
    for dialogue in dialogues:
        before = failures(tool)
        yield dialogue
        if progress is not None:
            progress.advance(error=failures(tool) > before)


async def reporting_stream(
    dialogues: AsyncIterator[Dialogue], tool: object, progress: Progress | None
) -> AsyncIterator[Dialogue]:
    """As `reporting`, for a stream of annotated dialogues: each is told as it comes out."""
    before = failures(tool)
    async for dialogue in dialogues:
        now = failures(tool)
        if progress is not None:
            progress.advance(error=now > before)
        before = now
        yield dialogue


def failures(tool: object) -> int:
    """The unreadable LLM answers a tool has met so far (0 for the rule-based ones)."""
    failed = getattr(tool, "failed", 0)
    return failed if isinstance(failed, int) else 0


def extractor_kind(extractor: str, annotator: str | None) -> str:
    """The extractor name, checked; the llm extractor takes no act annotator."""
    if extractor not in EXTRACTORS:
        raise CrsimError(f"--extractor {extractor!r}: expected one of {', '.join(EXTRACTORS)}")
    if extractor == "llm" and annotator is not None:
        raise CrsimError("--annotator: the llm extractor reads the text and uses no act annotator")
    return extractor


def needs_llm(annotator: str) -> bool:
    """Whether the act annotator of that name calls a language model (its protocol's `needs_llm`)."""
    return annotator_registry.get(annotator).needs_llm


def annotation_hub(uses_llm: bool, component: str, source: LLMSource, default_cache: Path) -> LLMHub | None:
    """The LLM hub of an LLM-based component (None for others, which must not get LLM settings).

    Settings come from the `llm:` section of `source.config` (default: the local model); the
    response cache is `source.cache`, else the file the settings name, else `default_cache`."""
    if not uses_llm:
        given = [name for name, value in (("--llm", source.config), ("--cache", source.cache)) if value]
        if given:
            raise CrsimError(f"{given[0]}: {component!r} uses no LLM")
        return None
    settings = load_llm_settings(source.config) if source.config is not None else LLMSettings()
    if source.cache is not None:
        cache = settings.cache.model_copy(update={"path": source.cache})
        settings = settings.model_copy(update={"cache": cache})
    return LLMHub(settings, cache_path=default_cache)


def llm_need_extractor(args: dict[str, Any], domain: Domain, hub: LLMHub | None) -> LLMNeedExtractor:
    """The LLM need extractor with validated arguments (errors name the `--arg` field)."""
    from pydantic import ValidationError

    try:
        params = LLMNeedExtractor.Params.model_validate(args)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(
            f"--arg {'.'.join(str(p) for p in err['loc'])}: {err['msg']} (llm extractor)"
        ) from None
    return LLMNeedExtractor(params, BuildContext(domain, hub))


def run_with(hub: LLMHub | None, work: Coroutine[Any, Any, T]) -> T:
    """Run `work`, then close the hub's providers (a local model server, HTTP clients) and cache."""

    async def main() -> T:
        try:
            return await work
        finally:
            if hub is not None:
                await hub.aclose()

    return asyncio.run(main())


def roles_of(tool: LLMNeedExtractor | ActAnnotator) -> list[str]:
    """The model roles a component uses (its `llm_roles(params)`)."""
    if isinstance(tool, LLMNeedExtractor):
        return LLMNeedExtractor.llm_roles(tool.params)
    return list(type(tool).llm_roles(tool.params))


def llm_use(hub: LLMHub, roles: list[str]) -> dict[str, Any]:
    """Provider calls per role and answers taken from the cache."""
    cache = hub.cache
    return {
        "provider_calls": {role: hub.role(role).calls for role in roles},
        "cache_hits": cache.hits if cache is not None else 0,
        "cache": str(cache.path) if cache is not None else None,
    }


def need_domain(
    gold: Path, dataset: str | None, dataset_args: dict[str, Any], items: Path | None, domain: str = "movies"
) -> Domain:
    """`domain` over `items`, else over the dataset reader's item collection (the ids its dialogues
    use), else `domain` as it ships."""
    collection = (
        dataset_reader(dataset, dataset_args).items(gold) if dataset is not None and items is None else None
    )
    if collection is None:
        return annotation_domain(items, domain)
    return dataclasses.replace(annotation_domain(None, domain), name=collection.name, items=collection)


def gold_dialogues(gold: Path, dataset: str | None, dataset_args: dict[str, Any]) -> Iterator[Dialogue]:
    """The gold dialogues: crsim JSONL, or a dataset's file read by its reader."""
    if dataset is None:
        if gold.suffix == ".json":
            raise CrsimError(f"{gold}: a .json file needs --dataset NAME to say which reader reads it")
        return iter_dialogues(gold)
    return iter(convert_dataset(dataset_reader(dataset, dataset_args), gold))


def dataset_reader(dataset: str, dataset_args: dict[str, Any]) -> DatasetReader:
    """A registered dataset reader with validated arguments (errors name `--dataset-arg`)."""
    return build_reader(dataset, dataset_args, where="--dataset-arg")


async def write_all(out: Path, dialogues: AsyncIterator[Dialogue]) -> None:
    """Write a stream of dialogues to `out` as JSONL; nothing appears at `out` unless all succeed.
    Into a run folder only while holding its lock (a run or evaluation may be writing there)."""
    with lock_if_run_folder(out.parent), atomic_output(out) as handle:
        async for dialogue in dialogues:
            handle.write(dialogue.model_dump_json() + "\n")
