"""`crsim data download` end to end against a local HTTP server on 127.0.0.1 (never the internet).

The server serves a mirror folder built from the test fixtures (the ReDial test split, the IARD
gold annotations); archives are zipped here, and a corrupted copy, a truncated copy and missing
files cover the failure paths: each must end in a clear error and leave no file behind.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli.data import data_app
from crsim.core.errors import CrsimError, DataError
from crsim.datasets.download import BASE_URL_ENV, CATALOG, DatasetSource, SourceFile, download_dataset
from support import CountingProgress

runner = CliRunner()
FIXTURES = Path(__file__).parents[1] / "fixtures"


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """(base URL, folder) of a local server; tests put files into the folder."""
    root = tmp_path / "mirror"
    root.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()


def _unzipped(name: str) -> bytes:
    with gzip.open(FIXTURES / "redial" / f"{name}.gz", "rb") as handle:
        return handle.read()


def _redial_zip(path: Path) -> bytes:
    """A ReDial-shaped archive from the fixtures: the files sit in a folder, as in many zips."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("redial/test_data.jsonl", _unzipped("test_data.jsonl"))
        archive.writestr("redial/movies_with_mentions.csv", _unzipped("movies_with_mentions.csv"))
    return path.read_bytes()


def _catalog(sha256: str | None) -> dict[str, DatasetSource]:
    zipped = SourceFile(
        url="https://example.invalid/redial.zip",
        path="redial.zip",
        kind="zip",
        sha256=sha256,
        sha256_source="the test" if sha256 else None,
        members=["test_data.jsonl", "movies_with_mentions.csv"],
    )
    return {
        "redial": DatasetSource(
            name="redial", description="", homepage="", licence="CC BY 4.0", files=[zipped]
        )
    }


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_verified_archive_is_extracted(mirror: tuple[str, Path], tmp_path: Path) -> None:
    base, root = mirror
    data = _redial_zip(root / "redial" / "redial.zip")
    out = tmp_path / "out"
    received = CountingProgress()
    written = download_dataset(
        "redial", out, base_url=base, catalog=_catalog(hashlib.sha256(data).hexdigest()), progress=received
    )
    assert received.done == len(data)  # progress counts the bytes received
    assert [p.name for p in written] == ["test_data.jsonl", "movies_with_mentions.csv"]
    assert (out / "redial" / "test_data.jsonl").read_bytes() == _unzipped("test_data.jsonl")
    assert _files(out) == ["redial/movies_with_mentions.csv", "redial/test_data.jsonl"]


def test_checksum_mismatch_leaves_nothing(mirror: tuple[str, Path], tmp_path: Path) -> None:
    base, root = mirror
    _redial_zip(root / "redial" / "redial.zip")
    out = tmp_path / "out"
    with pytest.raises(DataError, match=r"sha256 mismatch: expected 0{64} \(stated in the test\)"):
        download_dataset("redial", out, base_url=base, catalog=_catalog("0" * 64))
    assert _files(out) == []


def _corrupt(data: bytes) -> bytes:
    """Flip bytes inside the first member's compressed data (the archive still opens)."""
    middle = len(data) // 4
    return data[:middle] + bytes(b ^ 0xFF for b in data[middle : middle + 64]) + data[middle + 64 :]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_corrupt, "(fails its CRC check|not a valid zip archive)"),
        (lambda data: data[: len(data) // 2], "not a valid zip archive"),
    ],
)
def test_damaged_archive_is_rejected_without_leftovers(
    mirror: tuple[str, Path], tmp_path: Path, damage: object, message: str
) -> None:
    base, root = mirror
    path = root / "redial" / "redial.zip"
    path.write_bytes(damage(_redial_zip(path)))  # type: ignore[operator]
    out = tmp_path / "out"
    with pytest.raises(DataError, match=message):
        download_dataset("redial", out, base_url=base, catalog=_catalog(None))
    assert _files(out) == []


def test_archive_without_the_expected_files(mirror: tuple[str, Path], tmp_path: Path) -> None:
    base, root = mirror
    (root / "redial").mkdir()
    with zipfile.ZipFile(root / "redial" / "redial.zip", "w") as archive:
        archive.writestr("readme.txt", "nothing here")
    with pytest.raises(
        DataError, match=re.escape("lacks the expected file(s) test_data.jsonl, movies_with_mentions.csv")
    ):
        download_dataset("redial", tmp_path / "out", base_url=base, catalog=_catalog(None))
    assert _files(tmp_path / "out") == []


