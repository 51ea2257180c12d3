"""A file system that refuses: `--out` naming a file, a full disk, a read-only or removed run folder.

Each ends `crsim run` or `crsim evaluate` with one line (the file, the system's reason, what was kept
and the command that continues) and exit status 2, never a traceback; what was written stays, and a
resume completes the run without loss or duplicates. A full disk is the kernel's own refusal: the
process runs under a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored), so a write past it fails with
EFBIG exactly where a full disk fails with ENOSPC (`write`/`flush` of the open file).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli import app

runner = CliRunner()

CONFIG = "users: {size: 40}\ncrss: [{name: popular}]\nsimulators: [{name: abus}]\nseed: 7\n"


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    return path


def _file_limit(limit: int) -> Callable[[], None]:
    """For `preexec_fn`: files of the child may not grow past `limit` bytes; a write past it fails."""

    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG from write(2) instead of a killing signal
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def _crsim(*args: str, limit: int | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crsim", *args],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_file_limit(limit) if limit else None,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        check=False,
    )


def _one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_out_naming_a_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    config = _config(tmp_path)
    afile = tmp_path / "results.txt"
    afile.write_text("notes\n", encoding="utf-8")
    for out in (afile, afile / "run"):
        result = runner.invoke(app, ["run", str(config), "--out", str(out)])
        assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
        assert f"error: {out}: a file is in the way; expected a run folder" in " ".join(result.output.split())
    assert afile.read_text(encoding="utf-8") == "notes\n"


@pytest.mark.slow
def test_a_full_disk_during_run_is_one_line_and_resume_completes_the_run(tmp_path: Path) -> None:
    config, out = _config(tmp_path), tmp_path / "run"
    full = _crsim("run", str(config), "--out", str(out), limit=60_000)
    line = _one_error_line(full)
    records = out / "dialogues.jsonl"
    assert f"{records}: File too large (EFBIG)" in line
    assert f"continue with: crsim run {config} --out {out} --resume" in line
    kept = records.read_bytes().count(b"\n")
    assert 0 < kept < 40
    resumed = _crsim("run", str(config), "--out", str(out), "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    ids = [json.loads(line)["id"] for line in records.read_text(encoding="utf-8").splitlines()]
    assert len(ids) == 40 == len(set(ids))


@pytest.mark.slow
def test_a_full_disk_during_evaluate_is_one_line_and_leaves_the_run_as_it_was(tmp_path: Path) -> None:
    config, out = _config(tmp_path), tmp_path / "run"
    assert _crsim("run", str(config), "--out", str(out)).returncode == 0
    (out / "scores.jsonl").unlink()
    (out / "summary.json").unlink()
    before = sorted(p.name for p in out.iterdir())
    dialogues = (out / "dialogues.jsonl").read_bytes()
    assert len(dialogues) > 20_000
    line = _one_error_line(_crsim("evaluate", str(out), limit=20_000))
    assert "File too large (EFBIG)" in line and f"crsim evaluate {out}" in line
    assert sorted(p.name for p in out.iterdir()) == before  # no partial scores, no temporary files
    assert (out / "dialogues.jsonl").read_bytes() == dialogues
    assert _crsim("evaluate", str(out)).returncode == 0
    assert (out / "summary.json").is_file()


@contextmanager
def _read_only(folder: Path) -> Iterator[None]:
    """`folder` refuses new files for the block: mode 555, or for root (whom modes do not stop) the
    immutable attribute (chattr +i, ext4 and most Linux file systems); skips when neither applies."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(folder)], capture_output=True).returncode:
        pytest.skip("as root, a read-only folder needs chattr +i, which this file system refuses")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(folder)], check=True)


def test_a_read_only_run_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    config, out = _config(tmp_path), tmp_path / "run"
    assert runner.invoke(app, ["run", str(config), "--out", str(out)]).exit_code == 0
    (out / "scores.jsonl").unlink()
    kept = sorted(p.name for p in out.iterdir())
    with _read_only(out):
        for args in (["evaluate", str(out)], ["run", str(config), "--out", str(out), "--resume"]):
            result = runner.invoke(app, args)
            assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
            output = " ".join(result.output.split())
            assert output.startswith(f"error: {out}") and ("(EACCES)" in output or "(EPERM)" in output)
            assert "Traceback" not in output
    assert sorted(p.name for p in out.iterdir()) == kept
    # the refused commands did not keep the folder's lock: writable again, it evaluates
    assert runner.invoke(app, ["evaluate", str(out)]).exit_code == 0


@pytest.mark.slow
def test_a_run_folder_removed_during_the_run_is_one_line_and_exit_2(tmp_path: Path) -> None:
    config, out = tmp_path / "exp.yaml", tmp_path / "run"
    config.write_text(CONFIG.replace("size: 40", "size: 400"), encoding="utf-8")
    command = [sys.executable, "-m", "crsim", "run", str(config), "--out", str(out), "--concurrency", "1"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    records = out / "dialogues.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (records.exists() and records.stat().st_size > 0):
        time.sleep(0.005)
    shutil.rmtree(out)
    _, stderr = process.communicate(timeout=300)
    done = subprocess.CompletedProcess(command, process.returncode, "", stderr)
    line = _one_error_line(done)
    assert f"{records}: No such file or directory (ENOENT); the folder {out} no longer exists" in line
