"""One writer per run folder: real `crsim` processes competing for one folder, and a killed holder."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from crsim.cli import app
from crsim.model.io import iter_dialogues
from crsim.model.run_folder.files import LOCK_FILE, LOCK_INFO
from crsim.model.run_folder.lock import RunFolderBusy, run_folder_lock
from faults.fault_server import FaultPlan, fault_app
from faults.servers import running_server

runner = CliRunner()

#: Holds a run folder's lock in another process until killed; prints "held" once it has it.
HOLDER = """
import sys, time
from pathlib import Path
from crsim.model.run_folder.lock import run_folder_lock
with run_folder_lock(Path(sys.argv[1]), command="crsim run holder.yaml --out somewhere"):
    print("held", flush=True)
    time.sleep(600)
"""


def _crsim(*args: str) -> list[str]:
    return [sys.executable, "-m", "crsim", *args]


def _holder(folder: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "held"
    return process


def _wait_for_records(path: Path, process: subprocess.Popen[str], at_least: int = 1) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if path.exists() and path.read_bytes().count(b"\n") >= at_least:
            return
        time.sleep(0.005)
    raise AssertionError(f"no records in {path} (exit {process.poll()})")


def _ids(path: Path) -> Counter[str]:
    return Counter(d.id for d in iter_dialogues(path))


def test_the_lock_names_its_holder_and_dies_with_it(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    holder = _holder(folder)
    try:
        with pytest.raises(RunFolderBusy) as caught, run_folder_lock(folder):
            pass
        message = str(caught.value)
        assert "\n" not in message
        assert f"pid {holder.pid} on {socket.gethostname()}" in message
        assert "`crsim run holder.yaml --out somewhere`" in message
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # SIGKILL left the lock file and the holder's note behind; only the kernel's lock counted.
    assert (folder / LOCK_FILE).exists() and (folder / LOCK_INFO).exists()
    with run_folder_lock(folder, command="next") as held, run_folder_lock(folder, held=held):  # passed on
        assert json.loads((folder / LOCK_INFO).read_text(encoding="utf-8"))["pid"] == os.getpid()
    assert not (folder / LOCK_INFO).exists()


def test_every_command_that_writes_a_run_folder_is_refused_while_another_holds_it(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    made = runner.invoke(app, ["run", "--out", str(folder), "--users", "3", "--json"])
    assert made.exit_code == 0, made.output
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and p.name != LOCK_FILE}
    holder = _holder(folder)
    try:
        commands = [
            ["run", "--out", str(folder), "--users", "3", "--resume"],
            ["evaluate", str(folder), "--metrics", "turns"],
            ["evaluate", str(folder / "dialogues.jsonl"), "--out", str(folder)],
            ["cache", "clear", str(folder)],
            ["data", "annotate", "acts", str(folder / "dialogues.jsonl"), "-o", str(folder / "acts.jsonl")],
        ]
        (folder / "summary.json").unlink()  # so that `crsim report` wants to evaluate
        commands.append(["report", str(folder), "-o", str(tmp_path / "report.html")])
        for command in commands:
            result = runner.invoke(app, command)
            assert result.exit_code == 2, (command, result.output)
            assert "this run folder is in use by `crsim run holder.yaml" in result.output, command
            assert f"pid {holder.pid}" in result.output
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    after = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and p.name != LOCK_FILE}
    assert before.keys() - after.keys() == {"summary.json"}
    assert all(after[name] == data for name, data in before.items() if name != "summary.json")


def _gated_crs(gate: threading.Event, passed: int) -> Any:
    """The fault suite's generic-protocol CRS, answering the first `passed` requests at once and
    the rest only once `gate` is set: a run that holds its folder for as long as the test needs."""
    app = fault_app(FaultPlan(kind=None, end_at=3))
    seen = Counter[str]()

    @app.middleware("http")
    async def hold_back(request: Any, call_next: Any) -> Any:
        seen["requests"] += 1
        while seen["requests"] > passed and not gate.is_set():
            await asyncio.sleep(0.01)
        return await call_next(request)

    return app


@pytest.mark.slow
def test_a_second_crsim_run_on_the_same_folder_exits_2_naming_the_first(tmp_path: Path) -> None:
    gate = threading.Event()
    with running_server(_gated_crs(gate, passed=40)) as url:
        config = {
            "name": "locked",
            "users": {"size": 30},
            "crss": [{"name": "generic_http", "id": "remote", "args": {"base_url": url, "timeout_s": 300}}],
            "max_turns": 4,
            "concurrency": 4,
            "metrics": [{"name": "turns"}],
        }
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        run_dir = tmp_path / "run"
        args = _crsim("run", str(path), "--out", str(run_dir), "--resume", "--json")
        first = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            _wait_for_records(run_dir / "dialogues.jsonl", first)
            second = subprocess.run(args, capture_output=True, text=True, timeout=120)
            assert first.poll() is None, "the first run must still hold the folder"
        finally:
            gate.set()
            _, first_err = first.communicate(timeout=300)
    assert second.returncode == 2, second.stderr
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in second.stderr
    assert f"in use by `crsim run {path} --out {run_dir}" in lines[0] and f"pid {first.pid}" in lines[0]
    assert first.returncode == 0, first_err
    ids = _ids(run_dir / "dialogues.jsonl")
    assert len(ids) == 30 and set(ids.values()) == {1}


@pytest.mark.slow
def test_two_resumes_started_together_write_each_dialogue_once(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    args = _crsim("run", "--out", str(run_dir), "--users", "150", "--resume", "--json")
    processes = [
        subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    results = [(p.wait(timeout=300), p.stderr.read() if p.stderr else "") for p in processes]
    assert all("Traceback" not in err for _, err in results), results
    assert sorted(code for code, _ in results) in ([0, 0], [0, 2]), results
    ids = _ids(run_dir / "dialogues.jsonl")
    assert len(ids) == 300 and set(ids.values()) == {1}
    again = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr


@pytest.mark.slow
def test_a_run_killed_with_sigkill_does_not_block_the_next(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    args = _crsim("run", "--out", str(run_dir), "--users", "150", "--json")
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _wait_for_records(run_dir / "dialogues.jsonl", process, at_least=5)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert json.loads((run_dir / LOCK_INFO).read_text(encoding="utf-8"))["pid"] == process.pid
    resumed = subprocess.run([*args, "--resume"], capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    ids = _ids(run_dir / "dialogues.jsonl")
    assert len(ids) == 300 and set(ids.values()) == {1}


def _gated_config(url: str, users: int) -> dict[str, Any]:
    crs = {"name": "generic_http", "id": "remote", "args": {"base_url": url, "timeout_s": 300}}
    return {
        "users": {"size": users},
        "crss": [crs],
        "max_turns": 4,
        "concurrency": 2,
        "metrics": [{"name": "turns"}],
    }


def test_a_second_writer_thread_of_the_same_process_is_refused(tmp_path: Path) -> None:
    import crsim

    gate = threading.Event()
    run_dir = tmp_path / "run"
    outcome: dict[str, Any] = {}
    with running_server(_gated_crs(gate, passed=6)) as url:
        config = _gated_config(url, users=12)

        def first() -> None:
            try:
                outcome["result"] = crsim.run(config, out=run_dir, progress=False, preflight=False)
            except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
                outcome["error"] = exc

        thread = threading.Thread(target=first)
        thread.start()
        try:
            deadline = time.monotonic() + 60
            while not (run_dir / "dialogues.jsonl").exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            with pytest.raises(RunFolderBusy) as caught:
                crsim.run(config, out=run_dir, resume=True, progress=False, preflight=False)
            with pytest.raises(RunFolderBusy):
                crsim.evaluate(run_dir)
        finally:
            gate.set()
            thread.join(timeout=300)
    assert "error" not in outcome, outcome
    message = str(caught.value)
    assert "\n" not in message and "another thread or task of this process" in message
    ids = _ids(run_dir / "dialogues.jsonl")
    assert len(ids) == 12 and set(ids.values()) == {1}


def test_concurrent_evaluations_of_one_folder_never_collide(tmp_path: Path) -> None:
    import crsim

    run_dir = tmp_path / "run"
    made = runner.invoke(app, ["run", "--out", str(run_dir), "--users", "30", "--json"])
    assert made.exit_code == 0, made.output
    outcomes: list[BaseException | None] = []
    start = threading.Barrier(4)

    def evaluate() -> None:
        start.wait()
        try:
            crsim.evaluate(run_dir)
            outcomes.append(None)
        except BaseException as exc:  # noqa: BLE001 - checked below
            outcomes.append(exc)

    threads = [threading.Thread(target=evaluate) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert len(outcomes) == 4
    assert all(o is None or isinstance(o, RunFolderBusy) for o in outcomes), outcomes
    assert any(o is None for o in outcomes)
    assert crsim.load(run_dir).summaries  # the folder is whole and its summary matches


def test_two_batches_as_tasks_of_one_event_loop_are_refused(tmp_path: Path) -> None:
    from crsim.runner.batch import run_batch
    from crsim.runner.build import build_experiment
    from crsim.runner.config import ExperimentConfig

    config = ExperimentConfig.model_validate({"users": {"size": 20}, "metrics": [{"name": "turns"}]})

    async def both() -> list[Any]:
        first = asyncio.ensure_future(run_batch(build_experiment(config), tmp_path / "run"))
        await asyncio.sleep(0)  # the first task holds the lock
        second = asyncio.ensure_future(run_batch(build_experiment(config), tmp_path / "run", resume=True))
        return await asyncio.gather(first, second, return_exceptions=True)

    done, refused = asyncio.run(both())
    assert isinstance(refused, RunFolderBusy), refused
    assert not isinstance(done, BaseException) and done.ran == 40
    ids = _ids(tmp_path / "run" / "dialogues.jsonl")
    assert len(ids) == 40 and set(ids.values()) == {1}


def test_one_command_takes_the_lock_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from crsim.model.run_folder import lock

    taken: list[Path] = []
    enter = lock._enter

    def counted(key: Path, command: str, shown: Path) -> Any:
        taken.append(key)
        return enter(key, command, shown)

    monkeypatch.setattr(lock, "_enter", counted)
    result = runner.invoke(app, ["run", "--out", str(tmp_path / "run"), "--users", "2", "--json"])
    assert result.exit_code == 0, result.output
    assert taken == [(tmp_path / "run").resolve()]  # across the batch and the evaluation
