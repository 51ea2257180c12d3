"""Profile `abus` dialogues with one CRS on a generated catalogue (bench/catalogue_scale.py's venues).

    python bench/catalogue_profile.py FOLDER [--size 100000] [--crs retrieval] [--dialogues 100]

Writes the catalogue into FOLDER (kept, so the domain cache of the next call is warm), builds the
experiment as the bench does, then prints the cProfile of the dialogues (CPU spent per function,
top 30 by cumulative time) and the dialogues per CPU second. Not a unit test.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from catalogue_scale import write_catalogue
from crsim.runner.batch import run_batch
from crsim.runner.build import build_experiment
from crsim.runner.config import ExperimentConfig


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("folder", type=Path)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--crs", default="retrieval")
    parser.add_argument("--dialogues", type=int, default=100)
    parser.add_argument("--sort", default="tottime")
    parser.add_argument("--callees", default="", help="also print what functions matching this call")
    parser.add_argument("--dump", type=Path, help="also write the profile (pstats) to this file")
    parser.add_argument("--no-profile", action="store_true", help="time the dialogues only")
    args = parser.parse_args()
    domain = args.folder / "domain.yaml" if args.size else None
    if args.size and not domain.is_file():  # type: ignore[union-attr]
        write_catalogue(args.folder, args.size)
    config = ExperimentConfig.model_validate(
        {
            "domain": str(domain) if domain else "restaurants",
            "users": {"source": "goals", "size": args.dialogues},
            "crss": [{"name": args.crs}],
            "simulators": [{"name": "abus"}],
            "seed": 3,
            "concurrency": 1,
        }
    )
    cpu = time.process_time()
    experiment = build_experiment(config)
    print(f"build: {time.process_time() - cpu:.1f} s CPU", flush=True)
    out = args.folder / f"run-{args.crs}-{time.time_ns()}"
    profile = cProfile.Profile()
    cpu = time.process_time()
    if not args.no_profile:
        profile.enable()
    asyncio.run(run_batch(experiment, out))
    profile.disable()
    cpu = time.process_time() - cpu
    if not args.no_profile:
        stats = pstats.Stats(profile).sort_stats(args.sort)
        stats.print_stats(30)
        if args.dump:
            stats.dump_stats(args.dump)
        if args.callees:
            stats.print_callees(args.callees)
    how = "" if args.no_profile else " (profiled)"
    print(f"{args.dialogues} dialogues in {cpu:.2f} s CPU{how}: {args.dialogues / cpu:.1f} per CPU s")


if __name__ == "__main__":
    main()
