"""The batch layer: runs an experiment's dialogues concurrently into a run folder, resumably.

`manifest.json` is written before the first dialogue; every finished dialogue is appended to
`dialogues.jsonl` and flushed. `--resume` re-reads and validates that file, cuts a line half-written
by a killed process, and holds only the dialogues that are missing. When all dialogues are present the file
is put into task order once, so two runs with the same seed produce the same file.

`--resume --retry-errors` also holds again, with their original seeds, the dialogues that ended in
the chosen failure kinds (`crs_error`, `infrastructure_error`, `timeout`): their records move to the
audit file `retried.jsonl` (appended and synced first, then `dialogues.jsonl` is rewritten without
them), so they are missing like the dialogues a killed run never held; the manifest counts them
(`retried_dialogues`). A run killed during the retry resumes like any other, without loss or
duplicates, and the summary no longer matches the dialogues until the run is evaluated again.
"""

from __future__ import annotations

import gc
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crsim.core.errors import ConfigError, DataError
from crsim.core.progress import Progress
from crsim.model.dialogue import Dialogue
from crsim.model.io import iter_dialogue_records
from crsim.model.run_folder.dialogues import DialogueWriter, canonical_order, repair_tail
from crsim.model.run_folder.files import MANIFEST, RunPaths
from crsim.model.run_folder.lock import HeldLock, run_folder_lock
from crsim.model.run_folder.manifest import build_manifest, read_manifest, write_json_atomic
from crsim.runner.build import Experiment
from crsim.runner.holding import hold_dialogues
from crsim.runner.retry import count_retries, errored_records, move_to_audit


class RunFolderConflict(ConfigError):
    """A run folder that cannot take this run as asked. The message gives the command-line advice
    (`--resume`, `--out`); `python` words the same advice for `crsim.run` (`resume=True`, `out=`)."""

    def __init__(self, message: str, python: str) -> None:
        super().__init__(message)
        self.python = python


@dataclass
class BatchResult:
    """What `run_batch` did: dialogues planned, found done, held now, and bytes of a cut tail."""

    run_dir: Path
    planned: int
    already_done: int
    ran: int
    terminations: Counter[str] = field(default_factory=Counter)
    dropped_bytes: int = 0
    #: `time.perf_counter()` when the dialogues were all in (the CLI reports the time to there).
    finished_at: float = 0.0
    #: Dialogues held again by `retry` (their old records moved to the audit file).
    retried: int = 0
    #: After a resume: failure reason -> the run's records that ended so (what `retry` would hold).
    errored: Counter[str] = field(default_factory=Counter)


#: Config fields that change how a run executes, not what it produces: they may differ on resume.
OPERATIONAL_FIELDS = frozenset(
    {"out", "concurrency", "executor", "ray_address", "shard_size", "failed_pairing_share"}
)


def prepare_run_dir(experiment: Experiment, run_dir: Path, resume: bool) -> tuple[set[str], int]:
    """Create the run folder and manifest, or check them on resume.

    Returns the ids of the dialogues already done and how many bytes of a half-written last line
    were cut. A folder holding dialogues but no manifest is refused rather than appended to.
    """
    config = experiment.config.manifest_config()
    manifest_path, dialogues = RunPaths(run_dir).manifest, RunPaths(run_dir).dialogues
    if manifest_path.exists():
        if not resume:
            exists = f"{run_dir}: a run already exists here"
            raise RunFolderConflict(
                f"{exists}; pass --resume to continue it or choose another --out",
                f"{exists}; pass resume=True to continue it (a finished run is scored again, not held "
                "again) or choose another out=",
            )
        previous = with_added_defaults(read_manifest(run_dir).get("config"), _defaults(experiment))
        changed = config_differences(previous, config)
        if changed:
            differs = (
                f"{manifest_path}: the config differs from the one this run was started with in "
                f"{', '.join(changed)}"
            )
            raise RunFolderConflict(
                f"{differs}; resume with the same config or choose another --out",
                f"{differs}; resume with the same config or choose another out=",
            )
    elif dialogues.exists() and dialogues.stat().st_size > 0:
        raise ConfigError(
            f"{dialogues}: dialogues without a {MANIFEST}; expected an empty folder or a run folder "
            "written by `crsim run`"
        )
    else:
        run_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(manifest_path, build_manifest(config, experiment.components, len(experiment.tasks)))
    dropped = repair_tail(dialogues)
    return _done_ids(dialogues, {t.id for t in experiment.tasks}), dropped


_ABSENT = object()


def _defaults(experiment: Experiment) -> dict[str, Any]:
    """Every config field at its default, as a manifest records them."""
    return type(experiment.config)().manifest_config()


def with_added_defaults(previous: Any, defaults: Any) -> Any:
    """A manifest's config with the fields it lacks at their defaults: a field added to crsim after
    the run started (e.g. `dialogue_timeout_s`) and left at its default is not a change."""
    if not isinstance(previous, dict) or not isinstance(defaults, dict):
        return previous
    merged = {key: with_added_defaults(value, defaults.get(key)) for key, value in previous.items()}
    return {**{k: v for k, v in defaults.items() if k not in previous}, **merged}


