"""The Ray executor on a local Ray instance started by the test: same records as the local executor,
streamed into the same run folder, resumable across executors."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.runner.batch import run_batch
from crsim.runner.build import build_experiment
from crsim.runner.config import ExperimentConfig
from support import CountingProgress, records_without_timing

ray = pytest.importorskip("ray", reason="the Ray executor needs the `ray` extra")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """Two local workers, no dashboard; the executor joins this instance instead of starting one."""
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    yield
    ray.shutdown()


def _config(executor: str, **fields: object) -> ExperimentConfig:
    """200 dialogues: 100 users × abus × (popular, retrieval)."""
    return ExperimentConfig.model_validate(
        {"users": {"size": 100}, "max_turns": 10, "executor": executor, "shard_size": 40, **fields}
    )


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("local") / "run"
    asyncio.run(run_batch(build_experiment(_config("local")), run_dir))
    return run_dir


def test_ray_gives_the_local_executors_records(local_ray: None, local_run: Path, tmp_path: Path) -> None:
    seen = CountingProgress()
    experiment = build_experiment(_config("ray", concurrency=8))
    result = asyncio.run(run_batch(experiment, tmp_path / "ray", progress=seen))
    assert (result.planned, result.ran, seen.total, seen.done) == (200, 200, 200, 200)  # progress saw each
    ray_records = records_without_timing(tmp_path / "ray" / "dialogues.jsonl")
    assert len(ray_records) == 200
    assert ray_records == records_without_timing(local_run / "dialogues.jsonl")
    manifest = json.loads((tmp_path / "ray" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["config"]["executor"] == "ray"


def test_resume_works_across_executors(local_ray: None, local_run: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "killed"
    shutil.copytree(local_run, run_dir)
    records = run_dir / "dialogues.jsonl"
    lines = records.read_text(encoding="utf-8").splitlines(keepends=True)
    records.write_text("".join(lines[:70]) + lines[70][:50], encoding="utf-8")  # killed mid-write
    result = asyncio.run(run_batch(build_experiment(_config("ray")), run_dir, resume=True))
    assert (result.already_done, result.ran) == (70, 130) and result.dropped_bytes == 50
    assert records_without_timing(records) == records_without_timing(local_run / "dialogues.jsonl")


def test_cli_runs_on_ray(local_ray: None, tmp_path: Path) -> None:
    run_dir = tmp_path / "cli"
    args = ["run", "--out", str(run_dir), "--users", "3", "--executor", "ray", "--address", "auto", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert sum(s["n_dialogues"] for s in summary) == 6
    bad = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "x"), "--executor", "spark"])
    assert bad.exit_code == 2 and "--executor: field 'executor'" in bad.output
