"""Throughput of the quickstart setting (abus × popular/retrieval) with 1,000 users.

    python bench/abus_throughput.py [--users 1000] [--repeats 1]

Reports dialogues per second, the share of wall time in each layer (user simulator, CRS, loop and
record writing), the time to build the population and to score the run, and — as the in-run
baseline — the same batch machinery with null participants holding dialogues of the same length,
so the ratio shows what the real components cost on top of crsim's own plumbing.
Writes bench/results/abus_throughput.json. Not a unit test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from crsim.crs.base import BaseCRS, CRSReply, CRSSession
from crsim.eval.scores import build_metrics, score_dialogues
from crsim.model.io import iter_dialogues
from crsim.model.user import SimulatedUser
from crsim.runner.batch import run_batch
from crsim.runner.build import Experiment, build_experiment
from crsim.runner.config import ExperimentConfig
from crsim.sim.base import UserTurn

RESULTS = Path(__file__).resolve().parent / "results" / "abus_throughput.json"


class Timer:
    def __init__(self) -> None:
        self.seconds = 0.0

    async def timed(self, awaitable: Any) -> Any:
        start = time.perf_counter()
        try:
            return await awaitable
        finally:
            self.seconds += time.perf_counter() - start


class TimedCRS:
    def __init__(self, inner: Any, timer: Timer) -> None:
        self.inner, self.timer, self.registry_name = inner, timer, inner.registry_name

    async def start(self, session: CRSSession) -> Any:
        return await self.timer.timed(self.inner.start(session))

    async def respond(self, session: CRSSession, text: str) -> Any:
        return await self.timer.timed(self.inner.respond(session, text))

    async def close(self, session: CRSSession) -> None:
        await self.inner.close(session)


class TimedSimulator:
    def __init__(self, inner: Any, timer: Timer) -> None:
        self.inner, self.timer = inner, timer

    async def start(self, user: SimulatedUser, greeting: CRSReply | None = None) -> Any:
        return await self.timer.timed(self.inner.start(user, greeting))

    async def respond(self, reply: CRSReply) -> Any:
        return await self.timer.timed(self.inner.respond(reply))


class NullCRS(BaseCRS):
    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        return CRSReply("ok")


class NullUser:
    def __init__(self, turns: int) -> None:
        self.turns, self.count = turns, 0

    async def start(self, user: SimulatedUser, greeting: CRSReply | None = None) -> UserTurn:
        self.count = 1
        return UserTurn("hello", end=self.turns <= 1)

    async def respond(self, reply: CRSReply) -> UserTurn:
        self.count += 1
        return UserTurn("more", end=self.count >= self.turns)


def run(experiment: Experiment) -> tuple[float, Path]:
    folder = Path(tempfile.mkdtemp(prefix="crsim-bench-"))
    start = time.perf_counter()
    asyncio.run(run_batch(experiment, folder / "run"))
    return time.perf_counter() - start, folder / "run"


def measure(users: int) -> dict[str, Any]:
    config = ExperimentConfig(users={"size": users})  # type: ignore[arg-type]
    start = time.perf_counter()
    experiment = build_experiment(config)
    build_s = time.perf_counter() - start
    sim_timer, crs_timer = Timer(), Timer()
    timed = replace(
        experiment,
        crss={k: TimedCRS(v, crs_timer) for k, v in experiment.crss.items()},
        simulator_factories={
            k: (lambda seed, f=f: TimedSimulator(f(seed), sim_timer))  # type: ignore[misc]
            for k, f in experiment.simulator_factories.items()
        },
    )
    wall, folder = run(timed)
    dialogues = list(iter_dialogues(folder / "dialogues.jsonl"))
    start = time.perf_counter()
    score_dialogues(dialogues, build_metrics(config.metrics))
    score_s = time.perf_counter() - start
    mean_turns = sum(d.num_turns for d in dialogues) / len(dialogues)

    null_turns = max(1, round(mean_turns))
    null = replace(
        experiment,
        crss={k: NullCRS() for k in experiment.crss},
        simulator_factories={k: (lambda seed: NullUser(null_turns)) for k in experiment.simulator_factories},
    )
    null_wall, _ = run(null)
    n = len(dialogues)
    return {
        "dialogues": n,
        "mean_turns": round(mean_turns, 2),
        "wall_s": round(wall, 3),
        "dialogues_per_s": round(n / wall, 1),
        "share": {
            "user_simulator": round(sim_timer.seconds / wall, 3),
            "crs": round(crs_timer.seconds / wall, 3),
            "loop_and_records": round(1 - (sim_timer.seconds + crs_timer.seconds) / wall, 3),
        },
        "build_population_s": round(build_s, 3),
        "score_s": round(score_s, 3),
        "baseline_null_participants_dialogues_per_s": round(n / null_wall, 1),
        "ratio_real_to_null_throughput": round(null_wall / wall, 3),
    }


def print_table(result: dict[str, Any]) -> None:
    """The measurements as a plain table (the JSON file has the same numbers)."""
    rows = [
        ("dialogues (mean turns)", f"{result['dialogues']} ({result['mean_turns']})"),
        ("wall time", f"{result['wall_s']} s"),
        ("dialogues per second", result["dialogues_per_s"]),
        ("baseline: null participants, dialogues/s", result["baseline_null_participants_dialogues_per_s"]),
        ("ratio real / baseline throughput", result["ratio_real_to_null_throughput"]),
        *((f"share of wall time: {k}", v) for k, v in result["share"].items()),
        ("build population", f"{result['build_population_s']} s"),
        ("score the run", f"{result['score_s']} s"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--users", type=int, default=1000)
    args = parser.parse_args()
    result = measure(args.users)
    print_table(result)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
