"""Property: whatever a reader is fed, conversion raises `DataError` or succeeds, never anything else.

Every registered reader (the built-in modules of `crsim.datasets`, plus a small reader defined
here) gets (a) real records from its test fixtures with keys dropped, types changed, strings
truncated and undecodable characters injected, and (b) copies of its fixture files truncated,
with non-UTF-8 bytes injected, emptied, or (for .gz) with the archive cut short. Examples are
bounded and the deadline is off, so the whole file runs in seconds.
"""

from __future__ import annotations

import contextlib
import copy
import gzip
import itertools
import json
import pkgutil
import shutil
import tempfile
from collections.abc import Callable, Iterator
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import crsim.datasets
from crsim.core.errors import DataError
from crsim.core.plugins import Params as ComponentParams
from crsim.datasets.base import DatasetReader, RawRecord, convert_dataset, dataset, dataset_registry
from crsim.model import Dialogue, Utterance

FIXTURES = Path(__file__).parents[1] / "fixtures"
#: Readers whose fixtures are not (only) `tests/fixtures/<reader name>`: each folder is a case.
FIXTURES_OF = {
    "dialoguekit": [FIXTURES / "moviebot"],
    "inspired": [FIXTURES / "inspired" / "original", FIXTURES / "inspired" / "processed"],
}
SEEDS = 3  # records per reader used as seeds for mutation
DIALOGUES_READ = 3  # dialogues converted after a file mutation (errors near the start surface there)
SETTINGS = settings(
    max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)

for module in pkgutil.iter_modules(crsim.datasets.__path__):
    import_module(f"crsim.datasets.{module.name}")


