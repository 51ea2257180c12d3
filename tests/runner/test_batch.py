"""The batch layer: manifest first, resume after SIGKILL, determinism, errors that do not sink a run."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from crsim.core.errors import ConfigError, DataError
from crsim.crs.base import BaseCRS, CRSReply, CRSSession
from crsim.model.io import iter_dialogues
from crsim.model.run_folder.dialogues import repair_tail
from crsim.runner.batch import prepare_run_dir, run_batch
from crsim.runner.build import build_experiment
from crsim.runner.config import ExperimentConfig
from support import records_without_timing


def _config(users: int = 12, **fields: object) -> ExperimentConfig:
    return ExperimentConfig.model_validate({"users": {"size": users}, "max_turns": 12, **fields})


def test_manifest_then_dialogues_and_same_seed_same_records(tmp_path: Path) -> None:
    config = _config(concurrency=5)
    manifest_first: list[bool] = []

    class Watch:
        total: int | None = None

        def set_total(self, total: int) -> None:
            self.total = total

        def advance(self, count: int = 1, *, error: bool = False) -> None:
            manifest_first.append((tmp_path / "a" / "manifest.json").exists())

    watch = Watch()
    asyncio.run(run_batch(build_experiment(config), tmp_path / "a", progress=watch))
    assert manifest_first == [True] * 24 and watch.total == 24
    asyncio.run(run_batch(build_experiment(config.model_copy(update={"concurrency": 1})), tmp_path / "b"))
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["planned_dialogues"] == 24
    assert [c["name"] for c in manifest["components"]["crss"]] == ["popular", "retrieval"]
    assert "patience" in manifest["components"]["simulators"][0]["args"]  # defaults are recorded
    first = records_without_timing(tmp_path / "a" / "dialogues.jsonl")
    assert len(first) == 24
    assert first == records_without_timing(tmp_path / "b" / "dialogues.jsonl")


def test_different_seed_gives_different_dialogues(tmp_path: Path) -> None:
    asyncio.run(run_batch(build_experiment(_config(seed=1)), tmp_path / "a"))
    asyncio.run(run_batch(build_experiment(_config(seed=2)), tmp_path / "b"))
    assert records_without_timing(tmp_path / "a" / "dialogues.jsonl") != records_without_timing(
        tmp_path / "b" / "dialogues.jsonl"
    )


def test_existing_run_needs_resume_and_an_unchanged_config(tmp_path: Path) -> None:
    asyncio.run(run_batch(build_experiment(_config(users=2)), tmp_path / "r"))
    with pytest.raises(ConfigError, match="--resume"):
        asyncio.run(run_batch(build_experiment(_config(users=2)), tmp_path / "r"))
    with pytest.raises(ConfigError, match="config differs"):
        asyncio.run(run_batch(build_experiment(_config(users=2, seed=9)), tmp_path / "r", resume=True))
    result = asyncio.run(run_batch(build_experiment(_config(users=2)), tmp_path / "r", resume=True))
    assert (result.already_done, result.ran) == (4, 0)


def test_repair_tail_cuts_only_a_half_written_line(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b"}\n{"id": "c", "utter')
    assert repair_tail(path) == len('{"id": "c", "utter')
    assert path.read_text() == '{"id": "a"}\n{"id": "b"}\n'
    assert repair_tail(path) == 0


def test_resume_may_change_concurrency_and_names_the_fields_that_differ(tmp_path: Path) -> None:
    asyncio.run(run_batch(build_experiment(_config(users=2)), tmp_path / "r"))
    resumed = asyncio.run(
        run_batch(build_experiment(_config(users=2, concurrency=3)), tmp_path / "r", resume=True)
    )
    assert (resumed.already_done, resumed.ran) == (4, 0)
    with pytest.raises(ConfigError, match=r"manifest.json: .* started with in max_turns, seed;"):
        asyncio.run(
            run_batch(build_experiment(_config(users=2, seed=9, max_turns=3)), tmp_path / "r", resume=True)
        )
    with pytest.raises(ConfigError, match=r"started with in users\.size;"):
        asyncio.run(run_batch(build_experiment(_config(users=3)), tmp_path / "r", resume=True))


def _first_line_replaced(path: Path, record: dict[str, object]) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n", encoding="utf-8")


def test_resume_rejects_a_json_line_that_is_not_a_valid_dialogue(tmp_path: Path) -> None:
    experiment = build_experiment(_config(users=2))
    asyncio.run(run_batch(experiment, tmp_path / "r"))
    records = tmp_path / "r" / "dialogues.jsonl"
    # Valid JSON with a planned id, so it used to count as done and then break `crsim evaluate`.
    _first_line_replaced(records, {"id": experiment.tasks[0].id, "utterances": "none"})
    with pytest.raises(DataError, match=r"dialogues.jsonl, record 1, field 'utterances'"):
        asyncio.run(run_batch(experiment, tmp_path / "r", resume=True))


def test_resume_rejects_a_dialogue_recorded_twice(tmp_path: Path) -> None:
    experiment = build_experiment(_config(users=2))
    asyncio.run(run_batch(experiment, tmp_path / "r"))
    records = tmp_path / "r" / "dialogues.jsonl"
    lines = records.read_text(encoding="utf-8").splitlines()
    records.write_text("\n".join([*lines, lines[0]]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"record 5, field 'id': dialogue .* is already in record 1"):
        asyncio.run(run_batch(experiment, tmp_path / "r", resume=True))


def test_a_new_run_never_appends_to_dialogues_without_a_manifest(tmp_path: Path) -> None:
    experiment = build_experiment(_config(users=2))
    asyncio.run(run_batch(experiment, tmp_path / "old"))
    stray = tmp_path / "new" / "dialogues.jsonl"
    stray.parent.mkdir()
    stray.write_bytes((tmp_path / "old" / "dialogues.jsonl").read_bytes())  # e.g. manifest deleted
    for resume in (False, True):
        with pytest.raises(ConfigError, match=r"dialogues.jsonl: dialogues without a manifest.json"):
            asyncio.run(run_batch(experiment, tmp_path / "new", resume=resume))
    assert not (tmp_path / "new" / "manifest.json").exists()


def test_resume_of_a_run_killed_before_its_first_dialogue_and_after_its_last(tmp_path: Path) -> None:
    experiment = build_experiment(_config(users=3, concurrency=50))
    prepare_run_dir(experiment, tmp_path / "r", resume=False)  # manifest written, then killed
    assert not (tmp_path / "r" / "dialogues.jsonl").exists()
    first = asyncio.run(run_batch(experiment, tmp_path / "r", resume=True))
    assert (first.planned, first.already_done, first.ran) == (6, 0, 6)
    before = (tmp_path / "r" / "dialogues.jsonl").read_bytes()
    again = asyncio.run(run_batch(experiment, tmp_path / "r", resume=True))
    assert (again.already_done, again.ran) == (6, 0)
    assert (tmp_path / "r" / "dialogues.jsonl").read_bytes() == before


def test_resume_reports_the_bytes_it_cut(tmp_path: Path) -> None:
    experiment = build_experiment(_config(users=2))
    asyncio.run(run_batch(experiment, tmp_path / "r"))
    records = tmp_path / "r" / "dialogues.jsonl"
    complete = records.read_bytes()
    records.write_bytes(complete + b'{"id": "popular/ab')
    result = asyncio.run(run_batch(experiment, tmp_path / "r", resume=True))
    assert result.dropped_bytes == len(b'{"id": "popular/ab')
    assert records.read_bytes() == complete


def test_no_tasks_gives_an_empty_run(tmp_path: Path) -> None:
    experiment = replace(build_experiment(_config(users=2)), tasks=[])
    result = asyncio.run(run_batch(experiment, tmp_path / "r"))
    assert (result.planned, result.ran) == (0, 0)
    assert (tmp_path / "r" / "dialogues.jsonl").read_bytes() == b""


class FlakyCRS(BaseCRS):
    """Fails in every third dialogue, to check that one failure never sinks a run."""

    registry_name = "flaky"

    async def start(self, session: CRSSession) -> CRSReply | None:
        return CRSReply("Hi, what would you like to watch?")

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        if int(session.id.rsplit("-", 1)[-1].split("#")[0]) % 3 == 0:
            raise ConnectionError("CRS server refused the connection")
        return CRSReply("How about The Matrix (1999)?")


def test_a_failing_crs_ends_only_its_dialogues(tmp_path: Path) -> None:
    experiment = build_experiment(_config(users=9, crss=[{"name": "popular"}]))
    flaky = replace(experiment, crss={"popular": FlakyCRS()})
    result = asyncio.run(run_batch(flaky, tmp_path / "r"))
    dialogues = list(iter_dialogues(tmp_path / "r" / "dialogues.jsonl"))
    assert len(dialogues) == 9
    failed = [d for d in dialogues if d.termination and d.termination.reason == "crs_error"]
    assert failed and len(failed) < 9
    assert result.terminations["crs_error"] == len(failed)
    assert all(d.termination.error.type == "ConnectionError" for d in failed)  # type: ignore[union-attr]


@pytest.mark.slow
def test_resume_after_sigkill_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    run_dir = tmp_path / "killed"
    args = [
        sys.executable,
        "-m",
        "crsim",
        "run",
        "--out",
        str(run_dir),
        "--users",
        "400",
        "--concurrency",
        "4",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    records = run_dir / "dialogues.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if records.exists() and records.read_bytes().count(b"\n") >= 100:
            break
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait()
    written = records.read_bytes().count(b"\n")
    assert 100 <= written < 800, "the run must be killed part-way"
    resumed = subprocess.run([*args, "--resume"], env=env, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    ids = [d.id for d in iter_dialogues(records)]
    assert len(ids) == 800 == len(set(ids))
    clean_dir = tmp_path / "clean"
    subprocess.run([*args[:4], "--out", str(clean_dir), *args[6:]], env=env, capture_output=True, check=True)
    assert records_without_timing(records) == records_without_timing(clean_dir / "dialogues.jsonl")


class FreezeWatchingCRS(BaseCRS):
    """Notes, in each dialogue, how many objects the garbage collector has frozen."""

    registry_name = "freeze_watching"

    def __init__(self) -> None:
        self.seen: list[int] = []

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        self.seen.append(gc.get_freeze_count())
        return CRSReply("How about The Matrix (1999)?", end=True)


def test_the_heap_alive_at_the_start_is_frozen_for_the_batch_only(tmp_path: Path) -> None:
    """Full collections during a batch skip the catalogue and the components; afterwards nothing
    stays frozen, and a process that froze objects itself keeps them as they were."""
    experiment = build_experiment(_config(users=3, crss=[{"name": "popular"}]))
    watching = FreezeWatchingCRS()
    watched = replace(experiment, crss={"popular": watching})
    assert gc.get_freeze_count() == 0
    asyncio.run(run_batch(watched, tmp_path / "a"))
    assert len(watching.seen) == 3 and min(watching.seen) > 10_000  # the catalogue's objects at least
    assert gc.get_freeze_count() == 0
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        asyncio.run(run_batch(replace(watched, tasks=watched.tasks[:1]), tmp_path / "b"))
        assert gc.get_freeze_count() > 0.9 * before  # still frozen (a few were freed by refcount)
    finally:
        gc.unfreeze()


def test_the_runner_modules_import_each_other_in_no_circle() -> None:
    """The local holding code has its own module: the batch and the Ray executor both import it,
    and neither imports the other back (scripts/import_graph.py --files)."""
    import importlib.util

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("import_graph", root / "scripts" / "import_graph.py")
    assert spec is not None and spec.loader is not None
    import_graph = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(import_graph)
    circles = [group for group in import_graph.file_circles(root / "src") if "crsim.runner.batch" in group]
    assert circles == []
