"""`RunFolder`: one run folder, opened once, with its typed manifest and readers for every file."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from crsim.core.errors import DataError
from crsim.core.jsonl import Unreadable
from crsim.model.dialogue import Dialogue
from crsim.model.io import iter_dialogues
from crsim.model.run_folder.files import DIALOGUES, RunPaths
from crsim.model.run_folder.manifest import Manifest, manifest_from, read_manifest
from crsim.model.run_folder.scores import GroupSummary, ScoreRecord, iter_scores
from crsim.model.run_folder.summary import MetricInfo, SummaryFile, read_summary_file, stale_reason


@dataclass(frozen=True)
class RunFolder:
    """A folder written by `crsim run`: where its files are and what its manifest says.

    `manifest` is the manifest's JSON object exactly as read (reports show it as written);
    `typed_manifest` is the same checked as the typed `Manifest`."""

    path: Path
    manifest: dict[str, Any]

    @cached_property
    def typed_manifest(self) -> Manifest:
        return manifest_from(self.manifest, self.manifest_path)

    @property
    def name(self) -> str:
        return self.path.resolve().name

    @property
    def domain(self) -> str:
        """The name of the run's item domain (resolve it with `crsim.domains.domain_of`)."""
        return self.typed_manifest.domain

    @property
    def dataset(self) -> str:
        """The item domain and the source of the simulated users, e.g. `movies/movielens`."""
        source = self.typed_manifest.users_source
        return f"{self.domain}/{source}" if source else self.domain

    @property
    def paths(self) -> RunPaths:
        return RunPaths(self.path)

    @property
    def manifest_path(self) -> Path:
        return self.paths.manifest

    @property
    def dialogues_path(self) -> Path:
        return self.paths.dialogues

    @property
    def scores_path(self) -> Path:
        return self.paths.scores

    @property
    def summary_path(self) -> Path:
        return self.paths.summary

    @property
    def llm_cache_path(self) -> Path:
        return self.paths.llm_cache

    @property
    def report_path(self) -> Path:
        return self.paths.report

    @property
    def export_dir(self) -> Path:
        return self.paths.export_dir

    @property
    def evaluated(self) -> bool:
        """Whether `crsim evaluate` (or `crsim run`, which evaluates at the end) wrote its results."""
        return self.scores_path.is_file() and self.summary_path.is_file()

    def completeness(self) -> Completeness:
        """Planned and held dialogues: whether the run is complete."""
        return completeness(self.path)

    def dialogues(self) -> Iterator[Dialogue]:
        """The dialogues, streamed; a bad line is a DataError naming the file, record and field."""
        return iter_dialogues(self.dialogues_path)

    def summaries(self) -> list[GroupSummary]:
        """The per CRS × simulator summaries of `summary.json`, once it is checked to describe the
        dialogues and scores as they are now; otherwise a DataError that says to evaluate again."""
        return self.summary().groups

    def summary(self) -> SummaryFile:
        """`summary.json` (groups, metric metadata, per-turn curves), checked as `summaries`."""
        summary = read_summary_file(self.summary_path)
        stale = stale_reason(summary, {"dialogues": self.dialogues_path, "scores": self.scores_path})
        if stale:
            raise DataError(
                f"does not match the run's files: {stale}; run `crsim evaluate {self.path}` again "
                "(LLM answers come from the run's cache)",
                path=str(self.summary_path),
            )
        return summary

    def metric_metadata(self) -> dict[str, MetricInfo] | None:
        """Metric label -> its metadata (0/1, per-turn, K, direction) as `summary.json` records it;
        None when there is no summary or it was written before crsim recorded the metadata. Not
        checked against the scores: it describes the metrics, not their values."""
        if not self.summary_path.is_file():
            return None
        return read_summary_file(self.summary_path).metrics

    def scores(self, bad: list[Unreadable] | None = None) -> Iterator[ScoreRecord]:
        """The records of `scores.jsonl`, streamed; a bad line names the file, record and field (or,
        with `bad`, is collected there and skipped)."""
        if not self.scores_path.is_file():
            raise DataError("file not found; run `crsim evaluate` first", path=str(self.scores_path))
        return iter_scores(self.scores_path, bad)


@dataclass(frozen=True)
class Completeness:
    """How many of a run's planned dialogues its folder holds (`planned` None: not known, e.g. a
    dialogue file or a manifest written before crsim recorded it)."""

    path: Path
    planned: int | None
    held: int

    @property
    def complete(self) -> bool:
        return self.planned is None or self.held >= self.planned

    def warning(self) -> str:
        """The one line an incomplete run is reported with (empty when complete)."""
        if self.complete:
            return ""
        return (
            f"{self.path}: incomplete run: holds {self.held} of {self.planned} planned dialogues; its "
            "numbers describe only those (`crsim run ... --resume` holds the rest)"
        )


def completeness(path: str | Path, held: int | None = None) -> Completeness:
    """Planned (the manifest's `planned_dialogues`) and held (complete lines of the dialogue file)
    dialogues of a run folder; for anything else, held dialogues and planned unknown. `held`: the
    records a caller has just read from the whole dialogue file (its lines are then not counted again)."""
    path = Path(path)
    if not is_run_folder(path):
        source = path if path.is_file() else RunPaths(path).dialogues
        return Completeness(path, None, _held(source, held))
    planned = manifest_from(read_manifest(path), RunPaths(path).manifest).planned_dialogues
    return Completeness(path, planned, _held(RunPaths(path).dialogues, held))


def _held(dialogues: Path, held: int | None) -> int:
    if held is not None:
        return held
    return count_lines(dialogues) if dialogues.is_file() else 0


def open_run(path: str | Path) -> RunFolder:
    """A run folder; anything else (a file, a folder without manifest or dialogues) is a DataError."""
    path = Path(path)
    if not path.is_dir():
        raise DataError("not a folder; expected a run folder written by `crsim run`", path=str(path))
    folder = RunFolder(path, read_manifest(path))
    folder.typed_manifest  # noqa: B018 - a field of the wrong type is an error here, not later
    if not RunPaths(path).dialogues.is_file():
        raise DataError(f"no {DIALOGUES}; the run has not held any dialogue yet", path=str(path))
    return folder


def is_run_folder(path: Path) -> bool:
    """Whether `path` is a folder holding a manifest (what `crsim run` writes first)."""
    return RunPaths(path).manifest.is_file()


def dialogues_file(path: Path) -> Path:
    """The dialogue file of a run folder, or `path` itself when it is a dialogue file."""
    return RunPaths(path).dialogues if path.is_dir() else path


def count_lines(path: str | Path) -> int:
    """Non-blank lines of a file, counted without parsing them."""
    path = Path(path)
    count = 0
    with path.open("rb") as handle:
        for line in handle:
            if line.strip():
                count += 1
    return count
