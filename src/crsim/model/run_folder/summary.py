"""`summary.json` and what it was built from, so scores and summary cannot silently disagree.

An evaluation writes two files, `scores.jsonl` and then `summary.json`, each atomically; a process
killed between the two leaves new scores beside an old summary, and dialogues added to a run after
its evaluation (a resumed run) leave both behind the dialogues. So the summary names the files it was
built from, by size and sha256 (`built_from`), and a reader checks them (`stale_reason`) before it
shows a number: any difference means the folder must be evaluated again, and readers say so instead
of mixing the two. Content hashes rather than modification times, so a copied folder stays valid.

File format (`summary_format_version` 2): `{"summary_format_version": 2, "built_from": {"dialogues":
{"file", "bytes", "sha256"}, "scores": {...}}, "groups": [GroupSummary, ...]}`. Version 1 was the
bare list of groups; it is still read, and reported as unverifiable.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from crsim.core.errors import DataError
from crsim.core.secrets import redact_json_text
from crsim.model.run_folder.files import part_path
from crsim.model.run_folder.scores import GroupSummary

SUMMARY_FORMAT_VERSION: Literal[2] = 2
_CHUNK = 1 << 20


class FileFingerprint(BaseModel):
    """One file as it was when the summary was built."""

    file: str = Field(description="The file's name (not its path, so the folder can move).")
    bytes: int = Field(ge=0)
    sha256: str


#: Which way a metric is better: a higher value, a lower value, or neither (a description, no verdict).
Direction = Literal["higher", "lower", "none"]


class MetricInfo(BaseModel):
    """What later stages need to know of a scored metric, so that reports and comparisons never
    build it again: recorded per label in `summary.json`."""

    label: str = Field(description="The label of its records (an evaluator's aspects are `label/aspect`).")
    name: str = Field(description="Its registry name (`success_rate`, `judge`, ...).")
    binary: bool | None = Field(None, description="Every value is 0 or 1; None: not declared.")
    per_turn: bool = Field(False, description="Defined at every turn, so the summary holds its curve.")
    k: int | None = Field(None, description="The cut-off K of a list metric; None for others.")
    direction: Direction = Field("none", description="Which way is better: higher, lower or none.")


class GroupCurve(BaseModel):
    """A per-turn metric averaged over one CRS × simulator's evaluable dialogues: `mean[t-1]` over the
    `n[t-1]` dialogues with a value at turn t (a dialogue that ended keeps its last state)."""

    crs_id: str | None
    simulator_id: str | None
    metric: str
    mean: list[float | None]
    n: list[int]
    #: The sample SD (ddof=1) per turn, for the curves' intervals; None below two values (and in
    #: summaries written before it was recorded).
    sd: list[float | None] | None = None


class SummaryFile(BaseModel):
    """The contents of `summary.json`."""

    summary_format_version: Literal[2] = SUMMARY_FORMAT_VERSION
    built_from: dict[str, FileFingerprint] | None = Field(
        None, description="Role ('dialogues', 'scores') -> the file the groups were computed from."
    )
    groups: list[GroupSummary] = Field(description="One summary per CRS × simulator.")
    metrics: dict[str, MetricInfo] | None = Field(
        None, description="Metric label -> what it is; None in summaries written before crsim recorded it."
    )
    curves: list[GroupCurve] = Field(
        default_factory=list, description="Per-turn curves of the per-turn metrics, per CRS × simulator."
    )

    def metric_info(self, label: str) -> MetricInfo | None:
        """The metadata of a record label (an evaluator's `label/aspect` finds its evaluator's)."""
        if self.metrics is None:
            return None
        return self.metrics.get(label) or self.metrics.get(label.split("/", 1)[0])


_LEGACY = TypeAdapter(list[GroupSummary])


def fingerprint(path: Path) -> FileFingerprint:
    """Size and sha256 of a file, read in chunks (memory stays flat for large runs)."""
    digest, size = hashlib.sha256(), 0
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return FileFingerprint(file=path.name, bytes=size, sha256=digest.hexdigest())


def evaluation_sources(dialogues: Path, scores: Path) -> dict[str, FileFingerprint]:
    """What an evaluation read and wrote, recorded in the summary it writes last."""
    return {"dialogues": fingerprint(dialogues), "scores": fingerprint(scores)}


def write_summary_file(
    groups: Sequence[GroupSummary],
    path: Path,
    sources: Mapping[str, FileFingerprint] | None,
    *,
    metrics: Mapping[str, MetricInfo] | None = None,
    curves: Sequence[GroupCurve] = (),
) -> None:
    """Write `summary.json` through a temporary file renamed into place."""
    data = SummaryFile(
        built_from=dict(sources) if sources is not None else None,
        groups=list(groups),
        metrics=dict(metrics) if metrics is not None else None,
        curves=list(curves),
    )
    temp = part_path(path)
    try:
        text = redact_json_text(data.model_dump_json(indent=2), indent=2)  # error examples quote servers
        temp.write_text(text + "\n", encoding="utf-8")
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def read_summary_file(path: Path) -> SummaryFile:
    """`summary.json` of either version; a bad file is a DataError naming the file, record and field."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DataError("file not found; run `crsim evaluate` first", path=str(path)) from None
    try:
        if raw.lstrip().startswith(b"["):  # version 1: the groups alone
            return SummaryFile(groups=_LEGACY.validate_json(raw))
        return SummaryFile.model_validate_json(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(p) for p in err["loc"]]
        if loc[:1] == ["groups"]:
            loc = loc[1:]
        record = int(loc[0]) + 1 if loc and loc[0].isdigit() else None
        field = ".".join(loc[1:] if record else loc) or None
        raise DataError(err["msg"], path=str(path), record=record, field=field) from None


def stale_reason(summary: SummaryFile, files: Mapping[str, Path]) -> str | None:
    """Why the summary does not describe `files` (role -> path as they are now), or None if it does."""
    if summary.built_from is None:
        return "it does not record the files it was built from (an older crsim wrote it)"
    for role, path in files.items():
        then = summary.built_from.get(role)
        if then is None:
            return f"it does not record the {path.name} it was built from"
        if not path.is_file():
            return f"it was built from a {path.name} that is no longer there"
        now = fingerprint(path)
        if (now.bytes, now.sha256) != (then.bytes, then.sha256):
            return (
                f"it was built from another {path.name} ({then.bytes} bytes, sha256 {then.sha256[:12]}…; "
                f"now {now.bytes} bytes, {now.sha256[:12]}…): {_WHY.get(role, 'the file changed since')}"
            )
    return None


_WHY = {
    "scores": "an evaluation stopped between writing the scores and the summary, or the scores were edited",
    "dialogues": "the dialogues changed after the evaluation (a resumed run adds dialogues)",
}
