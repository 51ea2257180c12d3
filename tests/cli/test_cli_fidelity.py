"""`crsim fidelity` as a child process on a tiny `abus` run: against a file of unified dialogues and
against ReDial converted on the fly (the table, --json, the file it leaves in the run folder), and a
one-line error for a corpus it cannot find."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from crsim.datasets.base import build_reader, convert_dataset
from crsim.model.run_folder import files

REDIAL = Path(__file__).parents[1] / "fixtures" / "redial"
RUN = """\
name: fidelity-cli
seed: 3
users: {size: 4}
simulators: [{name: abus}]
crss: [{name: retrieval}]
max_turns: 3
"""


def crsim(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "120"}
    return subprocess.run(
        [sys.executable, "-m", "crsim", *args], capture_output=True, text=True, timeout=600, env=env
    )


@pytest.mark.slow
def test_fidelity_of_a_tiny_run(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text(RUN, encoding="utf-8")
    run_dir = tmp_path / "run"
    made = crsim("run", str(tmp_path / "run.yaml"), "--out", str(run_dir))
    assert made.returncode == 0, made.stderr
    corpus = tmp_path / "humans.jsonl"
    dialogues = list(convert_dataset(build_reader("redial", {}), REDIAL / "test_data.jsonl.gz"))[:30]
    corpus.write_text("".join(d.model_dump_json() + "\n" for d in dialogues), encoding="utf-8")

    done = crsim("validate", "fidelity", str(run_dir), "--against", str(corpus), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["run"], report["against"], report["human_dialogues"], report["half_dialogues"]) == (
        "run",
        "humans",
        30,
        [15, 15],
    )
    (abus,) = report["simulators"]
    assert abus["simulator"] == "abus" and abus["dialogues"] == 4
    measures = [r["measure"] for r in abus["rows"]]
    assert measures == [
        "words_per_utterance",
        "question_share",
        "acceptance_rate",
        "rejection_rate",
        "dialogue_acts",
        "distinct_1",
        "distinct_2",
        "turns_per_dialogue",
    ]
    assert 0 < abus["summary_distance"] <= 1 and 0.5 < abus["auc"] <= 1
    # intervals by default: 200 bootstrap replicates over dialogues, the method in the file
    assert report["intervals"]["resamples"] == 200 and report["intervals"]["level"] == 0.95
    assert report["intervals"]["method"].startswith("percentile bootstrap over dialogues")
    low, high = abus["summary_ci"]
    assert low <= high and abus["auc_ci"] is not None
    assert json.loads((run_dir / files.fidelity_file("humans")).read_text(encoding="utf-8")) == report

    table = crsim(
        "validate",
        "fidelity",
        str(run_dir),
        "--against",
        "redial",
        "--data",
        str(REDIAL),
        "--max-human",
        "20",
    )
    assert table.returncode == 0, table.stderr
    assert "abus (4 dialogues) vs redial (20 dialogues, halves 10/10)" in table.stdout
    lines = table.stdout.splitlines()
    assert any(line.startswith("│ summary distance") for line in lines)
    assert any(line.startswith("│ classifier AUC") for line in lines)
    assert "95% CI]: 200 bootstrap replicates over dialogues" in " ".join(table.stdout.split())
    assert (run_dir / files.fidelity_file("redial")).exists()

    missing = crsim(
        "validate", "fidelity", str(run_dir), "--against", "inspired", "--data", str(tmp_path / "nowhere")
    )
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        f"error: --data: {tmp_path / 'nowhere'} does not exist; give the inspired files as published "
        "(`crsim data download inspired` writes them to datasets/inspired)"
    ]
