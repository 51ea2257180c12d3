"""Dialogues per second: the local executor against a Ray cluster of one and of two worker nodes.

    python bench/ray_cluster.py [--cpu-dialogues 1500] [--llm-dialogues 240] [--delay 0.2]
        [--max-concurrency 8]

Two workloads, each run three ways in the same bench run (the local run is the baseline of the
ratios):
- CPU-bound: `abus` × `retrieval`, no metrics, `--cpu-dialogues` dialogues (about 30 s of one core).
- LLM-bound: `llm_single` × `popular` against a stub OpenAI-compatible server on 127.0.0.1 started by
  the bench (bench/llm_overhead.py's server: every answer after `--delay` seconds, any number at once),
  five LLM calls per dialogue, `max_concurrency` requests in flight per process.
The clusters are separate `ray start` processes on this machine (tests/ray_nodes.py: a head with no
CPU for tasks, so every shard runs on a worker node, and one or two worker nodes of one CPU each),
joined with token authentication; each arm is one driver process (`run_batch` with the config's
executor), timed from its start to its last record, so a Ray arm includes connecting to the cluster
and each worker process's import of crsim and build of the experiment. The records are not scored.

The machine is stated in the output (CPU count and the 1-minute load average before and after): on a
machine with few cores shared with other work, the CPU-bound arms cannot gain from more worker
processes, and every number moves with the load.
Reported per arm: seconds to the last record (`wall s`) and to the first (`1st rec s`: start-up),
dialogues per second over the whole arm and after the first record (`steady/s`, the rate once every
worker has built the experiment), each against the local run's.
Needs the `ray` extra (without it the bench says so and exits 0).
Writes bench/results/ray_cluster.json. Not a unit test.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "ray_cluster.json"
LLM_TURNS = 5


def population(dialogues: int) -> dict[str, Any]:
    """Users × trials giving `dialogues` (rounded up to whole trials of at most 500 users)."""
    trials = -(-dialogues // 500)
    return {"users": {"size": -(-dialogues // trials)}, "trials": trials}


def cpu_config(dialogues: int) -> dict[str, Any]:
    return {
        "name": "ray-bench-cpu",
        **population(dialogues),
        "simulators": [{"name": "abus"}],
        "crss": [{"name": "retrieval"}],
        "metrics": [],
        "max_turns": 10,
        "shard_size": 50,
    }


def llm_config(dialogues: int, base_url: str, max_concurrency: int) -> dict[str, Any]:
    return {
        "name": "ray-bench-llm",
        **population(dialogues),
        "simulators": [{"name": "llm_single"}],
        "crss": [{"name": "popular"}],
        "metrics": [],
        "max_turns": LLM_TURNS,
        "concurrency": 2 * max_concurrency,
        "shard_size": 40,  # few, large shards: a worker waiting on the LLM holds its CPU
        "llm": {
            "default": {
                "provider": "openai",
                "model": "bench",
                "base_url": base_url,
                "max_concurrency": max_concurrency,
                "max_retries": 0,
                "timeout": 60,
            },
            "cache": {"mode": "off"},  # every call reaches the server, in every arm
        },
    }


class Clock:
    """A progress display that notes when each record arrived."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def set_total(self, total: int) -> None:
        pass

    def advance(self, count: int = 1, *, error: bool = False) -> None:
        self.times.extend([time.perf_counter()] * count)


def arm(config_path: str, out: str) -> None:
    """One driver process: hold the config's dialogues; print the seconds to the first and the last
    record and the rate between them (after the start-up: imports, builds, connecting, workers)."""
    started = time.perf_counter()
    from crsim.runner.batch import run_batch
    from crsim.runner.build import build_experiment
    from crsim.runner.config import ExperimentConfig

    clock = Clock()
    config = ExperimentConfig.model_validate_json(Path(config_path).read_text(encoding="utf-8"))
    result = asyncio.run(run_batch(build_experiment(config), Path(out), progress=clock))
    first, last = clock.times[0], clock.times[-1]
    first_batch = sum(1 for t in clock.times if t <= first + 0.05)  # a Ray shard arrives all at once
    rate = (len(clock.times) - first_batch) / (last - first) if last > first else float("nan")
    print(
        json.dumps(
            {
                "ran": result.ran,
                "wall_s": last - started,
                "first_record_s": first - started,
                "steady_per_s": rate,
            }
        )
    )


