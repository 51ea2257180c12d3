"""`crsim run --resume --retry-errors`: failed dialogues held again with their seeds, replaced in place,
the old records kept in the audit file, counted in the manifest; a retry killed by SIGKILL resumes
without loss or duplicates. One real generic-protocol server on 127.0.0.1 whose faults the test
switches (the fault suite's `fault_app` reads its plan at each request)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from crsim.cli import app
from crsim.model import annotations as keys
from crsim.model.io import iter_dialogues
from crsim.model.run_folder.files import DIALOGUES, MANIFEST, RETRIED
from faults.fault_server import FaultPlan, ServerLog, fault_app
from faults.servers import running_server

runner = CliRunner()
USERS = 18


def _config(url: str) -> dict[str, Any]:
    crs = {
        "name": "generic_http",
        "id": "remote",
        "args": {"base_url": url, "max_retries": 0, "timeout_s": 300},
    }
    return {
        "name": "retry",
        "users": {"size": USERS},
        "crss": [crs],
        "max_turns": 4,
        "concurrency": 4,
        "metrics": [{"name": "turns"}],
    }


def _write(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(_config(url)), encoding="utf-8")
    return path


def _reasons(path: Path) -> dict[str, str]:
    return {d.id: str(d.termination.reason) if d.termination else "" for d in iter_dialogues(path)}


def _seeds(path: Path) -> dict[str, int]:
    return {d.id: keys.SEED.get(d.metadata, where=d.id) for d in iter_dialogues(path)}


def test_retry_errors_replaces_the_failed_records_in_place_and_keeps_the_old_ones(tmp_path: Path) -> None:
    plan = FaultPlan(kind="http_500", every=3, at_turn=1, end_at=3)
    with running_server(fault_app(plan)) as url:
        config, run_dir = _write(tmp_path, url), tmp_path / "run"
        base = ["run", str(config), "--out", str(run_dir), "--no-preflight"]
        first = runner.invoke(app, [*base, "--json"])
        assert first.exit_code == 0, first.output
        before = _reasons(run_dir / DIALOGUES)
        failed = sorted(i for i, reason in before.items() if reason == "crs_error")
        assert 0 < len(failed) < USERS
        seeds = _seeds(run_dir / DIALOGUES)

        resumed = runner.invoke(app, [*base, "--resume"], env={"COLUMNS": "200"})
        assert resumed.exit_code == 0, resumed.output
        assert (
            f"{len(failed)} dialogues of this run ended in errors or timeouts (crs_error ×{len(failed)})"
            in (resumed.output)
        )
        assert "--resume --retry-errors" in resumed.output and not (run_dir / RETRIED).exists()

        only_timeouts = runner.invoke(app, [*base, "--resume", "--retry-errors", "--retry-kinds", "timeout"])
        assert only_timeouts.exit_code == 0, only_timeouts.output
        assert not (run_dir / RETRIED).exists()

        plan.kind = None  # the server is fixed
        retried = runner.invoke(app, [*base, "--resume", "--retry-errors"], env={"COLUMNS": "200"})
    assert retried.exit_code == 0, retried.output
    assert (
        f"{len(failed)} dialogues held, {len(failed)} of them again ({USERS - len(failed)} already done"
        in (retried.output)
    )
    after = _reasons(run_dir / DIALOGUES)
    assert list(after) == list(before)  # the same dialogues in the same order
    assert all(after[i] != "crs_error" for i in failed)
    assert {i: r for i, r in after.items() if i not in failed} == {
        i: r for i, r in before.items() if i not in failed
    }
    assert _seeds(run_dir / DIALOGUES) == seeds
    audit = list(iter_dialogues(run_dir / RETRIED))
    assert sorted(d.id for d in audit) == failed and {str(d.termination.reason) for d in audit} == {
        "crs_error"
    }
    assert json.loads((run_dir / MANIFEST).read_text(encoding="utf-8"))["retried_dialogues"] == len(failed)
    report = runner.invoke(app, ["report", str(run_dir), "-o", str(tmp_path / "r.html")])
    assert report.exit_code == 0, report.output  # the run evaluated the retried dialogues


def test_retry_errors_needs_resume(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "--out", str(tmp_path / "run"), "--retry-errors", "--users", "2"])
    assert result.exit_code == 2 and "--retry-errors needs --resume" in result.output
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_retry_killed_by_sigkill_resumes_without_loss_or_duplicates(tmp_path: Path) -> None:
    plan = FaultPlan(kind="http_500", every=3, at_turn=1, end_at=3, hang_s=600)
    log = ServerLog()
    with running_server(fault_app(plan, log)) as url:
        config, run_dir = _write(tmp_path, url), tmp_path / "run"
        args = [
            sys.executable,
            "-m",
            "crsim",
            "run",
            str(config),
            "--out",
            str(run_dir),
            "--no-preflight",
            "--json",
        ]
        first = subprocess.run(args, capture_output=True, text=True, timeout=300)
        assert first.returncode == 0, first.stderr
        before = _reasons(run_dir / DIALOGUES)
        failed = sorted(i for i, reason in before.items() if reason == "crs_error")
        assert failed

        plan.kind = "hang"  # the retried dialogues now hang in the server: kill the retry there
        retry = subprocess.Popen(
            [*args, "--resume", "--retry-errors"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 120
        while (
            time.monotonic() < deadline and log.faults["hang"] < min(4, len(failed)) and retry.poll() is None
        ):
            time.sleep(0.01)
        assert retry.poll() is None, retry.stderr.read() if retry.stderr else ""
        retry.send_signal(signal.SIGKILL)
        retry.wait()
        assert (run_dir / RETRIED).exists()
        held = _reasons(run_dir / DIALOGUES)
        assert set(held) == set(before) - set(failed)  # moved out, not yet held again

        stale = subprocess.run(
            [sys.executable, "-m", "crsim", "report", str(run_dir), "-o", str(tmp_path / "r.html")],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert stale.returncode == 2 and "does not match the run's files" in stale.stderr, stale.stderr

        plan.kind = None
        resumed = subprocess.run(
            [*args, "--resume", "--retry-errors"], capture_output=True, text=True, timeout=300
        )
    assert resumed.returncode == 0, resumed.stderr
    ids = Counter(d.id for d in iter_dialogues(run_dir / DIALOGUES))
    assert list(ids) == list(before) and set(ids.values()) == {1}
    assert all(r != "crs_error" for r in _reasons(run_dir / DIALOGUES).values())
    audit = Counter(d.id for d in iter_dialogues(run_dir / RETRIED))
    assert sorted(audit) == failed and set(audit.values()) == {1}
    assert json.loads((run_dir / MANIFEST).read_text(encoding="utf-8"))["retried_dialogues"] == len(failed)
    assert os.path.getsize(run_dir / "summary.json") > 0


def test_an_unknown_retry_kind_is_named(tmp_path: Path) -> None:
    args = ["run", "--out", str(tmp_path / "run"), "--resume", "--retry-errors", "--retry-kinds", "crs,user"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "--retry-kinds: unknown kind 'user'" in result.output
    assert not (tmp_path / "run").exists()