def test_cli_fetches_from_a_mirror_given_by_environment(
    mirror: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, root = mirror
    target = root / "iard" / "umap2020_IARD_Cai.json"
    target.parent.mkdir()
    with gzip.open(FIXTURES / "iard" / "formatted_IARD_annotated_gold.json.gz", "rb") as handle:
        target.write_bytes(handle.read())
    monkeypatch.setenv(BASE_URL_ENV, base)
    result = runner.invoke(data_app, ["download", "iard", "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "iard" / "umap2020_IARD_Cai.json").read_bytes() == target.read_bytes()
    assert "iard: MIT" in result.output


def test_cli_404_names_the_url_and_keeps_earlier_files_only(mirror: tuple[str, Path], tmp_path: Path) -> None:
    base, root = mirror
    first = root / "crsarena_dial" / "data" / "crs_arena_dial_open.json"
    first.parent.mkdir(parents=True)
    first.write_text(json.dumps([{"conversation ID": "x"}]))
    out = tmp_path / "out"
    result = runner.invoke(data_app, ["download", "crsarena_dial", "-o", str(out), "--base-url", base])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{base}/crsarena_dial/data/crs_arena_dial_closed.json: download failed: HTTP 404" in result.output
    # the complete, verified first file stays; nothing partial of the second
    assert _files(out) == ["crsarena_dial/crs_arena_dial_open.json"]


def test_cli_rejects_a_release_that_fails_the_published_checksum(
    mirror: tuple[str, Path], tmp_path: Path
) -> None:
    base, root = mirror
    _redial_zip(root / "redial" / "redial_dataset.zip")
    out = tmp_path / "out"
    result = runner.invoke(data_app, ["download", "redial", "-o", str(out), "--base-url", base])
    assert result.exit_code == 2
    assert "sha256 mismatch" in result.output and CATALOG["redial"].files[0].sha256 in result.output  # type: ignore[operator]
    assert _files(out) == []


def test_invalid_json_and_unreachable_server(mirror: tuple[str, Path], tmp_path: Path) -> None:
    base, root = mirror
    (root / "iard").mkdir()
    (root / "iard" / "umap2020_IARD_Cai.json").write_text('{"truncated": [1, 2')
    with pytest.raises(DataError, match="not valid JSON"):
        download_dataset("iard", tmp_path / "out", base_url=base)
    assert _files(tmp_path / "out") == []
    with pytest.raises(DataError, match="download failed"):
        download_dataset("iard", tmp_path / "out", base_url="http://127.0.0.1:9", timeout=5)


def test_unknown_dataset_lists_the_catalog(tmp_path: Path) -> None:
    with pytest.raises(
        CrsimError, match="unknown dataset 'nope' to download; expected one of: crsarena_dial, crsarena_eval"
    ):
        download_dataset("nope", tmp_path)


def test_catalog_states_licence_and_checksum_honestly() -> None:
    for name, source in CATALOG.items():
        assert source.name == name and source.licence and source.homepage.startswith("https://")
        for file in source.files:
            assert file.url.startswith("https://") and not file.path.startswith("/")
            assert (file.sha256 is None) == (file.sha256_source is None)
            assert file.sha256 is None or re.fullmatch("[0-9a-f]{64}", file.sha256)
            assert (file.kind == "zip") == bool(file.members)


def _short_body_server() -> tuple[socket.socket, threading.Thread]:
    """A raw server that promises 100,000 bytes, sends 20 and hangs up."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        with contextlib.suppress(OSError):
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b'{"truncated": [1, 2,')

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener, thread


def test_a_connection_closed_mid_body_is_a_clear_error_without_leftovers(tmp_path: Path) -> None:
    listener, thread = _short_body_server()
    base = f"http://127.0.0.1:{listener.getsockname()[1]}"
    try:
        with pytest.raises(DataError, match="download failed: connection closed after 20 of 100000 bytes"):
            download_dataset("iard", tmp_path / "out", base_url=base, timeout=5)
    finally:
        listener.close()
        thread.join(timeout=5)
    assert _files(tmp_path / "out") == []


def test_json_beyond_python_limits_is_rejected(mirror: tuple[str, Path], tmp_path: Path) -> None:
    base, root = mirror
    (root / "iard").mkdir()
    (root / "iard" / "umap2020_IARD_Cai.json").write_text('{"n": ' + "9" * 5000 + "}")
    with pytest.raises(DataError, match="not readable JSON"):
        download_dataset("iard", tmp_path / "out", base_url=base)
    assert _files(tmp_path / "out") == []


def test_cli_shows_the_bytes_received_off_a_terminal(mirror: tuple[str, Path], tmp_path: Path) -> None:
    """A real child process whose stderr is a pipe: plain progress lines count the bytes (issue 20)."""
    base, root = mirror
    target = root / "iard" / "umap2020_IARD_Cai.json"
    target.parent.mkdir()
    with gzip.open(FIXTURES / "iard" / "formatted_IARD_annotated_gold.json.gz", "rb") as handle:
        target.write_bytes(handle.read())
    env = {**os.environ, BASE_URL_ENV: base, "CRSIM_PROGRESS_INTERVAL": "0.05"}
    done = subprocess.run(
        [sys.executable, "-m", "crsim", "data", "download", "iard", "-o", str(tmp_path / "out")],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    size = target.stat().st_size
    assert re.search(rf"^bytes {size} · \d:\d\d:\d\d · errors 0 · done$", done.stderr, re.M), done.stderr
    assert f"bytes {size} ·" not in done.stdout
