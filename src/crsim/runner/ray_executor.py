"""The Ray executor: shards of dialogue tasks run as Ray tasks; the driver writes the run folder.

Each shard is a list of task ids. A Ray worker rebuilds the experiment from the config (the same
`build_experiment`, so the same users, ids and seeds) once per process, holds its shard as one asyncio
batch with `hold_dialogues` (the same code as the local executor) and returns the records as JSON.
The driver appends and flushes each shard's records as soon as the shard finishes (`ray.wait`), so a
killed run keeps every finished shard and `--resume` works the same as with the local executor. The
records depend only on the config and seed, never on which process held them.

The LLM response cache: a worker on the driver's node uses the run folder's cache file itself. A
worker on another node cannot reach the run folder; it uses a cache file on its own node (under the
node's temporary directory, one per run folder, so a resumed or repeated run on that node finds its
answers) and returns the answers it stored with the shard's records; the driver adds them to the run
folder's cache, which so holds every answer of the run whatever node made it.
"""

from __future__ import annotations

import asyncio
import hashlib
import tempfile
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


#: Cache rows as `ResponseCache.journal` notes them: (key, model, created, completion JSON).
CacheRows = list[tuple[str, str, float, str]]


def node_cache_path(run_dir: str) -> Path:
    """The LLM cache of a run on a node other than the driver's: in the node's temporary directory,
    one file per run folder."""
    folder = hashlib.sha256(run_dir.encode()).hexdigest()[:16]
    return RunPaths(Path(tempfile.gettempdir()) / "crsim-llm-cache" / folder).llm_cache


def run_shard(
    config_json: str, run_dir: str, task_ids: list[str], driver_node: str
) -> tuple[list[str], CacheRows]:
    """Runs in a Ray worker: hold the shard's dialogues; return their records as JSON lines and, on a
    node other than the driver's (`driver_node`), the LLM answers the shard stored in the cache."""
    remote = _ray().get_runtime_context().get_node_id() != driver_node
    key = hashlib.sha256(f"{config_json}\n{run_dir}".encode()).hexdigest()
    if key not in _WORKER_STATE:
        experiment = build_experiment(ExperimentConfig.model_validate_json(config_json))
        experiment.llms.set_cache_path(
            node_cache_path(run_dir) if remote else RunPaths(Path(run_dir)).llm_cache
        )
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
    cache = experiment.llms.cache if remote and experiment.llm_users else None  # no file without LLMs
    stored: CacheRows = []
    if cache is not None:
        cache.journal = stored
    try:
        loop.run_until_complete(hold_dialogues(experiment, shard, lambda d: records.append(writable(d)[1])))
    finally:
        if cache is not None:
            cache.journal = None
    return records, stored


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
        here = ray.get_runtime_context().get_node_id()
        pending = [remote.remote(config_json, folder, ids, here) for ids in shards(tasks, config.shard_size)]
        try:
            while pending:
                # A bounded wait, so an interrupted driver stops within a second, not after a shard.
                ready, pending = await asyncio.to_thread(ray.wait, pending, num_returns=1, timeout=1.0)
                for ref in ready:
                    try:
                        lines, answers = ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        raise CrsimError(f"a Ray shard failed ({type(exc).__name__}): {exc}") from None
                    if answers and experiment.llms.cache is not None:
                        experiment.llms.cache.put_rows(answers)  # from another node: into the run folder
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
