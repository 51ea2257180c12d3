"""Reading dataset files, plain or gzip-compressed (`name` or `name.gz`), with located errors.

Shipped fixtures and downloaded releases are often compressed; readers open both forms the
same way, and a truncated archive or non-UTF-8 text becomes a `DataError` naming the file.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path

from crsim.core.errors import DataError
from crsim.datasets.base import BadLine, RawRecord
from crsim.model.text import JSONTextError, loads_clean, may_hold_surrogates

_ARCHIVE_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error)


def find_file(folder: Path, name: str) -> Path | None:
    """`folder/name` or `folder/name.gz`, whichever exists (the plain file first)."""
    for candidate in (folder / name, folder / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    return None


def open_binary(path: Path) -> gzip.GzipFile | io.BufferedReader:
    if path.suffix == ".gz":
        return gzip.GzipFile(path, "rb")
    return open(path, "rb")


def parsed(record: RawRecord) -> RawRecord:
    """`record` itself, or its error if its line could not be read."""
    if isinstance(record.data, BadLine):
        raise record.error(record.data.message)
    return record


def iter_lines(path: Path) -> Iterator[tuple[int, str | BadLine]]:
    """(line number, text) of a possibly compressed file; a non-UTF-8 line gives a `BadLine`.

    A damaged archive ends the file with a DataError (nothing after it can be read).
    """
    number = 0
    try:
        with open_binary(path) as handle:
            for number, raw in enumerate(handle, start=1):
                try:
                    yield number, raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    yield number, BadLine(f"not UTF-8 text (byte {exc.start})")
    except _ARCHIVE_ERRORS as exc:
        raise DataError(f"damaged or truncated archive ({exc})", path=str(path), record=number + 1) from None


def read_text(path: Path) -> str:
    """A whole possibly compressed UTF-8 file."""
    try:
        with open_binary(path) as handle:
            data = handle.read()
    except _ARCHIVE_ERRORS as exc:
        raise DataError(f"damaged or truncated archive ({exc})", path=str(path)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text (byte {exc.start})", path=str(path)) from None


def read_json(path: Path) -> object:
    """A whole possibly compressed JSON file (as parsed: dataset records are cleaned by the driver)."""
    return _parse(read_text(path), path)


def _parse(text: str, path: Path) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})", path=str(path)
        ) from None
    except (ValueError, RecursionError) as exc:
        raise DataError(f"not readable JSON ({_unparsable(exc)})", path=str(path)) from None


def _unparsable(exc: ValueError | RecursionError) -> str:
    """Why valid-looking JSON could not be parsed: an over-long integer or too deep nesting."""
    return "nested too deeply" if isinstance(exc, RecursionError) else str(exc).split(":")[0]


def iter_json_lines(path: Path) -> Iterator[RawRecord]:
    """Records of a possibly compressed JSON Lines file; an unreadable line's data is a `BadLine`."""
    for number, line in iter_lines(path):
        if isinstance(line, BadLine):
            yield RawRecord(path, number, line)
            continue
        if not line.strip():
            continue
        try:
            data, replaced = loads_clean(line)
        except json.JSONDecodeError as exc:
            yield RawRecord(path, number, BadLine(f"not valid JSON ({exc.msg}, column {exc.colno})"))
        except JSONTextError as exc:
            yield RawRecord(path, number, BadLine(f"not readable JSON ({exc})"))
        else:
            yield RawRecord(path, number, data, replaced)


def iter_json_array(path: Path) -> Iterator[RawRecord]:
    """Records of a (possibly compressed) JSON file holding an array of records."""
    text = read_text(path)
    data = _parse(text, path)
    if not isinstance(data, list):
        raise DataError(f"expected a JSON array of records, got {type(data).__name__}", path=str(path))
    check = may_hold_surrogates(text)  # only then can a record hold a lone surrogate
    for number, record in enumerate(data, start=1):
        yield RawRecord(path, number, record, None if check else 0)


def iter_files(src: Path, pattern: str = "*.json") -> Iterator[Path]:
    """`src` itself, or the files in folder `src` matching `pattern` (or gzipped), in name order."""
    if not src.is_dir():
        yield src
        return
    files = sorted(p for p in src.iterdir() if fnmatch(p.name, pattern) or fnmatch(p.name, pattern + ".gz"))
    if not files:
        raise DataError(f"no {pattern} files in this folder", path=str(src))
    yield from files
