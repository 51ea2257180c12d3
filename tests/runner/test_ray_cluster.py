"""`crsim run --executor ray --address auto` on a Ray cluster of three nodes, each a separate `ray
start` process on this machine with its own raylet and object store (tests/ray_nodes.py): the records
are the local executor's, every node held shards, and the run folder's LLM cache holds every answer
of the run, also those made on the worker nodes (which keep their own cache files)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.runner.ray_executor import node_cache_path
from llm_servers import OpenAILikeServer
from support import records_without_timing

pytest.importorskip("ray", reason="the Ray executor needs the `ray` extra")
from ray_nodes import RAY, LocalCluster, free_port, local_cluster

pytestmark = pytest.mark.slow

#: 24 dialogues (12 users × abus × popular, retrieval) in shards of 4: more shards than the
#: cluster's three CPUs, so every node gets some.
CONFIG = "name: cluster\nusers: {size: 12}\nmetrics: []\nmax_turns: 10\nshard_size: 4\nconcurrency: 4\n"


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """A head and two worker nodes, one CPU each; stopped (only these processes) after the module."""
    with local_cluster(workers=2, cpus=1) as started:
        yield started


def test_three_nodes_each_with_its_own_raylet(cluster: LocalCluster) -> None:
    assert cluster.active_nodes() == 3
    assert len(cluster.raylets()) == 3


def test_a_node_without_the_clusters_token_is_refused(cluster: LocalCluster) -> None:
    """The cluster runs in token mode: a node with another token cannot join (and one with no
    `RAY_AUTH_MODE`, on a machine with `~/.ray/auth_token`, fails the same way; docs/scaling.md)."""
    env = {**cluster.env, "RAY_AUTH_TOKEN": "0" * 64}
    env.pop("RAY_ADDRESS")
    command = [RAY, "start", "--address", cluster.address, "--node-ip-address", "127.0.0.1"]
    stranger = cluster.root / "stranger"
    done = subprocess.run(
        [*command, "--temp-dir", str(stranger), "--dashboard-agent-listen-port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "InvalidAuthToken" in done.stdout + done.stderr


def _local_and_cluster_runs(config_text: str, cluster: LocalCluster, tmp_path: Path) -> tuple[Path, Path]:
    """The config run by the local executor (in this process) and by `crsim run --executor ray
    --address auto` (a driver process with the cluster's environment); both run folders."""
    config = tmp_path / "config.yaml"
    config.write_text(config_text, encoding="utf-8")
    local = CliRunner().invoke(app, ["run", str(config), "--out", str(tmp_path / "local"), "--json"])
    assert local.exit_code == 0, local.output
    command = [sys.executable, "-m", "crsim", "run", str(config), "--executor", "ray", "--address", "auto"]
    done = subprocess.run(
        [*command, "--out", str(tmp_path / "ray")],
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return tmp_path / "local", tmp_path / "ray"


def test_a_cluster_run_gives_the_local_records(cluster: LocalCluster, tmp_path: Path) -> None:
    local, on_ray = _local_and_cluster_runs(CONFIG, cluster, tmp_path)
    ray_records = records_without_timing(on_ray / "dialogues.jsonl")
    assert len(ray_records) == 24
    assert ray_records == records_without_timing(local / "dialogues.jsonl")
    assert cluster.nodes_that_ran("run_shard") == ["head", "worker1", "worker2"]


def _cache_keys(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {key for (key,) in db.execute("SELECT key FROM responses")}


def test_the_run_folders_llm_cache_holds_the_answers_of_every_node(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """12 LLM-simulated dialogues in shards of 2 against an OpenAI-compatible server on 127.0.0.1
    (every request gets the same answer, so the order of the calls does not matter)."""
    server = OpenAILikeServer()
    with server.running() as url:
        model = {"provider": "openai", "model": "tiny-chat", "base_url": f"{url}/v1", "max_retries": 0}
        config = {
            "name": "cluster-llm",
            "users": {"size": 12},
            "simulators": [{"name": "llm_single"}],
            "crss": [{"name": "popular"}],
            "metrics": [],
            "max_turns": 3,
            "shard_size": 2,
            "llm": {"default": model},
        }
        local, on_ray = _local_and_cluster_runs(json.dumps(config), cluster, tmp_path)
    assert records_without_timing(on_ray / "dialogues.jsonl") == records_without_timing(
        local / "dialogues.jsonl"
    )
    everything = _cache_keys(local / "llm_cache.sqlite")
    assert len(everything) >= 12
    assert _cache_keys(on_ray / "llm_cache.sqlite") == everything
    on_nodes = node_cache_path(str(on_ray.resolve())).relative_to(Path(tempfile.gettempdir()))
    assert 0 < len(_cache_keys(cluster.root / "tmp" / on_nodes)) <= len(everything)  # the worker nodes' own
