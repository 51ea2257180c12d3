"""What crsim costs on top of the LLM: `llm_single` dialogues against a slow OpenAI-compatible server.

    python bench/llm_overhead.py [--delay 0.2] [--seconds 8] [--levels 1,4,16,64] [--sdk]
        [--one-client] [--repeat N] [--profile]

A separate process serves `/v1/chat/completions`, answering every request after a fixed `delay` and
admitting at most C requests at a time, so the ideal call rate is C / delay. For each C, crsim runs
`llm_single` users against the `popular` CRS with the user role's `max_concurrency` set to C, through
the real `openai` provider, client, cache (read-write, in a temporary run folder) and batch layer:
its default path (`client: direct`, aiohttp through `direct_client`) and with `--sdk` its path
through the official SDK (`client: sdk`),
in the same run against the same server; `--repeat N` alternates the arms N times (medians reported).

Reported per C: calls per second as a share of the ideal; the same share for the in-run baseline, a
bare loop of C workers posting the same request with bare httpx, one keep-alive client per worker
(the upper bound; `shared pool`, all workers on one client, is shown too); CPU milliseconds per call
of each arm (crsim's: the whole process, simulator, CRS, cache and records included, divided by the
LLM calls); and crsim's CPU time as a share of wall time, in total and for crsim's own code alone
(from a cProfile pass: the share of profiled time spent inside crsim's modules, the CRS under test
excluded and reported separately; time in libraries crsim calls, such as sqlite3 or jinja2, is not
counted as crsim's). Not a unit test.
Writes bench/results/llm_overhead.json.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results" / "llm_overhead.json"
TURNS = 5  # user turns per dialogue, each one LLM call (the scripted answer never ends the dialogue)


# --------------------------------------------------------------------------- the slow server (own process)
def serve(port: int, delay: float, admit: int) -> None:
    import uvicorn

    gate: asyncio.Semaphore | None = None
    body = json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 0,
            "model": "bench",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "Something light, maybe a comedy?"},
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 8, "total_tokens": 108},
        }
    ).encode()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        nonlocal gate
        if scope["type"] != "http":
            return
        gate = gate or asyncio.Semaphore(admit)
        more = True
        while more:
            message = await receive()
            more = message.get("more_body", False)
        async with gate:
            await asyncio.sleep(delay)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, backlog=4096)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(delay: float, admit: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(port), "--delay", str(delay), "--admit", str(admit)]
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("the benchmark server did not start")


# --------------------------------------------------------------------------- baseline: bare httpx workers
async def baseline(base_url: str, level: int, seconds: float, shared: bool = False) -> dict[str, float]:
    """C workers posting the same request in a loop, each through its own keep-alive client.

    The upper bound is one client (one connection) per worker: httpx's connection pool spends Python
    time on every request that grows with the connections it holds (httpcore re-scans all of them, and
    counts the idle ones once per connection, whenever a request arrives or leaves), so C workers
    sharing one pool of C connections were CPU-bound at high C (0.13 of the ideal at C = 64, below
    crsim). `shared` measures that variant too (`shared_pool`), to show it; it is not the baseline.
    """
    import httpx

    payload = {"model": "bench", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 8}
    done = 0
    tls = httpx.create_ssl_context()  # built once: httpx builds one per client otherwise (~30 ms each)
    limits = httpx.Limits(max_connections=level, max_keepalive_connections=level)
    one = httpx.AsyncClient(limits=limits, timeout=60, verify=tls) if shared else None
    clients = [one] if one else [httpx.AsyncClient(timeout=60, verify=tls) for _ in range(level)]
    cpu, started = time.process_time(), time.perf_counter()
    end = started + seconds

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal done
        while time.perf_counter() < end:
            response = await client.post(f"{base_url}/chat/completions", json=payload)
            response.raise_for_status()
            json.loads(response.content)
            done += 1

    await asyncio.gather(*(worker(one or clients[i]) for i in range(level)))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    for client in clients:
        await client.aclose()
    return {"calls_per_s": done / wall, "cpu_ms_per_call": 1000 * cpu / max(done, 1)}


async def baseline_direct(base_url: str, level: int, seconds: float) -> dict[str, float]:
    """C workers posting the same request in a loop through crsim's direct client (`direct_client`,
    aiohttp, the default path's), each with its own: the upper bound for crsim on that path, which
    sends with a lighter client than httpx (the httpx baseline is the bound for the SDK path)."""
    from crsim.llm.providers.direct_client import Client

    payload = {"model": "bench", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 8}
    headers = {"Authorization": "Bearer no-key", "Accept": "application/json", "User-Agent": "bench"}
    clients = [Client(base_url, headers, max_redirects=3, cap=1 << 23) for _ in range(level)]
    done = 0
    cpu, started = time.process_time(), time.perf_counter()
    end = started + seconds

    async def worker(client: Client) -> None:
        nonlocal done
        while time.perf_counter() < end:
            body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
            answer = await client.post_json("chat/completions", body)
            if answer.status != 200:
                raise RuntimeError(f"HTTP {answer.status}")
            json.loads(answer.body)
            done += 1

    await asyncio.gather(*(worker(client) for client in clients))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    for client in clients:
        await client.aclose()
    return {"calls_per_s": done / wall, "cpu_ms_per_call": 1000 * cpu / max(done, 1)}


# --------------------------------------------------------------------------- crsim
def crsim_config(base_url: str, level: int, dialogues: int, out: Path, client: str = "direct") -> Any:
    from crsim.run.config import ExperimentConfig

    users = min(dialogues, 500)
    return ExperimentConfig.model_validate(
        {
            "name": "llm-overhead",
            "users": {"size": users},
            "trials": max(1, -(-dialogues // users)),
            "simulators": [{"name": "llm_single"}],
            "crss": [{"name": "popular"}],
            "metrics": [],
            "max_turns": TURNS,
            "concurrency": 2 * level + 2,
            "llm": {
                "default": {
                    "provider": "openai",
                    "model": "bench",
                    "base_url": base_url,
                    "max_concurrency": level,
                    "max_retries": 0,
                    "timeout": 60,
                    "client": client,
                }
            },
            "out": str(out),
        }
    )


def run_crsim(
    base_url: str, level: int, dialogues: int, profile: bool, client: str = "direct"
) -> dict[str, float]:
    from crsim.run.batch import run_batch
    from crsim.run.build import build_experiment

    with tempfile.TemporaryDirectory() as tmp:
        experiment = build_experiment(crsim_config(base_url, level, dialogues, Path(tmp) / "run", client))
        experiment = replace(experiment, tasks=experiment.tasks[:dialogues])
        profiler = cProfile.Profile() if profile else None
        cpu, wall = time.process_time(), time.perf_counter()
        if profiler:
            profiler.enable()
        asyncio.run(run_batch(experiment, Path(tmp) / "run"))
        if profiler:
            profiler.disable()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        calls = sum(llm.calls for llm in experiment.llms._roles.values())
    result = {"calls": calls, "wall_s": wall, "cpu_s": cpu, "calls_per_s": calls / wall}
    if profiler:
        stats = pstats.Stats(profiler)
        entries = stats.stats.items()  # type: ignore[attr-defined]
        crsim = f"{os.sep}crsim{os.sep}"
        crs = f"{crsim}crs{os.sep}"  # the CRS under test (here `popular`) is not crsim's overhead
        own = sum(v[2] for k, v in entries if crsim in k[0] and crs not in k[0])
        under_test = sum(v[2] for k, v in entries if crs in k[0])
        total = sum(v[2] for _, v in entries)
        result["own_share_of_profiled"] = own / total if total else 0.0
        result["crs_share_of_profiled"] = under_test / total if total else 0.0
    return result


def one_client(base_url: str, level: int, dialogues: int) -> dict[str, float]:
    """crsim as before issue 21: every call of the provider through one SDK client (one pool)."""
    from crsim.llm.providers import openai_sdk as provider

    kept = provider.CALLS_PER_CLIENT
    provider.CALLS_PER_CLIENT = 1_000_000
    try:
        return run_crsim(base_url, level, dialogues, profile=False, client="sdk")
    finally:
        provider.CALLS_PER_CLIENT = kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--admit", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds the server waits per answer")
    parser.add_argument("--seconds", type=float, default=8.0, help="target duration of each measurement")
    parser.add_argument("--levels", default="1,4,16,64", help="concurrency levels C")
    parser.add_argument("--profile", action="store_true", help="a cProfile pass: crsim's own share of CPU")
    parser.add_argument(
        "--one-client", action="store_true", help="also run crsim with one SDK client, as before issue 21"
    )
    parser.add_argument("--sdk", action="store_true", help="also run crsim through the SDK (`client: sdk`)")
    parser.add_argument("--repeat", type=int, default=1, help="alternate the arms this many times")
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.delay, args.admit)
        return

    rows = []
    load_before = os.getloadavg()[0]
    for level in [int(x) for x in args.levels.split(",")]:
        rows.append(measure(level, args))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "delay_s": args.delay,
        "turns_per_dialogue": TURNS,
        "cpus": os.cpu_count(),
        "load_1min_before": round(load_before, 2),
        "load_1min_after": round(os.getloadavg()[0], 2),
        "rows": rows,
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    loads = f"load (1 min) before {result['load_1min_before']}, after {result['load_1min_after']}"
    print(f"{loads}; wrote {RESULTS}")


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def arms(args: argparse.Namespace) -> list[str]:
    """crsim's ways of sending measured in this run: the default path first."""
    return ["direct"] + (["sdk"] if args.sdk else [])


