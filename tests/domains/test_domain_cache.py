"""The domain cache on disk (crsim.domains.disk_cache): a hit serves the built parts, a changed catalogue
misses, a damaged or foreign entry is rebuilt with a warning, and concurrent builders leave one sound
entry. Small catalogues, with the size threshold lowered to 0."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.crs.item_index import item_index
from crsim.crs.retrieval import text_index
from crsim.domains import _read, domain_named
from crsim.domains import disk_cache as domain_cache
from crsim.language.lexicon import Lexicon, lexicon_for
from crsim.model.domain import KEPT_BUILDS, Domain, built_parts

SRC = Path(__file__).resolve().parents[2] / "src"

DOMAIN = """\
name: tiny
item_noun: restaurant
items: {path: items.jsonl, id: id, title: name}
slots:
  cuisine: {kind: categorical, requestable: true, cues: [food, cuisine]}
  features: {kind: multi, requestable: true}
  rating: {kind: numeric, unit: stars, requestable: true}
  description: {kind: text, requestable: true}
"""
CUISINES = ("italian", "thai", "indian", "french")
FEATURES = ("parking", "wifi", "outdoor seating")


def write_catalogue(folder: Path, count: int = 30, renamed: int | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "items.jsonl").open("w", encoding="utf-8") as out:
        for n in range(count):
            name = f"Zubalo Kitchen {n}" if n != renamed else "Quimelo Garden"
            record = {
                "id": f"v{n}",
                "name": name,
                "cuisine": CUISINES[n % 4],
                "features": list(FEATURES[: n % 3 + 1]),
                "rating": n % 5 + 1,
                "description": f"a {CUISINES[n % 4]} place with {FEATURES[n % 3]} near the river",
            }
            out.write(json.dumps(record) + "\n")
    (folder / "domain.yaml").write_text(DOMAIN, encoding="utf-8")
    return folder / "domain.yaml"


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("CRSIM_CACHE_DIR", str(folder))
    monkeypatch.setattr(domain_cache, "MIN_CACHED_ITEMS", 0)
    _read.cache_clear()
    yield folder / "domains"
    _read.cache_clear()


def fresh(path: Path) -> Domain:
    """The domain as a new process would get it (the per-process memo emptied)."""
    _read.cache_clear()
    return domain_named(str(path))


def build_all(domain: Domain) -> None:
    """What an abus x retrieval/popular run builds from the catalogue."""
    lexicon_for(domain)
    item_index(domain)
    text_index(domain)
    _ = domain.items.linker


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.domain"))


def test_a_second_read_is_served_from_the_cache_with_the_same_answers(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_catalogue(tmp_path / "tiny")
    first = fresh(path)
    build_all(first)
    written = domain_cache.save_domain(first)
    assert written is not None and entries(cache_dir) == [written]
    assert domain_cache.save_domain(first) is None  # nothing new built: not written again

    def no_rebuild(self: Lexicon, domain: Domain) -> None:
        raise AssertionError("the lexicon was built again")

    monkeypatch.setattr(Lexicon, "__init__", no_rebuild)
    second = fresh(path)
    assert second is not first
    assert set(built_parts(second)) == KEPT_BUILDS & set(built_parts(first))
    assert "linker" in second.items.__dict__
    assert lexicon_for(second).values.entries == lexicon_for(first).values.entries
    assert [i.model_dump() for i in second.items] == [i.model_dump() for i in first.items]
    text = "I loved Zubalo Kitchen 7, the thai one"
    assert second.items.linker.link(text) == first.items.linker.link(text)
    query = text_index(first).terms("thai river parking")
    assert np.array_equal(text_index(second).similarity(query), text_index(first).similarity(query))
    assert text_index(second).terms("thai river") == text_index(first).terms("thai river")
    assert np.array_equal(
        item_index(second).positions("cuisine", "thai"), item_index(first).positions("cuisine", "thai")
    )
    assert np.array_equal(item_index(second).popularity, item_index(first).popularity)


def test_a_changed_catalogue_is_read_again(tmp_path: Path, cache_dir: Path) -> None:
    path = write_catalogue(tmp_path / "tiny")
    first = fresh(path)
    build_all(first)
    domain_cache.save_domain(first)
    write_catalogue(tmp_path / "tiny", renamed=3)
    second = fresh(path)
    assert built_parts(second) == {}
    assert second.items["v3"].title == "Quimelo Garden"
    build_all(second)
    assert domain_cache.save_domain(second) is not None
    assert len(entries(cache_dir)) == 2  # one per catalogue content
    assert fresh(path).items["v3"].title == "Quimelo Garden"


def _damage(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(domain_cache.MAGIC) + 100] ^= 0xFF
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-200])


def _not_an_entry(path: Path) -> None:
    path.write_bytes(b"hello\n")


@pytest.mark.parametrize("spoil", [_damage, _truncate, _not_an_entry])
def test_a_damaged_entry_is_rebuilt_with_a_warning(
    tmp_path: Path, cache_dir: Path, caplog: pytest.LogCaptureFixture, spoil: object
) -> None:
    path = write_catalogue(tmp_path / "tiny")
    first = fresh(path)
    build_all(first)
    entry = domain_cache.save_domain(first)
    assert entry is not None
    spoil(entry)  # type: ignore[operator]
    with caplog.at_level(logging.WARNING, logger="crsim.domains.disk_cache"):
        second = fresh(path)
    assert built_parts(second) == {}  # read from the catalogue, nothing taken from the entry
    assert len(second.items) == 30
    assert any("rebuilding it" in r.getMessage() and str(entry) in r.getMessage() for r in caplog.records)
    build_all(second)
    assert domain_cache.save_domain(second) == entry
    assert set(built_parts(fresh(path))) >= {k for k in KEPT_BUILDS if k in built_parts(second)}


def test_an_entry_of_other_code_is_rebuilt_with_a_warning(
    tmp_path: Path, cache_dir: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_catalogue(tmp_path / "tiny")
    first = fresh(path)
    build_all(first)
    entry = domain_cache.save_domain(first)
    monkeypatch.setattr(domain_cache, "code_fingerprint", lambda: "another version of crsim")
    with caplog.at_level(logging.WARNING, logger="crsim.domains.disk_cache"):
        second = fresh(path)
    assert built_parts(second) == {}
    assert any("other code" in r.getMessage() for r in caplog.records)
    build_all(second)
    assert domain_cache.save_domain(second) == entry  # replaced, written by this code
    assert domain_cache.read_header(entry)["code"] == "another version of crsim"  # type: ignore[index]


def test_caching_off_keeps_nothing(tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRSIM_CACHE_DIR", "off")
    path = write_catalogue(tmp_path / "tiny")
    domain = fresh(path)
    build_all(domain)
    assert domain_cache.save_domain(domain) is None
    assert not cache_dir.exists()


def test_small_catalogues_are_not_kept(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(domain_cache, "MIN_CACHED_ITEMS", 31)
    domain = fresh(write_catalogue(tmp_path / "tiny"))
    build_all(domain)
    assert domain_cache.save_domain(domain) is None


BUILDER = """
import sys
from crsim.domains import disk_cache as cache, domain_named
from crsim.crs.item_index import item_index
from crsim.crs.retrieval import text_index
from crsim.language.lexicon import lexicon_for
cache.MIN_CACHED_ITEMS = 0
domain = domain_named(sys.argv[1])
lexicon_for(domain); item_index(domain); text_index(domain); domain.items.linker
cache.save_domain(domain)
print(len(domain.items))
"""


def test_concurrent_builders_leave_one_sound_entry(tmp_path: Path, cache_dir: Path) -> None:
    path = write_catalogue(tmp_path / "tiny", count=400)
    env = {**os.environ, "CRSIM_CACHE_DIR": str(cache_dir.parent), "PYTHONPATH": str(SRC)}
    builders = [
        subprocess.Popen(
            [sys.executable, "-c", BUILDER, str(path)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(3)
    ]
    outputs = [b.communicate(timeout=600) for b in builders]
    assert [b.returncode for b in builders] == [0, 0, 0], [err.decode()[-2000:] for _, err in outputs]
    assert [out.decode().split() for out, _ in outputs] == [["400"]] * 3
    assert len(entries(cache_dir)) == 1
    assert not list(cache_dir.glob("*.part"))
    loaded = fresh(path)
    assert set(built_parts(loaded)) == {k for k in KEPT_BUILDS if k.startswith("crsim.")}
    assert len(loaded.items) == 400


def test_the_cache_command_lists_and_clears_entries(tmp_path: Path, cache_dir: Path) -> None:
    domain = fresh(write_catalogue(tmp_path / "tiny"))
    build_all(domain)
    entry = domain_cache.save_domain(domain)
    assert entry is not None
    runner = CliRunner()
    listed = runner.invoke(app, ["cache", "domains", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.output)["entries"]
    assert [(r["path"], r["domain"], r["items"]) for r in rows] == [(str(entry), "tiny", 30)]
    cleared = runner.invoke(app, ["cache", "domains", "--clear", "--yes"])
    assert cleared.exit_code == 0 and "removed 1 built domains" in cleared.output
    assert entries(cache_dir) == []


def test_the_streamed_item_file_keeps_records_offsets_and_cleaning(tmp_path: Path) -> None:
    """The reader streams lines (it read the whole file at once): a BOM, CRLF and lone-CR line ends
    still give one record per line, a byte that is not UTF-8 is located in the whole file, and a lone
    surrogate escaped in JSON is replaced and counted."""
    from crsim.domains import check_domain_file

    folder = tmp_path / "tiny"
    write_catalogue(folder, count=4)
    lines = (folder / "items.jsonl").read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1].replace("Zubalo Kitchen 1", "Zubalo \\ud800Kitchen 1")
    (folder / "items.jsonl").write_bytes(
        b"\xef\xbb\xbf" + (lines[0] + "\r\n" + lines[1] + "\r" + lines[2] + "\n" + lines[3] + "\n").encode()
    )
    check = check_domain_file(folder / "domain.yaml")
    assert check.ok, check.problems
    assert check.domain is not None and check.domain.items.ids == ["v0", "v1", "v2", "v3"]
    assert check.domain.items["v1"].title == "Zubalo \ufffdKitchen 1"
    assert check.domain.items.replaced_code_points == 1

    good = (lines[0] + "\n").encode()
    before = b'{"id": "v9", "name": "caf'
    (folder / "items.jsonl").write_bytes(good + before + b'\xe9"}\n')
    check = check_domain_file(folder / "domain.yaml")
    at = len(good) + len(before)
    assert any(f"not UTF-8 text (byte {at})" in p for p in check.problems), check.problems