class KeyedReader(DatasetReader):
    """A small reader defined here: a JSON object of id -> list of [role, text] pairs."""

    class Params(ComponentParams):
        pass

    def records(self, src: Path) -> Iterator[RawRecord]:
        try:
            data = json.loads(src.read_bytes().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DataError(f"not readable JSON ({exc})", path=str(src)) from None
        if not isinstance(data, dict):
            raise DataError("expected a JSON object", path=str(src))
        for number, (key, turns) in enumerate(data.items(), start=1):
            yield RawRecord(src, number, {"id": key, "turns": turns})

    def convert(self, record: RawRecord) -> Dialogue:
        turns = record.get("turns", list)
        utterances = []
        for n, turn in enumerate(turns):
            if not (isinstance(turn, list) and len(turn) == 2 and all(isinstance(t, str) for t in turn)):
                raise record.error("expected [role, text]", f"turns[{n}]")
            if turn[0] not in ("user", "crs"):
                raise record.error(f"unknown role {turn[0]!r}", f"turns[{n}][0]")
            utterances.append(Utterance(role=turn[0], text=turn[1]))
        return Dialogue(id=f"keyed/{record.get('id', str)}", utterances=utterances)


@pytest.fixture(autouse=True)
def _test_components() -> None:
    """This module's test reader, registered for each test (the conftest fixture unregisters it)."""
    dataset("test_keyed")(KeyedReader)


_KEYED_DATA = {"a": [["user", "hi"], ["crs", "Heat (1995)?"]], "b": [["user", "thanks, bye"]]}


def _builtin_readers() -> list[str]:
    names = []
    for name in dataset_registry.names():
        if dataset_registry.get(name).__module__.startswith("crsim."):
            names.append(name)
    return names


READERS = [*_builtin_readers(), "test_keyed"]
#: (reader, fixture folder) cases; the small reader writes its own file.
CASES = [
    (name, fixture)
    for name in READERS
    for fixture in FIXTURES_OF.get(name, [FIXTURES / name] if name != "test_keyed" else [None])
]


def _source(name: str, fixture: Path | None, folder: Path) -> Path:
    """A private copy of the reader's fixture (file or folder) inside `folder`."""
    if fixture is None:
        path = folder / "keyed.json"
        path.write_text(json.dumps(_KEYED_DATA))
        return path
    if not fixture.exists():
        pytest.fail(f"reader {name!r} has no fixture at {fixture}; add one or map it in FIXTURES_OF")
    target = folder / fixture.name
    shutil.copytree(fixture, target, ignore=shutil.ignore_patterns("*.md"))
    return target


def _reader(name: str) -> DatasetReader:
    reader = dataset_registry.get(name)(dataset_registry.params(name, {}))
    assert isinstance(reader, DatasetReader)
    return reader


def test_every_builtin_reader_is_covered() -> None:
    assert len(READERS) >= 2 and "test_keyed" in READERS


# --- record mutations ------------------------------------------------------------------------------

_REPLACEMENTS = [None, 0, -1, 2.5, True, "", "x", [], {}, [None], {"": None}, "@999999999"]


def _paths(data: Any, prefix: tuple[Any, ...] = (), limit: int = 400) -> list[tuple[Any, ...]]:
    """Paths (key/index tuples) to every value inside `data`, breadth-first, at most `limit`."""
    found: list[tuple[Any, ...]] = []
    queue = [(prefix, data)]
    while queue and len(found) < limit:
        path, value = queue.pop(0)
        found.append(path)
        children = (
            value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        )
        queue.extend(((*path, k), v) for k, v in children)
    return found


def _mutate_at(value: Any, op: str, draw: Callable[[Any], Any]) -> tuple[bool, Any]:
    """(keep, new value) for one operation on one value; keep=False means drop it from its parent."""
    if op == "drop":
        return False, None
    if op == "retype":
        return True, draw(st.sampled_from(_REPLACEMENTS))
    if op == "truncate" and isinstance(value, (str, list, bytes)):
        return True, value[: draw(st.integers(0, max(0, len(value) - 1)))]
    if op == "undecodable" and isinstance(value, str):
        at = draw(st.integers(0, len(value)))
        return True, value[:at] + "\udcff\ufffe" + value[at:]
    if op == "undecodable" and isinstance(value, bytes):
        at = draw(st.integers(0, len(value)))
        return True, value[:at] + b"\xff\xfe" + value[at:]
    return True, type(value)() if isinstance(value, (dict, list, str)) else None


def _mutated(data: Any, draw: Callable[[Any], Any]) -> Any:
    data = copy.deepcopy(data)
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(data)
        path = paths[draw(st.integers(0, len(paths) - 1))]
        op = draw(st.sampled_from(["drop", "retype", "truncate", "undecodable", "empty"]))
        if not path:
            keep, data = _mutate_at(data, op, draw)
            data = data if keep else None
            continue
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        keep, new = _mutate_at(parent[path[-1]], op, draw)
        if keep:
            parent[path[-1]] = new
        else:
            del parent[path[-1]]
    return data


def _convert_only(reader: DatasetReader, src: Path, record: RawRecord) -> None:
    """Run the driver on one record (the reader's own `records` already ran, so its state is set)."""
    reader.records = lambda _src: iter([record])  # type: ignore[method-assign]
    list(convert_dataset(reader, src))


@pytest.mark.parametrize(("name", "fixture"), CASES)
def test_mutated_records_raise_data_error_or_convert(name: str, fixture: Path | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        src = _source(name, fixture, Path(folder))
        reader = _reader(name)
        seeds = list(itertools.islice(reader.records(src), SEEDS))
        assert seeds, f"no records in the fixture of {name}"

        @SETTINGS
        @given(data=st.data())
        def check(data: st.DataObject) -> None:
            seed = seeds[data.draw(st.integers(0, len(seeds) - 1))]
            record = RawRecord(seed.path, seed.number, _mutated(seed.data, data.draw))
            with contextlib.suppress(DataError):
                _convert_only(reader, src, record)

        check()


# --- file mutations --------------------------------------------------------------------------------


def _files(src: Path) -> list[Path]:
    return sorted(p for p in ([src] if src.is_file() else src.rglob("*")) if p.is_file())


def _damage(path: Path, op: str, at: int) -> None:
    """Apply one file-level fault near the start of `path` (first 8 KB of its text)."""
    raw = path.read_bytes()
    zipped = path.suffix == ".gz"
    if zipped and op == "cut_archive":
        path.write_bytes(raw[: min(at, len(raw) - 1)])
        return
    text = gzip.decompress(raw) if zipped else raw
    at = min(at, len(text))
    text = {"truncate": text[:at], "non_utf8": text[:at] + b"\xff\xc3(" + text[at:], "empty": b""}.get(
        op, text[:at]
    )
    path.write_bytes(gzip.compress(text, compresslevel=1) if zipped else text)


@pytest.mark.parametrize(("name", "fixture"), CASES)
def test_damaged_files_raise_data_error_or_convert(name: str, fixture: Path | None) -> None:
    @settings(SETTINGS, max_examples=12)
    @given(
        which=st.integers(0, 50),
        op=st.sampled_from(["truncate", "non_utf8", "empty", "cut_archive"]),
        at=st.integers(0, 8192),
    )
    def check(which: int, op: str, at: int) -> None:
        with tempfile.TemporaryDirectory() as folder:
            src = _source(name, fixture, Path(folder))
            files = _files(src)
            _damage(files[which % len(files)], op, at)
            with contextlib.suppress(DataError):
                reader = _reader(name)
                list(itertools.islice(convert_dataset(reader, src), DIALOGUES_READ))

    check()