def config_differences(previous: Any, current: Any, prefix: str = "") -> list[str]:
    """Dotted names of the fields that differ, ignoring `OPERATIONAL_FIELDS` at the top level."""
    if isinstance(previous, dict) and isinstance(current, dict):
        keys = sorted(set(previous) | set(current))
        if not prefix:
            keys = [k for k in keys if k not in OPERATIONAL_FIELDS]
        return [
            name
            for key in keys
            for name in config_differences(
                previous.get(key, _ABSENT), current.get(key, _ABSENT), f"{prefix}{key}."
            )
        ]
    return [] if previous == current else [prefix.rstrip(".") or "config"]


def _done_ids(path: Path, planned: set[str]) -> set[str]:
    """Ids of the valid, planned dialogues in the file; anything else is an error naming the record."""
    if not path.exists():
        return set()
    first_seen: dict[str, int] = {}
    for number, dialogue in iter_dialogue_records(path):
        if dialogue.id not in planned:
            raise DataError(
                f"dialogue {dialogue.id!r} is not part of this experiment", path=str(path), record=number
            )
        if dialogue.id in first_seen:
            raise DataError(
                f"dialogue {dialogue.id!r} is already in record {first_seen[dialogue.id]}",
                path=str(path),
                record=number,
                field="id",
            )
        first_seen[dialogue.id] = number
    return set(first_seen)


def kept_dialogues(run_dir: Path) -> int:
    """Complete records in the run folder's dialogue file (a half-written last line does not count)."""
    path = RunPaths(run_dir).dialogues
    if not path.exists():
        return 0
    with open(path, "rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


async def run_batch(
    experiment: Experiment,
    run_dir: str | Path,
    *,
    resume: bool = False,
    progress: Progress | None = None,
    held: HeldLock | None = None,
    retry: frozenset[str] = frozenset(),
) -> BatchResult:
    """Hold every planned dialogue not yet in the run folder with the configured executor: in this
    process, `config.concurrency` at a time, or as Ray tasks (`crsim.runner.ray_executor`).

    Holds the run folder's lock (`crsim.model.run_folder.lock`) throughout: a second writer fails at
    once. A caller that holds it already passes its `HeldLock` as `held`. With `resume`, the
    dialogues that ended with a reason in `retry` (`retry_reasons`) are held again. `progress` hears
    how many dialogues are to be held and each one written (an error when it ended in one).
    """
    run_dir = Path(run_dir)
    if retry and not resume:
        raise ConfigError("--retry-errors needs --resume: it holds failed dialogues of an existing run again")
    with run_folder_lock(run_dir, held=held), _long_lived_frozen():
        return await _run_batch(experiment, run_dir, resume=resume, progress=progress, retry=retry)


_frozen_by_batches = 0  #: batches under way in this process that froze the heap (`_long_lived_frozen`)


@contextmanager
def _long_lived_frozen() -> Iterator[None]:
    """For the batch's duration, keep what is alive when it starts (the domain with its catalogue and
    indexes, the components, the interpreter's modules) out of the garbage collector's full passes
    (`gc.freeze`): they outlive the batch anyway, and a full pass walking the movie catalogue cost
    ~70 ms, three times in a few thousand requests at C = 128 (bench/http_crs.py). Undone
    (`gc.unfreeze`) when the last batch ends; a process that froze objects itself is left alone."""
    global _frozen_by_batches
    if _frozen_by_batches == 0 and gc.get_freeze_count() > 0:  # someone else manages freezing
        yield
        return
    if _frozen_by_batches == 0:
        gc.freeze()
    _frozen_by_batches += 1
    try:
        yield
    finally:
        _frozen_by_batches -= 1
        if _frozen_by_batches == 0:
            gc.unfreeze()


async def _run_batch(
    experiment: Experiment,
    run_dir: Path,
    *,
    resume: bool,
    progress: Progress | None,
    retry: frozenset[str] = frozenset(),
) -> BatchResult:
    done, dropped = prepare_run_dir(experiment, run_dir, resume)
    moved: set[str] = set()
    if resume:
        if retry:
            moved = move_to_audit(RunPaths(run_dir).dialogues, RunPaths(run_dir).retried, retry)
        count_retries(run_dir)
    done -= moved
    experiment.llms.set_cache_path(RunPaths(run_dir).llm_cache)
    todo = [t for t in experiment.tasks if t.id not in done]
    result = BatchResult(run_dir, len(experiment.tasks), len(done), 0, dropped_bytes=dropped)
    result.retried = len(moved)
    writer = DialogueWriter(RunPaths(run_dir).dialogues)
    if progress is not None:
        progress.set_total(len(todo))

    def record(dialogue: Dialogue) -> None:
        dialogue = writer.write(dialogue)  # an unwritable record comes back as its error record
        result.ran += 1
        result.terminations[dialogue.termination.reason if dialogue.termination else "unknown"] += 1
        if progress is not None:
            progress.advance(error=dialogue_failed(dialogue))

    try:
        if experiment.config.executor == "ray":
            from crsim.runner.ray_executor import hold_on_ray

            await hold_on_ray(experiment, todo, run_dir, record)
        else:
            await hold_dialogues(experiment, todo, record)
    finally:
        writer.close()
        await experiment.llms.aclose()
    canonical_order(RunPaths(run_dir).dialogues, {t.id: t.index for t in experiment.tasks})
    result.finished_at = time.perf_counter()
    if resume:
        result.errored = errored_records(run_dir)
    return result


def dialogue_failed(dialogue: Dialogue) -> bool:
    """Whether a held dialogue ended with an error (what the dialogue phase counts as an error)."""
    return dialogue.termination is not None and dialogue.termination.error is not None
