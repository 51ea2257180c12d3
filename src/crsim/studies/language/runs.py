"""Measuring the user utterances of whole runs: what `crsim analyze` does before it reports.

`measure_runs(runs, options)` reads each run folder (or dialogue file), measures every user
utterance by rules or by an LLM judge (`MeasureOptions`), and names the simulator groups;
`write_utterances` writes every measured utterance as JSON Lines. The command line only parses
options and prints; a notebook calls the same functions.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from crsim.core.atomic_files import atomic_output
from crsim.core.errors import ConfigError, CrsimError
from crsim.core.progress import Progress
from crsim.model.run_folder.files import DIALOGUES, RunPaths
from crsim.studies.language.measures import DialogueMeasures, Thresholds

if TYPE_CHECKING:
    from crsim.studies.language.measuring import Measurer

__all__ = [
    "MeasureOptions",
    "Measured",
    "Method",
    "measure_runs",
    "thresholds",
    "write_utterances",
]


class Method(StrEnum):
    """How formality and key points are measured."""

    RULES = "rules"
    LLM = "llm"


@dataclass
class Measured:
    """The measured dialogues of several runs, their run names and the thresholds used."""

    dialogues: list[DialogueMeasures]
    runs: list[str]
    thresholds: Thresholds


@dataclass(frozen=True)
class MeasureOptions:
    """How to measure: `judge` (a YAML with an `llm:` section) and `cache` only with the LLM method,
    `items` (the item collection of the rule key-point counter) only with rules."""

    method: Method
    judge: Path | None
    cache: Path | None
    items: Path | None
    concurrency: int
    thresholds: Thresholds

    def check(self) -> None:
        """A CrsimError for options that do not go with the method."""
        if self.method is Method.RULES and (self.judge is not None or self.cache is not None):
            raise CrsimError("--judge and --cache apply to --measure llm only")
        if self.method is Method.LLM and self.items is not None:
            raise CrsimError("--items applies to --measure rules only")


def thresholds(short_max: int, medium_max: int, low_max: int) -> Thresholds:
    """The category thresholds; inconsistent ones are a ConfigError naming `--medium-max`."""
    try:
        return Thresholds(short_max=short_max, medium_max=medium_max, low_richness_max=low_max)
    except ValidationError as exc:
        raise ConfigError(f"--medium-max: {exc.errors()[0]['msg']}") from None


def dialogue_file(run: Path) -> Path:
    """The dialogues of a run folder, or the dialogue file itself."""
    path = RunPaths(run).dialogues if run.is_dir() else run
    if not path.is_file():
        raise CrsimError(f"{run}: expected a run folder with {DIALOGUES} or a dialogue JSONL file")
    return path


def measure_runs(runs: list[Path], options: MeasureOptions, progress: Progress | None = None) -> Measured:
    """Every run's user utterances; all paths are checked before the first is measured. `progress`
    hears how many dialogues there are and each one measured."""
    from crsim.model.run_folder.folder import count_lines
    from crsim.studies.language.measuring import name_groups

    options.check()
    paths = [dialogue_file(run) for run in runs]
    names = [run.name if run.is_dir() else run.stem for run in runs]
    if len(set(names)) < len(names):
        names = [str(run) for run in runs]
    if progress is not None:
        progress.set_total(sum(count_lines(path) for path in paths))
    measured = asyncio.run(_measure_all(paths, names, options, progress))
    return Measured(name_groups(measured), names, options.thresholds)


async def _measure_llm(
    path: Path, run: str, options: MeasureOptions, progress: Progress | None
) -> list[DialogueMeasures]:
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
    hub = LLMHub(settings, cache_path=RunPaths(path.parent).llm_cache)
    try:
        hub.check(["judge"])
        measurer: Measurer = LLMMeasurer(LLMJudge(hub))
        dialogues = iter_dialogues(path)
        return await measure_dialogues(
            dialogues,
            measurer,
            options.thresholds,
            run=run,
            concurrency=options.concurrency,
            progress=progress,
        )
    finally:
        await hub.aclose()


async def _measure_all(
    paths: list[Path], names: list[str], options: MeasureOptions, progress: Progress | None
) -> list[DialogueMeasures]:
    from crsim.model.io import iter_dialogues
    from crsim.studies.language.measuring import RuleMeasurer, measure_dialogues

    measured: list[DialogueMeasures] = []
    rules: Measurer | None = None
    for path, name in zip(paths, names, strict=True):
        if options.method is Method.LLM:
            measured += await _measure_llm(path, name, options, progress)
            continue
        if rules is None:
            from crsim.eval.annotators.base import annotation_domain

            rules = RuleMeasurer(annotation_domain(options.items))
        measured += await measure_dialogues(
            iter_dialogues(path),
            rules,
            options.thresholds,
            run=name,
            concurrency=options.concurrency,
            progress=progress,
        )
    return measured


def write_utterances(measured: Measured, path: Path) -> None:
    """Every measured utterance as one JSON line (group, run, pattern and its measures), atomically."""
    with atomic_output(path) as handle:
        for item in measured.dialogues:
            for utterance in item.utterances:
                record = {"group": item.group, "run": item.run, "pattern": item.pattern}
                handle.write(
                    json.dumps({**record, **utterance.model_dump(mode="json")}, ensure_ascii=False) + "\n"
                )
