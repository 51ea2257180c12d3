"""`crsim run CONFIG --limit N`: only the first N dialogues of the plan, recorded in the manifest (issue 20
item 3)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from crsim.cli import app
from crsim.runner.build import build_experiment
from crsim.runner.config import load_config

runner = CliRunner()


def _ids(run_dir: Path) -> list[str]:
    lines = (run_dir / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["id"] for line in lines]


def test_limit_holds_the_first_dialogues_of_the_plan_and_the_manifest_says_so(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = runner.invoke(app, ["run", "--users", "4", "--limit", "3", "--out", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    plan = [task.id for task in build_experiment(load_config(None, {"users": 4})).tasks]
    assert len(plan) == 8 and _ids(run_dir) == plan[:3]
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert (manifest["config"]["limit"], manifest["planned_dialogues"]) == (3, 3)
    assert sum(group["n_dialogues"] for group in json.loads(result.output)) == 3


def test_resume_needs_the_same_limit(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    assert runner.invoke(app, ["run", "--users", "4", "--limit", "2", "--out", str(run_dir)]).exit_code == 0
    refused = runner.invoke(app, ["run", "--users", "4", "--out", str(run_dir), "--resume"])
    assert refused.exit_code == 2
    assert "differs from the one this run was started with in limit" in refused.output
    again = runner.invoke(app, ["run", "--users", "4", "--limit", "2", "--out", str(run_dir), "--resume"])
    assert again.exit_code == 0 and "0 dialogues held (2 already done" in again.output


def test_an_unlimited_run_records_no_limit(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    assert runner.invoke(app, ["run", "--users", "1", "--out", str(run_dir)]).exit_code == 0
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert "limit" not in manifest["config"] and manifest["planned_dialogues"] == 2


def test_a_bad_limit_is_blamed_on_the_option(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "--limit", "0", "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and "--limit: field 'limit'" in result.output
