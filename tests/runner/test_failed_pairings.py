"""A run that did not test a CRS says so: exit code 3, a closing line naming the failed pairings and
their dominant error, FAILED in the table; `crsim.run` raises `FailedPairings` carrying the result.
Real generic-protocol servers on 127.0.0.1 (the fault suite's), preflight skipped to reach the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import crsim
from crsim.cli import app
from crsim.model.io import iter_dialogues
from crsim.runner.outcome import EXIT_FAILED_PAIRINGS, FailedPairings
from faults.fault_server import FaultPlan, fault_app, is_affected
from faults.servers import running_server
from llm_servers import closed_port_url

runner = CliRunner()


def _config(url: str, users: int = 6, **fields: Any) -> dict[str, Any]:
    crss = [
        {"name": "popular"},
        {"name": "generic_http", "id": "remote", "args": {"base_url": url, "max_retries": 0, "timeout_s": 5}},
    ]
    return {"users": {"size": users}, "crss": crss, "max_turns": 4, "metrics": [{"name": "turns"}], **fields}


def _run(tmp_path: Path, config: dict[str, Any], *extra: str) -> Any:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    args = ["run", str(path), "--out", str(tmp_path / "run"), "--no-preflight", *extra]
    return runner.invoke(app, args, env={"COLUMNS": "200"})


def test_a_dead_crs_server_ends_the_run_with_exit_3_naming_the_pairing(tmp_path: Path) -> None:
    result = _run(tmp_path, _config(closed_port_url()))
    assert result.exit_code == EXIT_FAILED_PAIRINGS == 3, result.output
    closing = result.output.strip().splitlines()[-1]
    assert "did not test 1 CRS × simulator pairing: remote × abus: 6/6 dialogues failed" in closing
    assert "mostly crs_error (crs: CRSConnectionError" in closing and "popular" not in closing
    assert "remote × abus FAILED" in result.output  # the table marks it
    assert "popular × abus FAILED" not in result.output
    assert len(list(iter_dialogues(tmp_path / "run" / "dialogues.jsonl"))) == 12  # everything kept


def test_the_share_decides_when_a_partly_failing_pairing_failed(tmp_path: Path) -> None:
    users = 20
    plan = FaultPlan(kind="http_500", every=3, at_turn=1, end_at=3)
    with running_server(fault_app(plan)) as url:
        lenient = _run(tmp_path, _config(url, users), "--json")
        records = list(iter_dialogues(tmp_path / "run" / "dialogues.jsonl"))
        failed = sum(1 for d in records if d.termination and d.termination.reason == "crs_error")
        assert failed == sum(
            is_affected(f"remote/abus/{d.user_id}", 3) for d in records if d.crs_id == "remote"
        )
        assert 0 < failed / users < 0.5
        assert lenient.exit_code == 0, lenient.output
        strict = _run(tmp_path, _config(url, users), "--json", "--resume", "--failed-pairing-share", "0.1")
    assert strict.exit_code == 3, strict.output
    assert f"remote × abus: {failed}/{users} dialogues failed, mostly crs_error" in strict.stderr
    marked = {group["crs_id"]: group["failed"] for group in json.loads(strict.stdout)}
    assert marked == {"popular": False, "remote": True}


def test_the_api_raises_failed_pairings_with_the_result(tmp_path: Path) -> None:
    with pytest.raises(FailedPairings) as caught:
        crsim.run(_config(closed_port_url(), users=3), out=tmp_path / "run", progress=False, preflight=False)
    assert [p.label for p in caught.value.pairings] == ["remote × abus"]
    assert caught.value.pairings[0].reason == "crs_error"
    result = caught.value.result
    assert result is not None and {s.crs_id for s in result.summaries} == {"popular", "remote"}
