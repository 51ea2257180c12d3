"""summary.json names the scores and dialogues it was built from; a mix is refused, never rendered."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.core.errors import DataError
from crsim.model.run_folder.summary import fingerprint, read_summary_file
from crsim.report.titles import open_run

runner = CliRunner()


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("consistency") / "run"
    result = runner.invoke(app, ["run", "--out", str(run_dir), "--users", "5", "--json"])
    assert result.exit_code == 0, result.output
    return run_dir


def _copy(run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    return copy


def _report(run: Path, tmp_path: Path) -> tuple[int, str]:
    result = runner.invoke(app, ["report", str(run), "-o", str(tmp_path / "report.html")])
    return result.exit_code, result.output


def test_the_summary_records_the_files_it_was_built_from(evaluated: Path, tmp_path: Path) -> None:
    summary = read_summary_file(evaluated / "summary.json")
    assert summary.built_from == {
        "dialogues": fingerprint(evaluated / "dialogues.jsonl"),
        "scores": fingerprint(evaluated / "scores.jsonl"),
    }
    copy = _copy(evaluated, tmp_path)  # content hashes: a copied folder (new mtimes) is still consistent
    assert open_run(copy).summaries() == summary.groups
    assert _report(copy, tmp_path)[0] == 0


def test_new_scores_beside_an_old_summary_are_refused(evaluated: Path, tmp_path: Path) -> None:
    """The state a kill between the scores' replacement and the summary's write leaves behind."""
    run = _copy(evaluated, tmp_path)
    old_summary = (run / "summary.json").read_bytes()
    again = runner.invoke(app, ["evaluate", str(run), "--metrics", "turns", "--json"])
    assert again.exit_code == 0, again.output
    (run / "summary.json").write_bytes(old_summary)  # the new summary never made it to disk

    code, output = _report(run, tmp_path)
    assert code == 2, output
    assert "summary.json: does not match the run's files" in output
    assert "another scores.jsonl" in output and f"run `crsim evaluate {run}` again" in output
    assert not (tmp_path / "report.html").exists()
    with pytest.raises(DataError, match="an evaluation stopped between writing the scores and the summary"):
        open_run(run).summaries()

    assert runner.invoke(app, ["evaluate", str(run), "--metrics", "turns"]).exit_code == 0
    assert _report(run, tmp_path)[0] == 0  # what the message says to do mends it


def test_dialogues_added_after_the_evaluation_are_refused(evaluated: Path, tmp_path: Path) -> None:
    run = _copy(evaluated, tmp_path)
    dialogues = run / "dialogues.jsonl"
    lines = dialogues.read_bytes().splitlines(keepends=True)
    dialogues.write_bytes(b"".join(lines[:-3]))  # as if evaluated part-way through the run …
    assert runner.invoke(app, ["evaluate", str(run)]).exit_code == 0
    dialogues.write_bytes(b"".join(lines))  # … and then resumed
    code, output = _report(run, tmp_path)
    assert code == 2 and "another dialogues.jsonl" in output and "a resumed run adds dialogues" in output


def test_a_summary_without_its_sources_is_refused(evaluated: Path, tmp_path: Path) -> None:
    run = _copy(evaluated, tmp_path)
    groups = json.loads((run / "summary.json").read_text(encoding="utf-8"))["groups"]
    (run / "summary.json").write_text(json.dumps(groups), encoding="utf-8")  # the format before version 2
    assert [g.model_dump(mode="json") for g in read_summary_file(run / "summary.json").groups] == groups
    code, output = _report(run, tmp_path)
    assert code == 2 and "does not record the files it was built from" in output
