"""The Ray executor: shards of dialogue tasks run as Ray tasks; the driver writes the run folder.

Each shard is a list of task ids. A Ray worker rebuilds the experiment from the config (the same
`build_experiment`, so the same users, ids and seeds) once per process, holds its shard as one asyncio
batch with `hold_dialogues` (the same code as the local executor) and returns the records as JSON.
The driver appends and flushes each shard's records as soon as the shard finishes (`ray.wait`), so a
killed run keeps every finished shard and `--resume` works the same as with the local executor. The
records depend only on the config and seed, never on which process held them.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crsim.core.errors import ConfigError, CrsimError
from crsim.model.dialogue import Dialogue
from crsim.model.run_folder.dialogues import writable
from crsim.model.run_folder.files import RunPaths
from crsim.runner.build import DialogueTask, Experiment, build_experiment
from crsim.runner.config import ExperimentConfig
from crsim.runner.holding import hold_dialogues

#: Per worker process: config hash -> (experiment, event loop). Kept for the process's lifetime so
#: later shards reuse the population, the CRSs, LLM connections and per-endpoint limits.
_WORKER_STATE: dict[str, tuple[Experiment, asyncio.AbstractEventLoop]] = {}


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("--executor ray needs Ray: pip install 'crsim[ray]'") from None
    return ray


def shards(tasks: list[DialogueTask], size: int) -> list[list[str]]:
    """Task ids in consecutive shards of at most `size`."""
    return [[t.id for t in tasks[start : start + size]] for start in range(0, len(tasks), size)]


def run_shard(config_json: str, run_dir: str, task_ids: list[str]) -> list[str]:
    """Runs in a Ray worker: hold the shard's dialogues and return their records as JSON lines."""
    key = hashlib.sha256(f"{config_json}\n{run_dir}".encode()).hexdigest()
    if key not in _WORKER_STATE:
        experiment = build_experiment(ExperimentConfig.model_validate_json(config_json))
        Path(run_dir).mkdir(parents=True, exist_ok=True)  # on another node: a local LLM cache
        experiment.llms.set_cache_path(RunPaths(Path(run_dir)).llm_cache)
        _WORKER_STATE[key] = (experiment, asyncio.new_event_loop())
    experiment, loop = _WORKER_STATE[key]
    by_id = {t.id: t for t in experiment.tasks}
    missing = [i for i in task_ids if i not in by_id]
    if missing:
        raise CrsimError(
            f"the worker's experiment has no dialogue {missing[0]!r}; do the nodes run the same crsim?"
        )
    records: list[str] = []
    shard = [by_id[i] for i in task_ids]
    loop.run_until_complete(hold_dialogues(experiment, shard, lambda d: records.append(writable(d)[1])))
    return records


async def hold_on_ray(
    experiment: Experiment, tasks: list[DialogueTask], run_dir: Path, record: Callable[[Dialogue], None]
) -> None:
    """Run `tasks` as Ray tasks of `config.shard_size` dialogues; hand each record to `record` (which
    appends it to the run folder) as its shard completes."""
    if not tasks:
        return
    ray = _ray()
    config = experiment.config
    started_here = not ray.is_initialized()
    if started_here:
        _connect(ray, config.ray_address)
    try:
        remote = ray.remote(num_cpus=1)(run_shard)
        config_json = config.model_dump_json()
        folder = str(run_dir.resolve())
        pending = [remote.remote(config_json, folder, ids) for ids in shards(tasks, config.shard_size)]
        try:
            while pending:
                # A bounded wait, so an interrupted driver stops within a second, not after a shard.
                ready, pending = await asyncio.to_thread(ray.wait, pending, num_returns=1, timeout=1.0)
                for ref in ready:
                    try:
                        lines = ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        raise CrsimError(f"a Ray shard failed ({type(exc).__name__}): {exc}") from None
                    for line in lines:
                        record(Dialogue.model_validate_json(line))
        finally:
            for ref in pending:  # shards nobody will write: free the cluster
                ray.cancel(ref)
    finally:
        if started_here:
            ray.shutdown()


def _connect(ray: Any, address: str | None) -> None:
    """Join the cluster at `address`, or start a Ray instance on this machine when there is none."""
    options: dict[str, Any] = {"logging_level": "WARNING", "log_to_driver": False}
    if address is None:
        options["include_dashboard"] = False
    try:
        ray.init(address=address, **options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"--address {address!r}: cannot connect to a Ray cluster ({exc})") from None
