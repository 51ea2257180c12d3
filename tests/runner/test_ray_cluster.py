"""`crsim run --executor ray --address auto` on a Ray cluster of three nodes, each a separate `ray
start` process on this machine with its own raylet and object store (tests/ray_nodes.py): the records
are the local executor's, and every node held shards."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from support import records_without_timing

pytest.importorskip("ray", reason="the Ray executor needs the `ray` extra")
from ray_nodes import LocalCluster, local_cluster  # noqa: E402  (after the skip: it runs `ray`)

pytestmark = pytest.mark.slow

#: 60 dialogues (30 users × abus × popular, retrieval) in shards of 10: more shards than the
#: cluster's three CPUs, so every node gets some.
CONFIG = "name: cluster\nusers: {size: 30}\nmax_turns: 10\nshard_size: 10\nconcurrency: 4\n"


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """A head and two worker nodes, one CPU each; stopped (only these processes) after the module."""
    with local_cluster(workers=2, cpus=1) as started:
        yield started


def test_three_nodes_each_with_its_own_raylet(cluster: LocalCluster) -> None:
    assert cluster.active_nodes() == 3
    assert len(cluster.raylets()) == 3
    assert "3.0 CPU" in cluster.status()


def test_a_cluster_run_gives_the_local_records(cluster: LocalCluster, tmp_path: Path) -> None:
    config = tmp_path / "cluster.yaml"
    config.write_text(CONFIG, encoding="utf-8")
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
    ray_records = records_without_timing(tmp_path / "ray" / "dialogues.jsonl")
    assert len(ray_records) == 60
    assert ray_records == records_without_timing(tmp_path / "local" / "dialogues.jsonl")
    assert cluster.nodes_that_ran("run_shard") == ["head", "worker1", "worker2"]
