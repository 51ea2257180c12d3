"""crsim's dialogue loop against a fast HTTP CRS, as a share of what a bare async client gets from it.

    python bench/http_crs.py [--levels 1,8,32,128] [--seconds 6] [--turns 10] [--repeat 3] [--profile]

A separate process serves the generic protocol (docs/generic-crs-openapi.yaml) and answers every
request at once: `POST /sessions` -> a session id, `POST /sessions/{id}/messages` -> a reply naming a
catalogue item in `recommended_items` (so no title linking is needed), `DELETE /sessions/{id}`. It is a
minimal asyncio HTTP/1.1 server with keep-alive (no framework), so that its own cost per request is as
small as possible; it counts the requests it answered (`GET /count`).

For each concurrency C, measured in the same invocation against the same server:

- baseline: a bare loop of C workers, each holding whole dialogues (create, `--turns` messages,
  delete) one after another through its own keep-alive `httpx.AsyncClient` (one connection, kept
  across its dialogues), parsing every reply with `json.loads`: what any httpx-based client gets
  from this server;
- crsim: `run_batch` with `--turns` scripted user turns per dialogue (the user never ends the
  dialogue, so each has exactly the baseline's requests) against the `generic_http` CRS, with the
  batch concurrency and the CRS's `max_concurrency` both C, writing the run folder as a run does.
  Each dialogue holds its own client; a finished dialogue's client (and connection) is lent to the
  next one with its cookie jar emptied, so both arms open about C connections in all.

Reported per C: requests per second answered by the server (from its own count) for both, the
ratio crsim / baseline (goal: at least 0.9), the client process's CPU time per request (per
user turn for crsim: one turn is one message request), and the ratio of the two arms' median CPU
times per request over the repeats (baseline / crsim: on an idle machine, with the server on the
other core, the rate ratio the client's CPU allows). Each arm is run `--repeat` times alternately
and the best rate of each is kept (other processes on the machine only ever slow a run down); the
1-minute load average before and after is recorded. `--profile` adds a cProfile pass of crsim at the
largest C and prints where its time goes. Writes bench/results/http_crs.json. Not a unit test.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

RESULTS = Path(__file__).resolve().parent / "results" / "http_crs.json"


# --------------------------------------------------------------------------- the stub CRS (own process)
class _StubProtocol(asyncio.Protocol):
    """HTTP/1.1 keep-alive, Content-Length bodies only: enough for httpx and nothing more."""

    count = 0
    sessions = 0
    item = "m1"

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head = self.buffer[:end]
            length, start = 0, head.lower().find(b"\r\ncontent-length:")
            if start >= 0:
                stop = head.find(b"\r\n", start + 2)
                length = int(head[start + 17 : stop if stop >= 0 else len(head)])
            if len(self.buffer) < end + 4 + length:
                return
            self.buffer = self.buffer[end + 4 + length :]
            self.transport.write(self._answer(head[: head.find(b"\r\n")]))

    def _answer(self, request_line: bytes) -> bytes:
        method, path = request_line.split(b" ")[:2]
        cls = type(self)
        if path == b"/count":
            body = json.dumps({"count": cls.count}).encode()
        else:
            cls.count += 1
            if method == b"POST" and path == b"/sessions":
                cls.sessions += 1
                body = b'{"session_id": "s%d", "greeting": null}' % cls.sessions
            elif method == b"POST":
                body = b'{"text": "How about this one?", "recommended_items": ["%s"]}' % cls.item.encode()
            else:
                body = b"{}"
        return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (
            len(body),
            body,
        )


def serve(port: int, item: str) -> None:
    _StubProtocol.item = item

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(_StubProtocol, "127.0.0.1", port, backlog=4096)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(item: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, __file__, "--serve", str(port), "--item", item])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("the stub CRS did not start")


def served(base_url: str) -> int:
    import httpx

    return int(httpx.get(f"{base_url}/count").json()["count"])


# --------------------------------------------------------------------------- baseline: bare httpx workers
async def baseline(base_url: str, level: int, dialogues: int, turns: int, shared: bool = False) -> None:
    """`dialogues` dialogues held by `level` workers, each with its own keep-alive client.

    With `shared`, the workers share one client with a pool of `level` connections instead: httpx's
    pool hands connections out in Python time that grows with the requests waiting on it, which
    makes that variant the slowest at high C (shown as `shared_pool`; it is not the upper bound).
    """
    import httpx

    todo = iter(range(dialogues))
    limits = httpx.Limits(max_connections=level, max_keepalive_connections=level)
    tls = httpx.create_ssl_context()  # built once: httpx builds one per client otherwise (~30 ms each)
    one = httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60, verify=tls) if shared else None

    async def worker() -> None:
        client = one or httpx.AsyncClient(base_url=base_url, timeout=60, verify=tls)
        for index in todo:
            created = await client.post("/sessions", json={"dialogue_id": f"d{index}", "seed": index})
            session = json.loads(created.content)["session_id"]
            for turn in range(1, turns + 1):
                reply = await client.post(
                    f"/sessions/{session}/messages", json={"text": f"Something else ({turn}).", "turn": turn}
                )
                json.loads(reply.content)
            await client.delete(f"/sessions/{session}")
        if one is None:
            await client.aclose()

    await asyncio.gather(*(worker() for _ in range(level)))
    if one is not None:
        await one.aclose()


# --------------------------------------------------------------------------- crsim
def crsim_experiment(base_url: str, level: int, dialogues: int, turns: int) -> Any:
    from crsim.domains.movielens import movie_domain
    from faults.harness import http_experiment

    experiment = http_experiment(
        movie_domain(), base_url, dialogues=dialogues, max_turns=turns, max_concurrency=level, max_retries=0
    )
    return replace(experiment, config=experiment.config.model_copy(update={"concurrency": level}))


def run_crsim(experiment: Any, profiler: cProfile.Profile | None = None) -> None:
    from crsim.runner.batch import run_batch

    with tempfile.TemporaryDirectory() as tmp:
        if profiler:
            profiler.enable()
        asyncio.run(run_batch(experiment, Path(tmp) / "run"))
        if profiler:
            profiler.disable()


def timed(work: Any, base_url: str) -> dict[str, float]:
    """Wall and CPU seconds of `work()` and the requests the server answered meanwhile."""
    before = served(base_url)
    cpu, wall = time.process_time(), time.perf_counter()
    work()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    requests = served(base_url) - before
    return {"wall_s": wall, "cpu_s": cpu, "requests": requests, "per_s": requests / wall}


def load() -> float:
    return os.getloadavg()[0]


def measure(base_url: str, level: int, seconds: float, turns: int, repeat: int) -> dict[str, Any]:
    probe = timed(lambda: asyncio.run(baseline(base_url, level, max(level, 20), turns)), base_url)
    dialogues = max(level, int(probe["per_s"] * seconds / (turns + 2)))
    experiment = crsim_experiment(base_url, level, dialogues, turns)
    bare_runs, crsim_runs = [], []
    for _ in range(repeat):
        bare_runs.append(timed(lambda: asyncio.run(baseline(base_url, level, dialogues, turns)), base_url))
        crsim_runs.append(timed(lambda: run_crsim(experiment), base_url))
    bare = max(bare_runs, key=lambda r: r["per_s"])
    crsim = max(crsim_runs, key=lambda r: r["per_s"])
    return {
        "C": level,
        "dialogues": dialogues,
        "requests_per_run": crsim["requests"],
        "baseline_requests_per_s": round(bare["per_s"], 1),
        "crsim_requests_per_s": round(crsim["per_s"], 1),
        "crsim_vs_baseline": round(crsim["per_s"] / bare["per_s"], 3),
        "baseline_cpu_ms_per_request": round(1000 * bare["cpu_s"] / bare["requests"], 3),
        "crsim_cpu_ms_per_request": round(1000 * crsim["cpu_s"] / crsim["requests"], 3),
        "crsim_cpu_ms_per_turn": round(1000 * crsim["cpu_s"] / (dialogues * turns), 3),
        "all_ratios": [round(c["per_s"] / b["per_s"], 3) for b, c in zip(bare_runs, crsim_runs, strict=True)],
        "cpu_ratio_median": round(_cpu_per_request(bare_runs) / _cpu_per_request(crsim_runs), 3),
    }


def _cpu_per_request(runs: list[dict[str, float]]) -> float:
    """The median CPU time per request over the runs: steadier than any one run on a loaded machine."""
    return statistics.median(r["cpu_s"] / r["requests"] for r in runs)


def profile(base_url: str, level: int, dialogues: int, turns: int) -> str:
    profiler = cProfile.Profile()
    run_crsim(crsim_experiment(base_url, level, dialogues, turns), profiler)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--item", default="m1", help=argparse.SUPPRESS)
    parser.add_argument("--levels", default="1,8,32,128", help="concurrency levels C")
    parser.add_argument("--seconds", type=float, default=6.0, help="target duration of each run")
    parser.add_argument("--turns", type=int, default=10, help="user turns (message requests) per dialogue")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each arm per C; the best is kept")
    parser.add_argument("--profile", action="store_true", help="profile crsim at the largest C")
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.item)
        return

    from crsim.domains.movielens import movie_domain

    item = next(iter(movie_domain().items)).id
    levels = [int(x) for x in args.levels.split(",")]
    rows, profiled = [], None
    load_before = load()
    process, base_url = start_server(item)
    try:
        for level in levels:
            row = measure(base_url, level, args.seconds, args.turns, args.repeat)
            row["load_1min"] = round(load(), 2)
            rows.append(row)
            bare = f"{row['baseline_requests_per_s']:7.1f} req/s ({row['baseline_cpu_ms_per_request']:.3f} ms"
            ours = f"{row['crsim_requests_per_s']:7.1f} req/s ({row['crsim_cpu_ms_per_request']:.3f} ms"
            ours += f" CPU/req, {row['crsim_cpu_ms_per_turn']:.3f} ms/turn)"
            bare += " CPU/req)"
            print(
                f"C={level:>3}  baseline {bare}  crsim {ours}  ratio {row['crsim_vs_baseline']:.3f} "
                f"{row['all_ratios']}  CPU ratio (medians) {row['cpu_ratio_median']:.3f}  "
                f"load {row['load_1min']}",
                flush=True,
            )
        if args.profile:
            profiled = profile(base_url, levels[-1], rows[-1]["dialogues"] // 2, args.turns)
            print(profiled)
    finally:
        process.terminate()
        process.wait()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "turns_per_dialogue": args.turns,
        "repeat": args.repeat,
        "cpus": os.cpu_count(),
        "load_1min_before": round(load_before, 2),
        "load_1min_after": round(load(), 2),
        "rows": rows,
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    loads = f"load (1 min) before {result['load_1min_before']}, after {result['load_1min_after']}"
    print(f"{loads}; wrote {RESULTS}")


if __name__ == "__main__":
    main()
