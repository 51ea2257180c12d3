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

from crsim.model.io import iter_dialogues
from crsim.run.interrupt import Interrupted, run_interruptibly

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
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers put back


def test_a_signal_while_the_work_takes_its_last_step_is_still_a_stop() -> None:
    """The handler runs while the task is running: the coroutine returns, the task counts as cancelled."""

    async def finishing() -> str:
        os.kill(os.getpid(), signal.SIGINT)  # Python runs the handler before the next line
        time.sleep(0.01)
        return "done"

    with pytest.raises(Interrupted) as caught:
        run_interruptibly(finishing())
    assert caught.value.exit_code == 130
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


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
