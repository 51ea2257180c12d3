"""GCDF1 scoring speed: dialogues per second on the reference evaluator's MultiWOZ dialogues.

The 128 dialogues of `dialogues_00{1..4}.json` are repeated to `--dialogues` (1,000) and scored
with the published configuration and canonical map. Measured in the same run:

- `crsim`: `Gcdf1Scorer` as shipped, a fresh scorer (empty caches) per repetition, dialogues
  already parsed; `crsim_parse` adds reading the files' dialogues into crsim's types; and
  `crsim_unique_128` scores only the 128 distinct dialogues with a fresh scorer (no dialogue
  is seen twice, so no benefit from repetition).
- baseline `caches_off`: the same scorer with `memoise=False` (no memo of value matching or of
  repeated action lists), i.e. crsim's design without its caches.
- baseline `reference` (only with `--reference DIR`): the reference evaluator (alexcoca/gcdf1,
  MIT) reconstructed outside the repository, run by `DIR/venv/bin/python DIR/run_ref.py` in its
  own environment (fuzzywuzzy, python-Levenshtein, omegaconf); it is not part of crsim and is
  never committed. Its timing covers scoring only, like `crsim`.

Wall time depends on what else runs on the machine, so CPU time is reported too. No timing is
asserted. Usage:

    python bench/gcdf1_speed.py [--data ../shared/datasets/gcdf1] [--dialogues 1000]
        [--repeats 3] [--reference /tmp/gcdf1_ref] [--out bench/results/gcdf1_speed.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from crsim.studies.gcdf1 import CanonicalMap, Gcdf1Scorer, GoalDialogue, load_config, parse_sgd_dialogue
from crsim.studies.gcdf1.sgd import read_json

ROOT = Path(__file__).resolve().parent.parent


def default_data() -> Path:
    shared = ROOT.parent / "shared" / "datasets" / "gcdf1"
    return shared if shared.is_dir() else ROOT / "tests" / "fixtures" / "gcdf1"


def find(data: Path, stem: str) -> Path:
    for suffix in ("", ".gz"):
        if (path := data / f"{stem}{suffix}").is_file():
            return path
    raise SystemExit(f"{data}: no {stem}(.gz)")


def timed(work: Callable[[], Any], repeats: int) -> dict[str, float]:
    """The fastest of `repeats` runs (wall and CPU seconds of that run)."""
    best: dict[str, float] | None = None
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        work()
        run = {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}
        if best is None or run["wall_s"] < best["wall_s"]:
            best = run
    assert best is not None
    return best


def rate(n: int, run: dict[str, float]) -> dict[str, float]:
    return {
        "dialogues": n,
        "wall_s": round(run["wall_s"], 3),
        "cpu_s": round(run["cpu_s"], 3),
        "dialogues_per_s": round(n / run["wall_s"], 1),
        "dialogues_per_cpu_s": round(n / run["cpu_s"], 1),
    }


def run_reference(ref: Path, data: Path, files: list[Path], n: int, unique: int) -> dict[str, Any]:
    """Time the reconstructed reference evaluator in its own interpreter (see module docstring)."""
    python, script = ref / "venv" / "bin" / "python", ref / "run_ref.py"
    repeat = -(-n // unique)
    command = [
        str(python),
        str(script),
        os.devnull,
        str(find(data, "multiwoz21_canonical_map.json")),
        str(find(data, "multiwoz_user_evaluator.yaml")),
        str(repeat),
        *map(str, files),
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, check=True, env={**os.environ, "REF_LIMIT": str(n)}
    )
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    return rate(int(measured["dialogues"]), measured)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--dialogues", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--reference", type=Path, default=None, help="Folder of the reconstructed reference.")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "gcdf1_speed.json")
    args = parser.parse_args()

    files = [find(args.data, f"dialogues_00{i}.json") for i in range(1, 5)]
    raw = [d for path in files for d in read_json(path)]
    work_raw = (raw * (args.dialogues // len(raw) + 1))[: args.dialogues]
    config = load_config(find(args.data, "multiwoz_user_evaluator.yaml"))
    cmap = CanonicalMap.load(find(args.data, "multiwoz21_canonical_map.json"))
    parsed: list[GoalDialogue] = [parse_sgd_dialogue(d) for d in work_raw]

    def score(dialogues: list[GoalDialogue], memoise: bool) -> Callable[[], Any]:
        return lambda: [s.score(d) for s in [Gcdf1Scorer(config, cmap, memoise=memoise)] for d in dialogues]

    def parse_and_score() -> None:
        scorer = Gcdf1Scorer(config, cmap)
        for d in work_raw:
            scorer.score(parse_sgd_dialogue(d))

    n, unique = len(parsed), len(raw)
    results: dict[str, Any] = {
        "data": args.data.name,  # the folder name only: results never hold a path of the machine
        "unique_dialogues": unique,
        "config": "published configuration and canonical map",
        "crsim": rate(n, timed(score(parsed, True), args.repeats)),
        "crsim_parse": rate(n, timed(parse_and_score, args.repeats)),
        "crsim_unique_128": rate(unique, timed(score(parsed[:unique], True), args.repeats)),
        "baseline_caches_off": rate(n, timed(score(parsed, False), args.repeats)),
    }
    if args.reference is not None:
        results["baseline_reference"] = run_reference(args.reference, args.data, files, n, unique)
        results["baseline_reference"]["what"] = (
            "alexcoca/gcdf1 reconstructed outside the repository (not committed), own interpreter"
        )
    ours = results["crsim"]
    ratios = {
        "crsim_vs_caches_off": round(
            ours["dialogues_per_s"] / results["baseline_caches_off"]["dialogues_per_s"], 1
        )
    }
    if "baseline_reference" in results:
        reference = results["baseline_reference"]
        ratios["crsim_vs_reference"] = round(ours["dialogues_per_s"] / reference["dialogues_per_s"], 1)
        ratios["crsim_vs_reference_cpu"] = round(
            ours["dialogues_per_cpu_s"] / reference["dialogues_per_cpu_s"], 1
        )
    results["ratios"] = ratios
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    results["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_average_1m": round(load[0], 2) if load else None,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")

    table = Table(title=f"GCDF1 scoring speed ({n} dialogues; best of {args.repeats})")
    for column in ("run", "wall s", "CPU s", "dialogues/s", "dialogues/CPU s"):
        table.add_column(column, justify="left" if column == "run" else "right")
    for key in ("crsim", "crsim_parse", "crsim_unique_128", "baseline_caches_off", "baseline_reference"):
        if key in results:
            r = results[key]
            table.add_row(
                key,
                f"{r['wall_s']:.2f}",
                f"{r['cpu_s']:.2f}",
                f"{r['dialogues_per_s']:.0f}",
                f"{r['dialogues_per_cpu_s']:.0f}",
            )
    console = Console()
    console.print(table)
    console.print("ratios: " + ", ".join(f"{k} = {v}x" for k, v in ratios.items()))
    console.print(f"written: {args.out}")


if __name__ == "__main__":
    main()
