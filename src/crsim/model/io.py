"""Reading and checking files in the unified format."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ValidationError

from crsim.core.errors import DataError
from crsim.core.jsonl import jsonl_lines, jsonl_numbered
from crsim.model.dialogue import Dialogue
from crsim.model.items import Item


def iter_dialogues(path: str | Path) -> Iterator[Dialogue]:
    """Dialogues of a JSONL file, streamed; bad bytes, JSON or fields raise DataError naming the line."""
    path = Path(path)
    for _, dialogue in iter_dialogue_records(path):
        yield dialogue


def iter_dialogue_records(path: str | Path) -> Iterator[tuple[int, Dialogue]]:
    """(line number, dialogue) for each non-blank line of a JSONL file; errors as `iter_dialogues`."""
    path = Path(path)
    if not path.is_file():
        raise DataError("file not found; expected dialogues in JSON Lines", path=str(path))
    yield from jsonl_numbered(path, Dialogue.model_validate_json)


@dataclass(frozen=True)
class Problem:
    """One invalid record: where it is and what was expected."""

    path: str
    record: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}, record {self.record}"
        return f"{where}, field '{self.field}': {self.message}" if self.field else f"{where}: {self.message}"


def _records(path: Path) -> Iterator[tuple[int, str | Problem]]:
    """(record number, JSON text) from a JSON Lines file or a JSON array file, either maybe gzipped.

    JSON Lines are split on "\\n" only (not on the other characters `str.splitlines` treats as line
    ends, which JSON strings may hold unescaped), and decoded line by line, so a line that is not
    UTF-8 is reported as a problem of that record instead of ending the check.
    """
    opener = gzip.open if path.suffix == ".gz" else open
    if path.name.endswith((".json", ".json.gz")):
        try:
            with opener(path, "rb") as whole:
                data = json.loads(whole.read())
        except UnicodeDecodeError as exc:
            raise DataError(f"not UTF-8 text (byte {exc.start})", path=str(path)) from None
        except json.JSONDecodeError as exc:
            raise DataError(f"not valid JSON ({exc.msg} at line {exc.lineno})", path=str(path)) from None
        records = data if isinstance(data, list) else [data]
        for number, record in enumerate(records, start=1):
            yield number, json.dumps(record)
        return
    for number, raw in jsonl_lines(path):
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield number, Problem(str(path), number, "", f"not UTF-8 text (byte {exc.start})")


def validate_file(
    path: str | Path, kind: type[BaseModel] = Dialogue, limit: int = 50
) -> tuple[int, list[Problem]]:
    """Validate every record of `path` against `kind`; returns (records seen, problems found)."""
    path = Path(path)
    if not path.exists():
        raise DataError("file not found", path=str(path))
    problems: list[Problem] = []
    count = 0
    try:
        for number, raw in _records(path):
            count += 1
            problems.extend([raw] if isinstance(raw, Problem) else _check(path, number, raw, kind))
            if len(problems) >= limit:
                return count, problems[:limit]
    except (OSError, EOFError) as exc:  # a truncated or non-gzip .gz file
        raise DataError(f"cannot read the file ({exc})", path=str(path)) from None
    return count, problems


def _check(path: Path, number: int, raw: str, kind: type[BaseModel]) -> list[Problem]:
    try:
        kind.model_validate_json(raw)
    except ValidationError as exc:
        return [
            Problem(str(path), number, ".".join(str(p) for p in err["loc"]), err["msg"])
            for err in exc.errors()
        ]
    return []


RECORD_KINDS: dict[str, type[BaseModel]] = {"dialogues": Dialogue, "items": Item}
