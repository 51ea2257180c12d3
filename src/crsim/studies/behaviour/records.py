"""What the behaviour report reads: a run's dialogues (bad records counted, never fatal), its domain,
the configured CRS message caps, and the judge scores of the run or of an evaluation folder."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from crsim.core.errors import DataError
from crsim.core.jsonl import Unreadable, jsonl_records
from crsim.domains import domain_named, domain_of
from crsim.model.annotations import DOMAIN
from crsim.model.dialogue import Dialogue
from crsim.model.domain import Domain
from crsim.model.run_folder import SCORES, Manifest, ScoreRecord, is_run_folder, load_manifest
from crsim.model.run_folder.files import DIALOGUES, MANIFEST, RunPaths
from crsim.model.run_folder.scores import read_scores as read_run_scores


@dataclass
class RunRecords:
    """The records of one run as the measures need them."""

    name: str
    domain: Domain
    dialogues: list[Dialogue]
    scores: list[ScoreRecord] = field(default_factory=list)
    #: CRS id -> `max_message_chars` its configuration set (when the manifest says).
    caps: dict[str, int] = field(default_factory=dict)
    #: Judge label -> the rubric its configuration named (when the manifest says).
    rubrics: dict[str, str] = field(default_factory=dict)
    unreadable: list[Unreadable] = field(default_factory=list)


def _scores_of(path: Path, bad: list[Unreadable]) -> list[ScoreRecord]:
    """The score records of a scores file, or of the scores file inside an evaluation folder; bad
    lines are collected in `bad` and skipped."""
    file = RunPaths(path).scores if path.is_dir() else path
    if not file.is_file():
        raise DataError(f"no {SCORES} here; expected scores written by `crsim evaluate`", path=str(path))
    return read_run_scores(file, bad)


def configured(manifest: Manifest | None) -> tuple[dict[str, int], dict[str, str]]:
    """The message caps of the run's CRSs and the rubrics of its judges, by label, from its manifest."""
    if manifest is None:
        return {}, {}
    caps = {
        spec.label: spec.args["max_message_chars"]
        for spec in manifest.crss
        if isinstance(spec.args.get("max_message_chars"), int)
    }
    rubrics = {}
    for spec in manifest.metrics or []:
        rubric = spec.args.get("rubric")
        if spec.name == "judge" and isinstance(rubric, str):
            rubrics[spec.label if spec.label != spec.name else rubric] = rubric
    return caps, rubrics


def _locate(path: Path) -> tuple[Path, Manifest | None]:
    """The dialogue file of a run folder (with its manifest) or of a dialogue file (without)."""
    if not path.is_dir():
        if not path.is_file():
            raise DataError("file not found; expected dialogues in JSON Lines", path=str(path))
        return path, None
    paths = RunPaths(path)
    if not is_run_folder(path):
        if paths.scores.is_file():
            raise DataError(
                f"an evaluation folder ({SCORES}, no {MANIFEST}): give the run folder it scored "
                "and this folder with --scores",
                path=str(path),
            )
        raise DataError(f"not a run folder (no {MANIFEST}); expected `crsim run` output", path=str(path))
    if not paths.dialogues.is_file():
        raise DataError(f"no {DIALOGUES}; the run has not held any dialogue yet", path=str(path))
    return paths.dialogues, load_manifest(path)


def _domain(path: Path, manifest: Manifest | None, dialogues: list[Dialogue]) -> Domain:
    """The run's domain: its manifest's, else the one domain its records name (`metadata.domain`)."""
    if manifest is not None:
        return domain_of(manifest)
    names = {DOMAIN.get(d.metadata, where=f"dialogue {d.id!r}") for d in dialogues} - {None}
    if len(names) != 1:
        found = f"names {len(names)} domains" if names else "names no domain"
        raise DataError(f"the dialogue file {found}; give one (--domain)", path=str(path))
    return domain_named(names.pop() or "")


def read_run(path: Path, domain: Domain | None, scores: list[Path]) -> RunRecords:
    """A run folder (manifest + dialogues) or a dialogue file, with the scores it holds or that
    `scores` name. The domain: `domain`, else the manifest's, else the one the records name."""
    bad: list[Unreadable] = []
    dialogues_path, manifest = _locate(path)
    dialogues = list(jsonl_records(dialogues_path, Dialogue.model_validate_json, bad))
    domain = domain or _domain(path, manifest, dialogues)
    own = RunPaths(path).scores
    score_files = scores or ([own] if path.is_dir() and own.is_file() else [])
    records = [record for file in score_files for record in _scores_of(file, bad)]
    caps, rubrics = configured(manifest)
    return RunRecords(path.resolve().name, domain, dialogues, records, caps, rubrics, bad)


def run_domain(path: Path, dialogues: list[Dialogue]) -> Domain:
    """The domain of a run folder (its manifest's) or of a dialogue file (the one its `dialogues`
    name)."""
    _, manifest = _locate(path)
    return _domain(path, manifest, dialogues)