def measure(level: int, args: argparse.Namespace) -> dict[str, Any]:
    """One concurrency level: the baseline and each crsim arm alternately, `--repeat` times."""
    ideal = level / args.delay
    dialogues = max(2, int(ideal * args.seconds / TURNS))
    runs: dict[str, list[dict[str, float]]] = {
        "baseline": [],
        "baseline_direct": [],
        **{arm: [] for arm in arms(args)},
    }
    process, base_url = start_server(args.delay, level)
    try:
        shared = asyncio.run(baseline(base_url, level, args.seconds / 2, shared=True))
        for _ in range(args.repeat):
            runs["baseline"].append(asyncio.run(baseline(base_url, level, args.seconds)))
            runs["baseline_direct"].append(asyncio.run(baseline_direct(base_url, level, args.seconds)))
            for arm in arms(args):
                timed = run_crsim(base_url, level, dialogues, profile=False, client=arm)
                timed["cpu_ms_per_call"] = 1000 * timed["cpu_s"] / max(timed["calls"], 1)
                runs[arm].append(timed)
        one_pool = one_client(base_url, level, dialogues) if args.one_client else None
        profiled = run_crsim(base_url, level, max(2, dialogues // 2), profile=True) if args.profile else None
    finally:
        process.terminate()
        process.wait()
    row = summarize(level, ideal, runs, shared)
    if one_pool:
        row["one_sdk_client_calls_per_s"] = round(one_pool["calls_per_s"], 2)
        row["one_sdk_client_cpu_ms_per_call"] = round(1000 * one_pool["cpu_s"] / max(one_pool["calls"], 1), 3)
    if profiled:
        cpu_share = row["direct"]["cpu_share_of_wall"]
        row["own_code_cpu_share_of_wall"] = round(cpu_share * profiled["own_share_of_profiled"], 4)
        row["crs_under_test_cpu_share_of_wall"] = round(cpu_share * profiled["crs_share_of_profiled"], 4)
    show(row)
    return row


def summarize(
    level: int, ideal: float, runs: dict[str, list[dict[str, float]]], shared: dict[str, float]
) -> dict[str, Any]:
    """Medians over the repeats of each arm: rate, share of the ideal, CPU per call; ratios against
    the baseline (rates: crsim / baseline; CPU: baseline / crsim, so 1 is as light as the bare loop)."""
    bare_rate = median([r["calls_per_s"] for r in runs["baseline"]])
    bare_cpu = median([r["cpu_ms_per_call"] for r in runs["baseline"]])
    row: dict[str, Any] = {
        "C": level,
        "ideal_calls_per_s": ideal,
        "repeats": len(runs["baseline"]),
        "baseline_calls_per_s": round(bare_rate, 2),
        "baseline_share_of_ideal": round(bare_rate / ideal, 4),
        "baseline_cpu_ms_per_call": round(bare_cpu, 3),
        "baseline_runs_share_of_ideal": [round(r["calls_per_s"] / ideal, 4) for r in runs["baseline"]],
        "shared_pool_share_of_ideal": round(shared["calls_per_s"] / ideal, 4),
        "load_1min": round(os.getloadavg()[0], 2),
    }
    direct_rate = median([r["calls_per_s"] for r in runs["baseline_direct"]])
    direct_cpu = median([r["cpu_ms_per_call"] for r in runs["baseline_direct"]])
    row["baseline_direct"] = {
        "calls_per_s": round(direct_rate, 2),
        "share_of_ideal": round(direct_rate / ideal, 4),
        "runs_share_of_ideal": [round(r["calls_per_s"] / ideal, 4) for r in runs["baseline_direct"]],
        "cpu_ms_per_call": round(direct_cpu, 3),
    }
    for arm, timed in runs.items():
        if arm.startswith("baseline"):
            continue
        # each path against the bare loop on its own client: direct against direct_client, sdk against
        # httpx
        bound_rate, bound_cpu = (direct_rate, direct_cpu) if arm == "direct" else (bare_rate, bare_cpu)
        rate = median([r["calls_per_s"] for r in timed])
        cpu = median([r["cpu_ms_per_call"] for r in timed])
        row[arm] = {
            "calls_per_s": round(rate, 2),
            "share_of_ideal": round(rate / ideal, 4),
            "runs_share_of_ideal": [round(r["calls_per_s"] / ideal, 4) for r in timed],
            "vs_baseline": round(rate / bound_rate, 4),
            "cpu_ms_per_call": round(cpu, 3),
            "runs_cpu_ms_per_call": [round(r["cpu_ms_per_call"], 3) for r in timed],
            "baseline_vs_crsim_cpu": round(bound_cpu / cpu, 3),
            "cpu_share_of_wall": round(median([r["cpu_s"] / r["wall_s"] for r in timed]), 4),
            "calls": int(timed[0]["calls"]),
        }
    return row


def show(row: dict[str, Any]) -> None:
    level, ideal = row["C"], row["ideal_calls_per_s"]
    print(
        f"C={level:>3}  ideal {ideal:7.1f}/s  baseline {row['baseline_calls_per_s']:7.1f}/s "
        f"({row['baseline_share_of_ideal']:.1%} of ideal, "
        f"{row['baseline_cpu_ms_per_call']:.2f} ms CPU/call)  "
        f"shared pool {row['shared_pool_share_of_ideal']:.1%}  load {row['load_1min']}",
        flush=True,
    )
    bound = row["baseline_direct"]
    print(
        f"C={level:>3}  baseline on crsim's direct client {bound['calls_per_s']:7.1f}/s "
        f"({bound['share_of_ideal']:.1%} of ideal, {bound['cpu_ms_per_call']:.2f} ms CPU/call; "
        f"runs {bound['runs_share_of_ideal']})",
        flush=True,
    )
    for arm in ("direct", "sdk"):
        if arm in row:
            a = row[arm]
            print(
                f"C={level:>3}  crsim ({arm}) {a['calls_per_s']:7.1f}/s ({a['share_of_ideal']:.1%} of ideal, "
                f"{a['vs_baseline']:.2f}x its baseline; runs {a['runs_share_of_ideal']})  "
                f"{a['cpu_ms_per_call']:.2f} ms CPU/call "
                f"(its baseline/crsim {a['baseline_vs_crsim_cpu']:.2f}; "
                f"runs {a['runs_cpu_ms_per_call']})  CPU/wall {a['cpu_share_of_wall']:.1%}",
                flush=True,
            )
    if "one_sdk_client_calls_per_s" in row:
        print(
            f"C={level:>3}  crsim with one SDK client (before issue 21): "
            f"{row['one_sdk_client_calls_per_s'] / row['ideal_calls_per_s']:.1%} of ideal, "
            f"{row['one_sdk_client_cpu_ms_per_call']:.2f} ms CPU/call",
            flush=True,
        )
    if "own_code_cpu_share_of_wall" in row:
        print(
            f"C={level:>3}  crsim code {row['own_code_cpu_share_of_wall']:.2%} of wall, "
            f"CRS {row['crs_under_test_cpu_share_of_wall']:.2%}",
            flush=True,
        )


if __name__ == "__main__":
    main()
