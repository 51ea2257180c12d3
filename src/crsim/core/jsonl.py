"""JSON Lines: the one reader of the package's line-per-record files (dialogues, scores, items, ...).

A record is a non-blank line, split on "\\n" only (not on the other characters `str.splitlines` treats
as line ends, which JSON strings may hold unescaped), decoded line by line. Reading is strict (the first
bad line is a DataError naming the file, the record and the field) or lenient (bad lines are collected
as `Unreadable`, located, and skipped, so one bad record never sinks a report).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from crsim.core.errors import DataError

T = TypeVar("T")


@dataclass(frozen=True)
class Unreadable:
    """A line of a file that could not be read as its record type: where, and what was wrong."""

    path: str
    line: int
    problem: str
    field: str | None = None


def jsonl_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, raw bytes) of each non-blank line of `path` (gzipped when it ends in .gz)."""
    with gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.strip():
                yield number, raw


def jsonl_numbered(
    path: str | Path,
    parse: Callable[[str], T],
    bad: list[Unreadable] | None = None,
) -> Iterator[tuple[int, T]]:
    """(line number, `parse(text)`) of each record. With `bad` None a line that is not UTF-8, not JSON
    or not valid is a DataError naming file, record and field; otherwise it is appended to `bad`."""
    path = Path(path)
    for number, raw in jsonl_lines(path):
        try:
            yield number, parse(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            _problem(bad, path, number, f"not UTF-8 text (byte {exc.start})", None)
        except ValidationError as exc:
            err = exc.errors()[0]
            _problem(bad, path, number, err["msg"], ".".join(str(p) for p in err["loc"]) or None)
        except json.JSONDecodeError as exc:
            _problem(bad, path, number, f"not valid JSON ({exc.msg})", None)


def jsonl_records(
    path: str | Path, parse: Callable[[str], T], bad: list[Unreadable] | None = None
) -> Iterator[T]:
    """`parse(text)` of each record of `path`, strict or lenient as `jsonl_numbered`."""
    for _, record in jsonl_numbered(path, parse, bad):
        yield record


def _problem(bad: list[Unreadable] | None, path: Path, number: int, message: str, field: str | None) -> None:
    if bad is None:
        raise DataError(message, path=str(path), record=number, field=field) from None
    bad.append(Unreadable(str(path), number, f"field '{field}': {message}" if field else message, field))
