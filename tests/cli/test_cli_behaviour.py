"""`crsim analyze behaviour` as a child process on a run made with the scripted LLM provider and
judged by a scripted judge: the JSON report, the tables, the CSV written with --out, and a one-line
error for a folder that is no run."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

RUN = """\
name: behaviour-cli
seed: 7
users: {size: 2}
simulators:
  - {name: llm_single, args: {max_tokens: 40}}
crss:
  - {name: retrieval}
max_turns: 1
llm:
  default:
    provider: scripted
    model: check
    replies: ["Here are some movies you might like.", "I recommend a comedy to you. Bye. [END]"]
"""
JUDGE = """\
llm:
  default: {provider: scripted, model: judge, replies: ['{"justification": "Fine.", "score": 5}']}
judges:
  - {name: judge, args: {rubric: quality5}}
"""


def crsim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "crsim", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_analyze_behaviour_of_a_scripted_run(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text(RUN, encoding="utf-8")
    (tmp_path / "judge.yaml").write_text(JUDGE, encoding="utf-8")
    run_dir = tmp_path / "run"
    assert crsim("run", str(tmp_path / "run.yaml"), "--out", str(run_dir)).returncode == 0
    judged = crsim("evaluate", str(run_dir), "--judge", str(tmp_path / "judge.yaml"))
    assert judged.returncode == 0, judged.stderr

    done = crsim("analyze", "behaviour", str(run_dir), "--json", "--out", str(tmp_path / "rows.csv"))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["run"], report["domain"], report["dialogues"], report["unreadable"]) == (
        "run",
        "movies",
        2,
        [],
    )
    rows = {(r["kind"], r["subject"], r["measure"]): r for r in report["rows"]}
    flip = rows[("simulator", "llm_single", "role_flip_dialogue")]
    # the scripted "Here are some movies you might like." is the recommender's voice: the simulator's
    # own draft check catches it (recorded under draft_checks), so no flip reaches the record
    assert (flip["k"], flip["n"], flip["interval"]) == (0, 2, "wilson95")
    at_max = rows[("judge", "quality5/fluency", "score_at_max")]
    assert (at_max["k"], at_max["n"]) == (2, 2) and at_max["detail"] == "1:0 2:0 3:0 4:0 5:2"
    relevance = rows[("judge", "quality5/recommendation_relevance", "relevance_without_recommendation")]
    records = [
        json.loads(line) for line in (run_dir / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    checked = [
        c["check"] for d in records for u in d["utterances"] for c in u["annotations"].get("draft_checks", [])
    ]
    assert "role_flip" in checked
    empty = sum(not any(u["recommended_items"] for u in d["utterances"]) for d in records)
    # the scripted judge answers 5 everywhere; where nothing was recommended the rubric's rule scores
    # relevance at its lowest level, so the behaviour check finds no such 5
    assert empty == 2 and (relevance["k"], relevance["n"]) == (0, empty)
    with (tmp_path / "rows.csv").open(encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == len(report["rows"]) and table[0]["interval"] == "wilson95"

    shown = crsim("analyze", "behaviour", str(run_dir))
    assert shown.returncode == 0 and "role_flip_dialogue" in shown.stdout and "Judges" in shown.stdout
    assert "Simulators" in shown.stdout and "CRSs" in shown.stdout


@pytest.mark.slow
def test_analyze_behaviour_of_no_run_is_a_one_line_error(tmp_path: Path) -> None:
    failed = crsim("analyze", "behaviour", str(tmp_path))
    assert failed.returncode != 0 and "Traceback" not in failed.stderr
    assert "no manifest.json" in failed.stderr and failed.stderr.strip().count("\n") == 0


def test_analyze_behaviour_says_when_there_is_nothing_to_measure(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from crsim.cli.analyze import analyze_app

    empty = tmp_path / "dialogues.jsonl"
    empty.write_text("", encoding="utf-8")
    result = CliRunner().invoke(analyze_app, ["behaviour", str(empty), "--domain", "movies"])
    assert result.exit_code == 0, result.output
    assert "no dialogue to measure" in result.output
