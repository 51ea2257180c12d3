"""Reading a run folder for presentation: manifest, summaries, scores and dialogues, with located errors.

The file names are those of the run-folder format (docs/data-format.md); this module reads them
without importing the runner, so reports and dataframes depend on the records only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from crsim.errors import DataError
from crsim.eval.evaluate import GroupSummary, ScoreRecord
from crsim.eval.summary_file import read_summary_file, stale_reason
from crsim.model.dialogue import Dialogue
from crsim.model.io import iter_dialogues
from crsim.redact import register_config_secrets

MANIFEST = "manifest.json"
DIALOGUES = "dialogues.jsonl"
SCORES = "scores.jsonl"
SUMMARY = "summary.json"


@dataclass(frozen=True)
class RunFolder:
    """A folder written by `crsim run`: where its files are and what its manifest says."""

    path: Path
    manifest: dict[str, Any]

    @property
    def name(self) -> str:
        return self.path.resolve().name

    @property
    def config(self) -> dict[str, Any]:
        config = self.manifest.get("config", {})
        return config if isinstance(config, dict) else {}

    @property
    def dataset(self) -> str:
        """The item domain and the source of the simulated users, e.g. `movies/movielens`."""
        users = self.config.get("users")
        source = users.get("source") if isinstance(users, dict) else None
        domain = str(self.config.get("domain", "movies"))
        return f"{domain}/{source}" if source else domain

    @property
    def dialogues_path(self) -> Path:
        return self.path / DIALOGUES

    @property
    def scores_path(self) -> Path:
        return self.path / SCORES

    @property
    def summary_path(self) -> Path:
        return self.path / SUMMARY

    @property
    def evaluated(self) -> bool:
        """Whether `crsim evaluate` (or `crsim run`, which evaluates at the end) wrote its results."""
        return self.scores_path.is_file() and self.summary_path.is_file()

    def dialogues(self) -> Iterator[Dialogue]:
        """The dialogues, streamed; a bad line is a DataError naming the file, record and field."""
        return iter_dialogues(self.dialogues_path)

    def summaries(self) -> list[GroupSummary]:
        """The per CRS × simulator summaries of `summary.json`, once it is checked to describe the
        dialogues and scores as they are now; otherwise a DataError that says to evaluate again."""
        summary = read_summary_file(self.summary_path)
        stale = stale_reason(summary, {"dialogues": self.dialogues_path, "scores": self.scores_path})
        if stale:
            raise DataError(
                f"does not match the run's files: {stale}; run `crsim evaluate {self.path}` again "
                "(LLM answers come from the run's cache)",
                path=str(self.summary_path),
            )
        return summary.groups

    def scores(self) -> Iterator[ScoreRecord]:
        """The records of `scores.jsonl`, streamed; a bad line names the file, record and field."""
        if not self.scores_path.is_file():
            raise DataError("file not found; run `crsim evaluate` first", path=str(self.scores_path))
        with self.scores_path.open("rb") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    yield ScoreRecord.model_validate_json(line)
                except ValidationError as exc:
                    err = exc.errors()[0]
                    field = ".".join(str(p) for p in err["loc"]) or None
                    raise DataError(
                        err["msg"], path=str(self.scores_path), record=number, field=field
                    ) from None


def open_run(path: str | Path) -> RunFolder:
    """A run folder; anything else (a file, a folder without manifest or dialogues) is a DataError."""
    path = Path(path)
    if not path.is_dir():
        raise DataError("not a folder; expected a run folder written by `crsim run`", path=str(path))
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        raise DataError(f"no {MANIFEST}; expected a run folder written by `crsim run`", path=str(path))
    try:
        manifest = json.loads(manifest_path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"not valid JSON ({exc})", path=str(manifest_path)) from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("config", {}), dict):
        raise DataError("expected a JSON object with a `config` object", path=str(manifest_path))
    if not (path / DIALOGUES).is_file():
        raise DataError(f"no {DIALOGUES}; the run has not held any dialogue yet", path=str(path))
    register_config_secrets(manifest.get("config"))  # mask the run's keys in what is made from it
    return RunFolder(path, manifest)


def count_lines(path: str | Path) -> int:
    """Non-blank lines of a file, counted without parsing them."""
    path = Path(path)
    count = 0
    with path.open("rb") as handle:
        for line in handle:
            if line.strip():
                count += 1
    return count


def item_titles(domain: str) -> dict[str, str]:
    """Item id -> "Title (year)" for a run's domain; empty for a domain crsim does not ship."""
    if domain != "movies":
        return {}
    from crsim.data.movies import movie_items

    titles = {}
    for item in movie_items():
        titles[item.id] = f"{item.title} ({item.year})" if item.year else item.title
    return titles
