"""Progress on stderr for the long phases and a per-phase summary (issue 20 item 1): plain lines off a
terminal, a rich bar on one, LLM figures from the calls made, records byte-identical with or without."""

from __future__ import annotations

import asyncio
import io
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.llm.cache import ResponseCache
from crsim.llm.client import LLM
from crsim.llm.config import ModelConfig
from crsim.llm.providers.base import create_provider
from crsim.llm.types import user
from crsim.llm.usage import count
from crsim.model.dialogue import LLMCall
from crsim.runner.config import ExperimentConfig
from crsim.runner.progress import ProgressReport
from support import records_without_timing

runner = CliRunner()

LLM_CONFIG = """\
name: progress
seed: 3
users: {size: 3}
simulators: [{name: llm_single, args: {max_tokens: 40}}]
crss: [{name: popular}, {name: retrieval}]
max_turns: 3
concurrency: 2
llm:
  default:
    provider: scripted
    model: check
    replies: ["I would like a funny movie.", "Something with Tom Hanks?", "Thanks. /stop"]
"""

JUDGE_CONFIG = """\
llm:
  default: {provider: scripted, model: judge, replies: ['4', '3', '5']}
judges: [{name: judge, args: {rubric: quality5}}]
"""


def _crsim(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`crsim ARGS` in a child process whose stderr is a pipe (not a terminal)."""
    env = {**os.environ, "CRSIM_PROGRESS_INTERVAL": "0.05"}
    return subprocess.run(
        [sys.executable, "-m", "crsim", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
def test_run_and_evaluate_show_progress_and_a_summary_off_a_terminal(tmp_path: Path) -> None:
    (tmp_path / "llm.yaml").write_text(LLM_CONFIG, encoding="utf-8")
    (tmp_path / "judge.yaml").write_text(JUDGE_CONFIG, encoding="utf-8")
    done = _crsim("run", "llm.yaml", "--out", "run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert re.search(
        r"^dialogues 6/6 \(100%\) · \d:\d\d:\d\d · errors 0 · LLM calls \d+ \(0 cached\) · tokens",
        done.stderr,
        re.M,
    )
    assert "scoring 6/6 (100%)" in done.stderr
    header = lines.index(next(line for line in lines if line.startswith("phase ")))
    dialogues, scoring = lines[header + 1].split(), lines[header + 2].split()
    assert dialogues[0] == "dialogues" and dialogues[2] == "6/6" and int(dialogues[4]) > 0
    assert scoring[0] == "scoring" and scoring[4] == "0"  # the run's metrics call no model
    assert "dialogues 6/6" not in done.stdout  # progress never reaches stdout

    judged = _crsim("evaluate", "run", "--judge", "judge.yaml", cwd=tmp_path)
    assert judged.returncode == 0, judged.stderr
    calls = int(re.search(r"^(\d+) LLM calls \(judge: \d+\)$", judged.stdout, re.M).group(1))  # type: ignore[union-attr]
    last = (
        r"^scoring 6/6 \(100%\) · \d:\d\d:\d\d · errors \d+ · LLM calls {} \({} cached\) · "
        r"tokens [\d,]+ in \+ [\d,]+ out · done$"
    )
    assert re.search(last.format(calls, 0), judged.stderr, re.M), judged.stderr
    again = _crsim("evaluate", "run", "--judge", "judge.yaml", cwd=tmp_path)  # every answer from the cache
    assert re.search(last.format(calls, calls), again.stderr, re.M), again.stderr


@pytest.mark.slow
def test_records_are_the_same_with_and_without_progress(tmp_path: Path) -> None:
    (tmp_path / "llm.yaml").write_text(LLM_CONFIG, encoding="utf-8")
    shown = _crsim("run", "llm.yaml", "--out", "shown", cwd=tmp_path)
    quiet = _crsim("run", "llm.yaml", "--out", "quiet", "--json", cwd=tmp_path)
    assert shown.returncode == quiet.returncode == 0
    assert "dialogues 6/6" in shown.stderr and "dialogues 6/6" not in quiet.stderr
    assert records_without_timing(tmp_path / "shown" / "dialogues.jsonl") == records_without_timing(
        tmp_path / "quiet" / "dialogues.jsonl"
    )
    for name in ("scores.jsonl",):
        assert (tmp_path / "shown" / name).read_bytes() == (tmp_path / "quiet" / name).read_bytes()


def _call(cached: bool = False, error: str | None = None) -> LLMCall:
    return LLMCall(
        role="judge",
        model="m",
        prompt_tokens=100,
        completion_tokens=7,
        latency_s=0.0,
        cached=cached,
        error=error,
    )


def test_plain_lines_come_every_interval_with_errors_calls_tokens_and_time_left() -> None:
    stream = io.StringIO()
    report = ProgressReport(stream, interval=0.05)
    with report.phase("scoring", 4) as meter:
        count(_call())
        count(_call(cached=True))
        meter.advance()
        meter.advance(error=True)
        time.sleep(0.3)
    count(_call())  # after the phase: not counted
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 3  # several ticks, then the closing line
    assert re.fullmatch(
        r"scoring 2/4 \(50%\) · 0:00:00 · ~0:00:00 left · errors 1 · LLM calls 2 \(1 cached\) · "
        r"tokens 200 in \+ 14 out",
        lines[0],
    )
    assert lines[-1].endswith("· done")
    report.print_summary()
    row = stream.getvalue().splitlines()[-1].split()
    assert row[0] == "scoring" and row[2:] == ["2/4", "1", "2", "1", "200", "14"]


def test_a_terminal_gets_a_bar_and_nothing_is_shown_when_disabled() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    report = ProgressReport(stream, interval=0.05)
    assert report.live
    with report.phase("dialogues", 2) as meter:
        meter.advance()
        meter.advance()
        time.sleep(0.3)
    assert "dialogues 2/2 (100%)" in stream.getvalue() and "· done" in stream.getvalue()
    silent = io.StringIO()
    quiet = ProgressReport(silent, enabled=False)
    with quiet.phase("dialogues", 1) as meter:
        meter.advance()
    quiet.print_summary()
    assert silent.getvalue() == "" and quiet.phases[0].done == 1


async def _ask(llm: LLM) -> None:
    await llm.generate([user("Name one movie.")])


def test_a_price_table_gives_an_estimated_cost_and_stays_out_of_manifests(tmp_path: Path) -> None:
    prices = {"prompt": 2.0, "completion": 10.0}
    config = ModelConfig(provider="scripted", replies=["Heat."], price_per_million_tokens=prices)
    cache = ResponseCache(tmp_path / "cache.sqlite")
    llm = LLM("user", config, create_provider(config), cache=cache)
    stream = io.StringIO()
    report = ProgressReport(stream, interval=60)
    with report.phase("dialogues", 2) as meter:
        asyncio.run(_ask(llm))
        asyncio.run(_ask(llm))  # from the cache: no cost
        meter.advance(2)
    stats = report.phases[0]
    assert (stats.calls, stats.cached) == (2, 1)
    expected = (stats.prompt_tokens / 2 * 2.0 + stats.completion_tokens / 2 * 10.0) / 1e6
    assert stats.cost == pytest.approx(expected, rel=1e-9) and expected > 0
    assert f"cost ~{expected:.4f}" in stream.getvalue()
    report.print_summary()
    assert stream.getvalue().splitlines()[-2].split()[-1] == "cost"
    assert (
        "price_per_million_tokens"
        not in ExperimentConfig(llm={"default": config}).manifest_config()["llm"]["default"]
    )


def test_report_shows_the_progress_of_the_evaluation_it_runs_first(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert runner.invoke(app, ["run", "--users", "2", "--out", str(run), "--json"]).exit_code == 0
    (run / "summary.json").unlink()
    (run / "scores.jsonl").unlink()
    result = runner.invoke(app, ["report", str(run), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    assert re.search(r"^scoring 4/4 \(100%\) · \d:\d\d:\d\d · errors 0 · done$", result.output, re.M)
    again = runner.invoke(app, ["report", str(run), "-o", str(tmp_path / "r.html")])  # scored: no phase
    assert "scoring" not in again.output and "phase" not in again.output
