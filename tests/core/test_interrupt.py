"""Ctrl-C and SIGTERM stop a run of built-in components at once, keep what is written, say how to resume."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from crsim.core.interrupt import Interrupted, run_interruptibly
from crsim.model.io import iter_dialogues

#: Dialogues in the interrupted runs: enough that holding them all takes several seconds.
USERS = 500
PLANNED = 2 * USERS  # the quickstart's two CRSs


def test_a_signal_cancels_work_that_never_waits_and_lets_it_clean_up() -> None:
    cleaned: list[str] = []
    steps = Counter[str]()

    async def busy() -> None:
        async def worker() -> None:
            try:
                while True:
                    time.sleep(0.005)  # a dialogue of built-in components: CPU only, no await inside
                    steps["done"] += 1
                    await asyncio.sleep(0)
            finally:
                cleaned.append("worker")

        await asyncio.gather(*(worker() for _ in range(32)))

    sent: list[float] = []

    def send() -> None:
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGTERM)

    before = signal.getsignal(signal.SIGTERM)
    timer = threading.Timer(0.3, send)
    timer.start()
    with pytest.raises(Interrupted) as caught:
        run_interruptibly(busy())
    stopped_after = time.monotonic() - sent[0]
    timer.join()
    assert caught.value.exit_code == 143 and caught.value.signal_name == "SIGTERM"
    assert cleaned == ["worker"] * 32
    # Stopped right after the signal, not after a round of all 32 workers (5 ms each: 0.16 s).
    assert stopped_after < 0.08, stopped_after
    assert signal.getsignal(signal.SIGTERM) is before  # handlers put back


def test_a_signal_while_the_work_takes_its_last_step_is_still_a_stop() -> None:
    """The handler runs while the task is running: the coroutine returns, the task counts as cancelled."""

    async def finishing() -> str:
        os.kill(os.getpid(), signal.SIGINT)  # Python runs the handler before the next line
        time.sleep(0.01)
        return "done"

    before = signal.getsignal(signal.SIGINT)  # SIG_IGN when the tests run as a background job
    with pytest.raises(Interrupted) as caught:
        run_interruptibly(finishing())
    assert caught.value.exit_code == 130
    assert signal.getsignal(signal.SIGINT) is before  # the handler put back


def _run(run_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "crsim", "run", "--out", str(run_dir), "--users", str(USERS), *extra]


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_a_run_at_once_and_the_printed_command_resumes_it(
    tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    run_dir = tmp_path / "run"
    process = subprocess.Popen(
        _run(run_dir, "--seed", "3"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    records = run_dir / "dialogues.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if records.exists() and records.stat().st_size > 0:
            break
        time.sleep(0.002)
    assert process.poll() is None, process.communicate()
    signalled = time.monotonic()
    process.send_signal(sig)
    _, err = process.communicate(timeout=60)
    took = time.monotonic() - signalled
    assert took < 2.0, f"the run went on for {took:.1f}s after {sig.name}"
    assert process.returncode == code, err

    kept = list(iter_dialogues(records))  # every line a complete, valid record
    assert 0 < len(kept) < PLANNED // 2 and records.read_bytes().endswith(b"\n")
    assert len({d.id for d in kept}) == len(kept)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert f"stopped by {sig.name}: {len(kept)} of {PLANNED} dialogues kept in {run_dir}" in lines[0]
    match = re.search(r"to resume: (crsim run .*)$", lines[0])
    assert match is not None, lines[0]
    command = shlex.split(match.group(1))
    expected = ["crsim", "run", "--out", str(run_dir), "--seed", "3", "--users", str(USERS), "--resume"]
    assert command == expected

    resumed = subprocess.run(
        [sys.executable, "-m", "crsim", *command[1:], "--json"], capture_output=True, text=True, timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr
    ids = Counter(d.id for d in iter_dialogues(records))
    assert len(ids) == PLANNED and set(ids.values()) == {1}
    assert (run_dir / "summary.json").is_file()


@pytest.mark.slow
def test_ctrl_c_stops_a_ray_run_after_the_shards_already_written(tmp_path: Path) -> None:
    """Ctrl-C in a terminal signals the whole process group: the driver and the Ray processes it started."""
    pytest.importorskip("ray", reason="the Ray executor needs the `ray` extra")
    run_dir = tmp_path / "run"
    args = [
        sys.executable,
        "-m",
        "crsim",
        "run",
        "--out",
        str(run_dir),
        "--users",
        "150",
        "--executor",
        "ray",
    ]
    process = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    records = run_dir / "dialogues.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if records.exists() and records.stat().st_size > 0:
            break
        time.sleep(0.01)
    assert process.poll() is None, process.communicate()
    signalled = time.monotonic()
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=120)
    took = time.monotonic() - signalled
    assert took < 10.0, f"{took:.1f}s: the driver waits at most 1 s for ray.wait, then stops Ray"
    assert process.returncode == 130, err
    kept = list(iter_dialogues(records))
    assert 0 < len(kept) < 300 and len(kept) % 50 == 0  # whole shards (shard_size 50)
    match = re.search(
        r"stopped by SIGINT: (\d+) of 300 dialogues kept in .*; to resume: (crsim run .*)$", err
    )
    assert match is not None and int(match.group(1)) == len(kept), err
    command = shlex.split(match.group(2))
    resumed = subprocess.run(
        [sys.executable, "-m", "crsim", *command[1:], "--json"], capture_output=True, text=True, timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr
    ids = Counter(d.id for d in iter_dialogues(records))
    assert len(ids) == 300 and set(ids.values()) == {1}


def test_a_stopped_batch_returns_only_after_every_worker_has_finished(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`asyncio.gather` ends as soon as one worker is cancelled; a worker whose step swallowed the
    cancellation (as Python 3.11's `asyncio.wait_for` does when the awaited call ended at the same
    moment, which the scripted LLM provider's always does) then handed its record to a closed writer
    ("I/O operation on closed file" after SIGTERM on a run of the `llm` CRS). The batch must wait for
    every worker, and no worker may start another dialogue after the stop."""
    from types import SimpleNamespace

    from crsim.runner import holding

    started: list[str] = []

    async def hold(_experiment: object, task: str) -> str:
        started.append(task)
        if task == "slow":  # swallows the cancellation, as 3.11's wait_for does when its call just ended
            try:
                await asyncio.sleep(0.2)
            except asyncio.CancelledError:
                await asyncio.sleep(0.2)
            return task
        await asyncio.sleep(10)
        return task

    monkeypatch.setattr(holding, "hold_dialogue", hold)
    closed, late = False, []

    def record(dialogue: str) -> None:
        if closed:
            late.append(dialogue)

    async def main() -> None:
        nonlocal closed
        experiment = SimpleNamespace(config=SimpleNamespace(concurrency=2), crss={})
        work = asyncio.ensure_future(holding.hold_dialogues(experiment, ["fast", "slow", "next"], record))  # type: ignore[arg-type]
        await asyncio.sleep(0.05)
        work.cancel()
        with pytest.raises(asyncio.CancelledError):
            await work
        closed = True  # what run_batch's `finally` does: close the writer
        await asyncio.sleep(0.4)

    asyncio.run(main())
    assert late == [] and started == ["fast", "slow"]