def run_arm(config: dict[str, Any], env: dict[str, str] | None, folder: Path, name: str) -> dict[str, float]:
    path = folder / f"{name}.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, __file__, "--arm", str(path), "--out", str(folder / name)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"arm {name} failed:\n{done.stderr[-3000:]}")
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    return {key: measured[key] for key in ("ran", "wall_s", "first_record_s", "steady_per_s")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arm", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--cpu-dialogues", type=int, default=1500, help="dialogues of the CPU-bound config")
    parser.add_argument("--llm-dialogues", type=int, default=240, help="dialogues of the LLM-bound config")
    parser.add_argument("--delay", type=float, default=0.2, help="seconds the stub server waits per answer")
    parser.add_argument("--max-concurrency", type=int, default=8, help="LLM requests in flight per process")
    args = parser.parse_args()
    if args.arm:
        arm(args.arm, args.out)
        return

    if importlib.util.find_spec("ray") is None:
        print("skipped: Ray is not installed (pip install 'crsim[ray]')")
        return
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(HERE.parent / "tests"))
    from llm_overhead import start_server
    from ray_nodes import local_cluster

    load_before = os.getloadavg()[0]
    server, base_url = start_server(args.delay, admit=100_000)
    configs = {
        "cpu": cpu_config(args.cpu_dialogues),
        "llm": llm_config(args.llm_dialogues, base_url, args.max_concurrency),
    }
    rows: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="crsim-ray-bench-") as tmp:
            folder = Path(tmp)
            for workload, config in configs.items():
                measured = run_arm({**config, "executor": "local"}, None, folder, f"{workload}-local")
                rows.append({"workload": workload, "executor": "local", "worker_nodes": 0, **measured})
            for workers in (1, 2):
                with local_cluster(workers=workers, cpus=1, head_cpus=0) as cluster:
                    for workload, config in configs.items():
                        on_ray = {**config, "executor": "ray", "ray_address": cluster.address}
                        name = f"{workload}-ray{workers}"
                        measured = run_arm(on_ray, cluster.env, folder, name)
                        rows.append(
                            {"workload": workload, "executor": "ray", "worker_nodes": workers, **measured}
                        )
    finally:
        server.kill()
        server.wait()

    for row in rows:
        row["dialogues_per_s"] = row["ran"] / row["wall_s"]
        local = next(r for r in rows if r["workload"] == row["workload"] and r["executor"] == "local")
        row["ratio_to_local"] = local["wall_s"] / row["wall_s"]
        row["steady_ratio_to_local"] = row["steady_per_s"] / local["steady_per_s"]
    result = {
        "cpus": os.cpu_count(),
        "load_1min_before": round(load_before, 2),
        "load_1min_after": round(os.getloadavg()[0], 2),
        "llm_delay_s": args.delay,
        "llm_calls_per_dialogue": LLM_TURNS,
        "max_concurrency_per_process": args.max_concurrency,
        "rows": rows,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")

    print(
        f"{'workload':<9}{'executor':<20}{'dialogues':>10}{'wall s':>8}{'1st rec s':>10}{'dial/s':>8}"
        f"{'× local':>8}{'steady/s':>9}{'× local':>8}"
    )
    for row in rows:
        where = (
            "local, 1 process" if row["executor"] == "local" else f"ray, {row['worker_nodes']} worker node(s)"
        )
        print(
            f"{row['workload']:<9}{where:<20}{row['ran']:>10}{row['wall_s']:>8.1f}{row['first_record_s']:>10.1f}"
            f"{row['dialogues_per_s']:>8.1f}{row['ratio_to_local']:>8.2f}{row['steady_per_s']:>9.1f}"
            f"{row['steady_ratio_to_local']:>8.2f}"
        )
    ideal = args.max_concurrency / args.delay / LLM_TURNS
    per_process = f"{args.max_concurrency} in flight / {args.delay} s / {LLM_TURNS} calls"
    print(
        f"LLM-bound ceiling per process: {per_process} = {ideal:.1f} dialogues/s (× worker processes on Ray)"
    )
    loads = f"load (1 min) before {result['load_1min_before']}, after {result['load_1min_after']}"
    print(f"machine: {os.cpu_count()} CPUs shared with other work; {loads}; wrote {RESULTS}")


if __name__ == "__main__":
    main()
