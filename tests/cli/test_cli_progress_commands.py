"""Progress on stderr for the other long commands (issue 20 item 1): `meta-eval` (evaluator scoring and
cross-validation folds), `data annotate acts|eval|need|need-eval`, `analyze` and `pepper pref-accuracy`,
each run as a child process whose stderr is a pipe: plain lines, errors so far, LLM figures, the
per-phase summary; nothing on stdout and nothing with --json."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli import app

GOLD = Path(__file__).parents[1] / "fixtures" / "crsarena_eval" / "crs_arena_eval.json.gz"
#: Every answer unreadable: each dialogue the annotators and measurers see counts as an error.
UNREADABLE = "llm:\n  default: {provider: scripted, model: check, replies: ['oops']}\n"
CLOCK = r"\d:\d\d:\d\d"


def _crsim(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`crsim ARGS` in a child process whose stderr is a pipe (not a terminal)."""
    env = {**os.environ, "CRSIM_PROGRESS_INTERVAL": "0.05"}
    return subprocess.run(
        [sys.executable, "-m", "crsim", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def _summary_row(stderr: str, phase: str) -> list[str]:
    """The summary's row of `phase`: name, time, items, errors, LLM calls, cached, tokens in, out."""
    lines = stderr.splitlines()
    header = next(n for n, line in enumerate(lines) if line.startswith("phase "))
    row = next(line for line in lines[header + 1 :] if line.startswith(phase))
    return row[len(phase) :].split()


def _last_line(phase: str, items: str, errors: int) -> str:
    """The phase's closing line; its group 1 is the LLM calls."""
    llm = r"LLM calls (\d+) \(\d+ cached\) · tokens [\d,]+ in \+ [\d,]+ out"
    return rf"^{phase} {items} \(100%\) · {CLOCK} · errors {errors} · {llm} · done$"


@pytest.fixture(scope="module")
def dialogues(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A quickstart run of 6 dialogues (with information needs), made in-process."""
    run = tmp_path_factory.mktemp("progress") / "run"
    result = CliRunner().invoke(app, ["run", "--users", "3", "--out", str(run), "--json"])
    assert result.exit_code == 0, result.output
    return run / "dialogues.jsonl"


@pytest.mark.slow
def test_annotate_acts_and_need_show_each_dialogue_and_its_unreadable_answers(
    tmp_path: Path, dialogues: Path
) -> None:
    (tmp_path / "llm.yaml").write_text(UNREADABLE, encoding="utf-8")
    acts = _crsim(
        "data", "annotate", "acts", str(dialogues), "-o", "acts.jsonl",
        "--annotator", "llm", "--llm", "llm.yaml", "--overwrite", cwd=tmp_path,
    )  # fmt: skip
    assert acts.returncode == 0, acts.stderr
    calls = re.search(_last_line("annotating", "6/6", 6), acts.stderr, re.M)
    assert calls is not None, acts.stderr
    row = _summary_row(acts.stderr, "annotating")
    assert row[1:4] == ["6/6", "6", calls.group(1)] and int(row[3]) > 0
    assert "annotating 6/6" not in acts.stdout and "utterances annotated by llm" in acts.stdout

    need = _crsim(
        "data", "annotate", "need", str(dialogues), "-o", "need.jsonl",
        "--extractor", "llm", "--llm", "llm.yaml", "--overwrite", cwd=tmp_path,
    )  # fmt: skip
    assert need.returncode == 0, need.stderr
    assert re.search(_last_line("extracting", "6/6", 6), need.stderr, re.M), need.stderr
    assert "6 unreadable" in need.stdout


@pytest.mark.slow
def test_annotate_evaluations_show_progress_and_json_hides_it(tmp_path: Path, dialogues: Path) -> None:
    (tmp_path / "llm.yaml").write_text(UNREADABLE, encoding="utf-8")
    need_eval = ("data", "annotate", "need-eval", str(dialogues), "--extractor", "llm", "--llm", "llm.yaml")
    shown = _crsim(*need_eval, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    unreadable = re.search(r"^(\d+) dialogues unreadable", shown.stdout, re.M)
    assert unreadable is not None and int(unreadable.group(1)) == 6
    assert re.search(_last_line("extracting", "6/6", 6), shown.stderr, re.M), shown.stderr
    quiet = _crsim(*need_eval, "--json", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == "" and json.loads(quiet.stdout)["failed"] == 6

    acts_eval = ("data", "annotate", "eval", str(dialogues), "--annotator", "llm", "--llm", "llm.yaml")
    limited = _crsim(*acts_eval, "--limit", "2", cwd=tmp_path)
    assert limited.returncode == 0, limited.stderr
    assert re.search(_last_line("annotating", "2/2", 2), limited.stderr, re.M), limited.stderr


@pytest.mark.slow
def test_analyze_with_an_llm_shows_the_measuring_phase(tmp_path: Path, dialogues: Path) -> None:
    (tmp_path / "judge.yaml").write_text(UNREADABLE, encoding="utf-8")
    done = _crsim(
        "analyze", "diversity", str(dialogues), "--measure", "llm", "--judge", "judge.yaml", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert re.search(_last_line("measuring", "6/6", 6), done.stderr, re.M), done.stderr
    assert _summary_row(done.stderr, "measuring")[1:3] == ["6/6", "6"]
    quiet = _crsim("analyze", "diversity", str(dialogues), "--json", cwd=tmp_path)
    assert quiet.returncode == 0 and "measuring" not in quiet.stderr


@pytest.mark.slow
def test_meta_eval_shows_evaluator_scoring_and_cross_validation_folds(tmp_path: Path) -> None:
    (tmp_path / "judge.yaml").write_text(UNREADABLE, encoding="utf-8")
    judged = _crsim(
        "meta-eval", "--evaluator", "judge", "--arg", "rubric=quality5", "--config", "judge.yaml",
        "--gold", str(GOLD), "--limit", "2", "--work-dir", "work", cwd=tmp_path,
    )  # fmt: skip
    assert judged.returncode == 0, judged.stderr
    calls = re.search(_last_line("scoring", "4/4", 4), judged.stderr, re.M)
    made = re.search(r"LLM calls made \(cache hits excluded\): judge: (\d+)", judged.stdout)
    assert calls is not None and made is not None, judged.stderr
    assert calls.group(1) == made.group(1)

    folds = _crsim(
        "meta-eval", "--evaluator", "learned_crsarena", "--protocol", "cv5",
        "--gold", str(GOLD), "--limit", "12", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert folds.returncode == 0, folds.stderr
    assert "cv5 folds" not in folds.stderr  # --json: no progress
    shown = _crsim(
        "meta-eval", "--evaluator", "learned_crsarena", "--protocol", "cv5",
        "--gold", str(GOLD), "--limit", "12", cwd=tmp_path,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert re.search(rf"^cv5 folds 5/5 \(100%\) · {CLOCK} · errors 0 · done$", shown.stderr, re.M), (
        shown.stderr
    )
    assert _summary_row(shown.stderr, "cv5 folds")[1:4] == ["5/5", "0", "0"]


@pytest.mark.slow
def test_pepper_preference_accuracy_counts_users(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(
        "users: {source: pepper, size: 2}\n"
        "simulators: [{name: pepper, args: {narrative_items: 4}}]\n"
        "llm: {default: {provider: scripted, replies: ['A', 'neither']}, cache: {mode: 'off'}}\n",
        encoding="utf-8",
    )
    done = _crsim("pepper", "pref-accuracy", "c.yaml", "--pairs", "2", "--out", "a.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    failed_users = len({c["user_id"] for c in report["choices"] if c["error"] is not None})
    assert failed_users > 0
    assert re.search(_last_line("users", "2/2", failed_users), done.stderr, re.M), done.stderr
    quiet = _crsim("pepper", "pref-accuracy", "c.yaml", "--pairs", "2", "--json", cwd=tmp_path)
    assert quiet.returncode == 0 and "users" not in quiet.stderr


def test_data_convert_counts_dialogues_and_skipped_records(tmp_path: Path) -> None:
    fixtures = Path(__file__).parents[1] / "fixtures" / "redial"
    shutil.copy(fixtures / "movies_with_mentions.csv.gz", tmp_path)
    with gzip.open(fixtures / "test_data.jsonl.gz", "rt", encoding="utf-8") as handle:
        lines = [next(handle), "not a record\n", next(handle), next(handle)]
    (tmp_path / "test_data.jsonl").write_text("".join(lines), encoding="utf-8")
    done = _crsim(
        "data", "convert", "redial", "test_data.jsonl", "-o", "out.jsonl", "--skip-invalid", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "3 dialogues written" in done.stdout and "1 skipped" in done.stdout
    assert re.search(rf"^converting 3 · {CLOCK} · errors 1 · done$", done.stderr, re.M), done.stderr
    assert _summary_row(done.stderr, "converting")[1:4] == ["3", "1", "0"]
