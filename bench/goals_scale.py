"""Goal users on a large catalogue: 100 dialogues abus × retrieval at 20,000 and 200,000 items.

    python bench/goals_scale.py [--sizes 20000 200000] [--dialogues 100] [--uncapped 20000]

Generates a synthetic domain (CSV items: a `kind` with 3 values, so a goal on it alone matches a
third of the catalogue, a genre list, an area, an ordinal price and a requestable year; titles are
word combinations) and, for each size in a fresh subprocess, times reading the domain, building the
experiment's parts one at a time (the title linker, the retrieval CRS's text index, the goal users),
then the whole experiment as `crsim run` builds it (reading the domain and building those parts
again, plus the components), and holding the dialogues (`users.source: goals`, default
`max_goal_targets` 100), and reads the process's peak memory (ru_maxrss). The smallest size is the
in-run baseline: the ratios per item show whether each phase grows linearly with the catalogue.
`--uncapped N` adds a run at N items with `max_goal_targets` above the catalogue size, the behaviour
before the cap (every match a target).
Prints a table and writes bench/results/goals_scale.json. Not a unit test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results" / "goals_scale.json"

_WORDS = """amber autumn bright cedar silver harbour quiet river golden meadow northern stone velvet
winter crimson garden hidden island lantern marble orchard paper rapid shadow summer thunder violet
willow copper falcon ember forest glass hollow ivory jade kettle lemon maple nectar ocean pepper"""
WORDS = _WORDS.split()
GENRES = ["comedy", "drama", "action", "thriller", "horror", "romance", "animation", "mystery"]
AREAS = ["north", "south", "east", "west", "centre", "harbour", "old town", "uptown"]
PRICES = ["cheap", "moderate", "expensive"]

DOMAIN = """\
name: synthetic
item_noun: product
items: {path: items.csv}
slots:
  kind: {cues: [kind, type]}
  genre: {kind: multi}
  area: {}
  price: {kind: ordinal, order: [cheap, moderate, expensive]}
  year: {kind: numeric, informable: false, requestable: true}
"""

#: What one measuring subprocess runs: read the domain, build, hold, report phases and peak memory.
CHILD = r"""
import asyncio, json, resource, sys, time
from pathlib import Path

folder, dialogues, cap = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
times = {}
start = time.perf_counter()
from crsim.domains import read_domain_file
from crsim.runner.batch import run_batch
from crsim.runner.build import build_experiment
from crsim.runner.config import ExperimentConfig
times["import_s"] = time.perf_counter() - start

start = time.perf_counter()
domain = read_domain_file(folder / "domain.yaml")
times["read_domain_s"] = time.perf_counter() - start

# the parts a run builds from the catalogue, one at a time (each is built once and then reused)
start = time.perf_counter()
domain.items.linker
times["linker_s"] = time.perf_counter() - start
from crsim.crs.retrieval import text_index
start = time.perf_counter()
text_index(domain)
times["retrieval_index_s"] = time.perf_counter() - start
from crsim.users.population import PopulationConfig
from crsim.users.goals import build_goal_population
start = time.perf_counter()
build_goal_population(PopulationConfig(source="goals", size=dialogues, max_goal_targets=cap), domain, 3)
times["goal_users_s"] = time.perf_counter() - start

config = ExperimentConfig.model_validate({
    "domain": str(folder / "domain.yaml"),
    "users": {"source": "goals", "size": dialogues, "max_goal_targets": cap},
    "crss": [{"name": "retrieval"}],
    "simulators": [{"name": "abus"}],
    "seed": 3,
    "concurrency": 1,
})
start = time.perf_counter()
experiment = build_experiment(config)
times["build_s"] = time.perf_counter() - start
after_build = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

start = time.perf_counter()
asyncio.run(run_batch(experiment, folder / "run"))
times["dialogues_s"] = time.perf_counter() - start

