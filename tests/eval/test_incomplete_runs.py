"""A run folder holding fewer dialogues than planned says so in `evaluate`, `compare`, `report` and the
API: a warning line with planned vs held, `complete: false` in the JSON outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import crsim
from crsim.api import IncompleteRunWarning
from crsim.cli import app

runner = CliRunner()


@pytest.fixture
def stopped(tmp_path: Path) -> Path:
    """A quickstart run of 10 planned dialogues, cut to 8 as a stopped run leaves it."""
    run_dir = tmp_path / "run"
    made = runner.invoke(app, ["run", "--out", str(run_dir), "--users", "5", "--json"])
    assert made.exit_code == 0, made.output
    assert all(group["complete"] for group in json.loads(made.output))
    lines = (run_dir / "dialogues.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(lines) == 10
    (run_dir / "dialogues.jsonl").write_text("".join(lines[:3] + lines[5:]), encoding="utf-8")
    return run_dir


WARNING = "incomplete run: holds 8 of 10 planned dialogues"


def test_evaluate_warns_and_says_complete_false(stopped: Path) -> None:
    result = runner.invoke(app, ["evaluate", str(stopped), "--json"])
    assert result.exit_code == 0, result.output
    assert WARNING in result.stderr
    groups = json.loads(result.stdout)
    assert groups and all(group["complete"] is False for group in groups)
    text = runner.invoke(app, ["evaluate", str(stopped)])
    assert text.exit_code == 0 and WARNING in text.stderr


def test_compare_and_report_warn(stopped: Path, tmp_path: Path) -> None:
    assert runner.invoke(app, ["evaluate", str(stopped), "--json"]).exit_code == 0
    compared = runner.invoke(app, ["compare", str(stopped), "--json"])
    assert compared.exit_code == 0, compared.output
    data = json.loads(compared.stdout)
    assert data["complete"] is False and data["runs"][0] == {
        "path": str(stopped),
        "planned": 10,
        "held": 8,
        "complete": False,
    }
    assert WARNING in compared.stderr
    reported = runner.invoke(app, ["report", str(stopped), "-o", str(tmp_path / "r.html")])
    assert reported.exit_code == 0, reported.output
    assert WARNING in reported.stderr


def test_the_api_warns_and_marks_the_result(stopped: Path) -> None:
    with pytest.warns(IncompleteRunWarning, match="holds 8 of 10 planned"):
        result = crsim.evaluate(stopped)
    assert result.complete is False
    assert result.completeness is not None and (result.completeness.planned, result.completeness.held) == (
        10,
        8,
    )
    with pytest.warns(IncompleteRunWarning):
        assert crsim.load(stopped).complete is False
