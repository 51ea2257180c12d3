"""The records of an item file (JSONL or CSV, plain or gzip): read line by line as UTF-8, each record
with its number and line, every record that cannot be read a located problem (never a guess)."""

from __future__ import annotations

import csv
import gzip
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crsim.core.errors import DataError
from crsim.domains.findings import ItemProblems
from crsim.domains.schema import ItemsSpec
from crsim.model.text import may_hold_surrogates

#: The longest CSV cell read, in characters: 128 Ki, the csv module's own default limit, far above
#: any item description (the shipped movie plots are under 5,000) and small enough that an untrusted
#: file cannot make one cell a memory problem. A longer cell is a located problem, not a crash.
MAX_CELL_CHARS = 131_072


@dataclass
class Record:
    """One record of an item file: its number among the records, the line it starts on, its fields."""

    number: int
    line: int
    fields: dict[str, Any]
    csv: bool
    #: The record's JSON text holds an escape of a lone surrogate (its strings must be cleaned).
    surrogates: bool = False

    @property
    def label(self) -> str:
        return f"record {self.number}" + (f" (line {self.line})" if self.csv else "")

    def where(self, path: Path, spec: ItemsSpec) -> str:
        """`file, record N (line L, id 'x')`: enough to find the record in an editor."""
        item_id = self.fields.get(spec.id)
        at = [f"line {self.line}"] if self.csv else []
        if item_id not in (None, ""):
            at.append(f"id {_short(str(item_id))}")
        return f"{path}, record {self.number}" + (f" ({', '.join(at)})" if at else "")


def _short(text: str, keep: int = 40) -> str:
    return repr(text if len(text) <= keep else text[:keep] + "...")


def records(path: Path, spec: ItemsSpec, problems: ItemProblems) -> Iterator[Record]:
    """The records of a JSONL or CSV item file; a record that cannot be read is a problem noted in
    `problems` and skipped. CSV cells are strings, empty ones left out."""
    if not path.is_file():
        raise DataError("file not found; expected an item file (.jsonl, .jsonl.gz or .csv)", path=str(path))
    if path.name.endswith((".csv", ".csv.gz")):
        yield from _csv_records(path, spec, problems)
        return
    if not path.name.endswith((".jsonl", ".jsonl.gz", ".json")):
        raise DataError("unknown item file type; expected .jsonl, .jsonl.gz or .csv", path=str(path))
    for number, line in enumerate(text_lines(path), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.add(f"{path}, record {number}: not valid JSON ({exc.msg})")
            continue
        if not isinstance(record, dict):
            problems.add(f"{path}, record {number}: expected a JSON object (one item per line)")
            continue
        yield Record(number, number, record, csv=False, surrogates=may_hold_surrogates(line))


def _csv_records(path: Path, spec: ItemsSpec, problems: ItemProblems) -> Iterator[Record]:
    """The rows of a CSV item file under its header. A row with more or fewer cells than the header
    (a stray separator or quote) and a cell over `MAX_CELL_CHARS` are problems, never guessed at."""
    lines = _Lines(text_lines(path))
    reader = csv.reader(lines)
    header: list[str] | None = None
    number = 0
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:  # the csv module's own cell limit (or a NUL byte): that row only
            if header is None:
                raise DataError(
                    f"line {start} (the header): not readable as CSV ({exc})", path=str(path)
                ) from None
            number += 1
            problems.add(_unreadable_row(path, spec, header, number, start, lines.last, exc))
            continue
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if header is None:
            header = row
            _check_header(path, header)
            continue
        number += 1
        record = Record(number, start, dict(zip(header, row, strict=False)), csv=True)
        if len(row) != len(header):
            problems.add(
                f"{record.where(path, spec)}: {len(row)} cells; expected {len(header)}, one per "
                "column of the header (a stray separator or quote?)"
            )
            continue
        if max(map(len, row)) > MAX_CELL_CHARS:
            long = next(n for n, cell in zip(header, row, strict=True) if len(cell) > MAX_CELL_CHARS)
            problems.add(f"{record.where(path, spec)}, field '{long}': {_too_long(MAX_CELL_CHARS)}")
            continue
        record.fields = {k: v for k, v in record.fields.items() if v != ""}
        yield record
    if header is None:
        raise DataError("empty file; expected a header row and one row per item", path=str(path))


class _Lines:
    """The lines of a text, remembering the last one handed out (to locate a row the csv module
    refused)."""

    def __init__(self, text: Iterator[str]) -> None:
        self._text, self.last = text, ""

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        self.last = next(self._text)
        return self.last


def _unreadable_row(
    path: Path, spec: ItemsSpec, header: list[str], number: int, line: int, text: str, exc: csv.Error
) -> str:
    """The problem of a row the csv module refused: for an over-long cell, its column (and the id
    when it comes before), read from the start of the row."""
    if "field limit" not in str(exc):
        return f"{path}, record {number} (line {line}): not readable as CSV ({exc})"
    limit = min(csv.field_size_limit(), MAX_CELL_CHARS)
    try:
        cells = next(csv.reader([text[:limit]]), [])
    except csv.Error:
        cells = []
    record = Record(number, line, dict(zip(header, cells[:-1], strict=False)), csv=True)
    column = header[len(cells) - 1] if 0 < len(cells) <= len(header) else None
    field = f", field '{column}'" if column else ""
    return f"{record.where(path, spec)}{field}: {_too_long(limit)}"


def _too_long(limit: int) -> str:
    return f"a cell over {limit:,} characters; expected at most {limit:,} characters per cell"


def _check_header(path: Path, header: list[str]) -> None:
    """Column names are given and distinct (a repeated column would silently shadow the other)."""
    blank = [str(n) for n, name in enumerate(header, start=1) if not name.strip()]
    repeated = sorted({name for name in header if header.count(name) > 1})
    if blank:
        raise DataError(f"line 1: column(s) {', '.join(blank)} of the header have no name", path=str(path))
    if repeated:
        raise DataError(
            f"line 1: column(s) {', '.join(map(repr, repeated))} named twice in the header; expected "
            "distinct names",
            path=str(path),
        )


def text_lines(path: Path) -> Iterator[str]:
    """The lines of a plain or gzip UTF-8 file (line ends kept, a leading BOM dropped), read as they
    are needed: a million-item file read whole held four bytes per character at once. DataError
    naming the byte of the first thing that is not UTF-8, or why the file cannot be read."""
    opener = gzip.open if path.suffix == ".gz" else open
    offset = 0
    try:
        with opener(path, "rb") as handle:
            for number, raw in enumerate(handle):
                start = 3 if number == 0 and raw.startswith(b"\xef\xbb\xbf") else 0
                try:
                    text = raw[start:].decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise DataError(
                        f"not UTF-8 text (byte {offset + start + exc.start})", path=str(path)
                    ) from None
                offset += len(raw)
                if "\r" in text:  # a lone CR ends a line too (as in universal newlines)
                    yield from (piece for piece in _CR_SPLIT.split(text) if piece)
                else:
                    yield text
    except (OSError, EOFError) as exc:
        raise DataError(f"cannot read the file ({exc})", path=str(path)) from None


#: Splits text after a carriage return that no line feed follows.
_CR_SPLIT = re.compile(r"(?<=\r)(?!\n)")