records = (folder / "run" / "dialogues.jsonl").read_bytes().splitlines()
lines = [json.loads(line) for line in records]
targets = [len(r["information_need"]["targets"]) for r in lines]
matches = [r["user_profile"]["persona"].get("goal_matches", 0) for r in lines]
print(json.dumps({
    **{k: round(v, 3) for k, v in times.items()},
    "peak_rss_mb_after_build": round(after_build / 1024, 1),
    "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    "dialogues": len(lines),
    "ended": sorted({r["termination"]["reason"] for r in lines}),
    "targets_mean": round(sum(targets) / len(targets), 1),
    "targets_max": max(targets),
    "goal_matches_mean": round(sum(matches) / len(matches), 1),
    "goal_matches_max": max(matches),
    "record_bytes_mean": round(sum(len(line) for line in records) / len(records)),
}))
"""


def write_domain(folder: Path, size: int, seed: int = 0) -> None:
    """A synthetic catalogue of `size` items in a CSV file beside its domain file."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "domain.yaml").write_text(DOMAIN, encoding="utf-8")
    with (folder / "items.csv").open("w", encoding="utf-8") as out:
        out.write("id,title,kind,genre,area,price,year\n")
        for n in range(size):
            title = " ".join(rng.sample(WORDS, 3)).title()
            genres = "|".join(rng.sample(GENRES, rng.randint(1, 2)))
            out.write(
                f"p{n},{title},{rng.choice(('book', 'film', 'game'))},{genres},{rng.choice(AREAS)},"
                f"{rng.choice(PRICES)},{rng.randint(1950, 2024)}\n"
            )


def measure(size: int, dialogues: int, cap: int, root: Path) -> dict[str, Any]:
    folder = root / f"items-{size}-cap-{cap}"
    write_domain(folder, size)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), str(dialogues), str(cap)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"size {size}: the measuring process failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = {
        "items": size,
        "max_goal_targets": cap,
        **json.loads(done.stdout.splitlines()[-1]),
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 200_000])
    parser.add_argument("--dialogues", type=int, default=100)
    parser.add_argument("--uncapped", type=int, default=0, help="also run at N items without the cap")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in sorted(args.sizes):
            rows.append(measure(size, args.dialogues, 100, Path(tmp)))
            print(json.dumps(rows[-1]), flush=True)
        if args.uncapped:
            rows.append(measure(args.uncapped, args.dialogues, 10 * args.uncapped, Path(tmp)))
            print(json.dumps(rows[-1]), flush=True)
    base = rows[0]
    phases = ("read_domain_s", "linker_s", "retrieval_index_s", "goal_users_s", "build_s", "dialogues_s")
    ratios = []
    for row in rows[1 : len(args.sizes)]:
        ratios.append(
            {
                "items": row["items"],
                "catalogue_ratio": row["items"] / base["items"],
                **{f"{p}_ratio": round(row[p] / max(base[p], 1e-9), 2) for p in phases},
                "peak_rss_ratio": round(row["peak_rss_mb"] / base["peak_rss_mb"], 2),
            }
        )
    names = ("read", "linker", "index", "users", "build", "dialogues")
    print(
        f"{'items':>8} {'cap':>7} "
        + " ".join(f"{n + ' s':>11}" for n in names)
        + "  peak MB  targets  rec KB"
    )
    for row in rows:
        cells = " ".join(f"{row[p]:>11.2f}" for p in phases)
        print(
            f"{row['items']:>8} {row['max_goal_targets']:>7} {cells} {row['peak_rss_mb']:>8.0f} "
            f"{row['targets_mean']:>8.0f} {row['record_bytes_mean'] / 1024:>7.1f}"
        )
    for ratio in ratios:
        shown = {k: v for k, v in ratio.items() if k.endswith("_ratio") and k != "catalogue_ratio"}
        print(f"x{ratio['catalogue_ratio']:.0f} items: " + ", ".join(f"{k} {v}" for k, v in shown.items()))
    result = {
        "command": "python bench/goals_scale.py " + " ".join(sys.argv[1:]),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "dialogues": args.dialogues,
        "rows": rows,
        "ratios_to_smallest": ratios,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(Path.cwd()) if RESULTS.is_relative_to(Path.cwd()) else RESULTS}")


if __name__ == "__main__":
    main()