#: `crsim schema` in a fresh interpreter that receives SIGNAL while the command's module is imported,
#: before the command has set up its own handling (the stretch where heavy libraries load).
_SIGNAL_WHILE_STARTING = """
import os, signal, sys, time
import crsim.cli as cli
load, sent = cli.LazyCommand.load, getattr(signal, sys.argv[1])
def signalled_load(self):
    os.kill(os.getpid(), sent)
    time.sleep(30)  # the signal arrives here
    return load(self)
cli.LazyCommand.load = signalled_load
sys.argv = ["crsim", "schema"]
cli.main()
"""


@pytest.mark.parametrize(("sig", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_while_a_command_starts_stops_it_with_one_line(sig: str, code: int) -> None:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _SIGNAL_WHILE_STARTING, sig], capture_output=True, text=True, timeout=60
    )
    assert time.monotonic() - started < 25, "the signal did not stop the process"
    assert done.returncode == code, done.stderr
    assert done.stderr.strip() == f"stopped by {sig}"


def test_a_stopped_evaluation_names_the_command_that_runs_it_again(tmp_path: Path) -> None:
    from crsim.cli.evaluate import evaluate_command

    command = evaluate_command(
        tmp_path / "run dir", ["success_rate,srrr", "recall:k=5"], tmp_path / "judge.yaml", "llm",
        ["model=x"], 4, tmp_path / "out", True, True,
    )  # fmt: skip
    assert shlex.split(command) == [
        "crsim", "evaluate", str(tmp_path / "run dir"), "--metrics", "success_rate,srrr",
        "--metrics", "recall:k=5", "--judge", str(tmp_path / "judge.yaml"), "--annotator", "llm",
        "--annotator-arg", "model=x", "--concurrency", "4", "--out", str(tmp_path / "out"),
        "--replace", "--json",
    ]  # fmt: skip
    defaults = evaluate_command(tmp_path, None, None, "rules", [], 8, None, False, False)
    assert shlex.split(defaults) == ["crsim", "evaluate", str(tmp_path)]
