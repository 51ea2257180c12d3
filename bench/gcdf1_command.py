"""`crsim gcdf1 score` as a whole command on 1,000 dialogues: wall and CPU time, startup included.

    python bench/gcdf1_command.py [--data ../shared/datasets/gcdf1] [--dialogues 1000] [--repeat 5]

The 128 dialogues of the reference evaluator's `dialogues_00{1..4}.json` are repeated, each copy
with its own id, to `--dialogues` and written as 8 files in a temporary folder. Each measurement is
a fresh `python -m crsim gcdf1 score FILES --canonical-map ... --config ...` (as the `crsim` script
runs it), timed by wall clock and by the child's CPU time (user + system, from wait4); the best of
N runs is kept, since other processes only ever add time. The command is single-threaded, so on an
idle core its wall time is its CPU time; on a shared machine the CPU time is the number to compare.

Rows: the command printing the corpus means; the same writing the per-dialogue scores and the
behaviour log (`-o`); in-run baselines `python -c pass` and a `json.load` of the same files (the floor
of reading them). Compared with the goal of issue 21 (2.4 s on an idle core, at least 50x the
reference's 120 s per 1,000 dialogues). Writes bench/results/gcdf1_command.json. Not a unit test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "gcdf1_command.json"
REFERENCE_S_PER_1000 = 120.0
GOAL_S = 2.4
FILES = 8


def default_data() -> Path:
    shared = ROOT.parent / "shared" / "datasets" / "gcdf1"
    return shared if shared.is_dir() else ROOT / "tests" / "fixtures" / "gcdf1"


def _read(path: Path) -> Any:
    if path.suffix == ".gz":
        import gzip

        with gzip.open(path, "rt", encoding="utf-8") as handle:
            return json.load(handle)
    return json.loads(path.read_text(encoding="utf-8"))


def _found(data: Path, stem: str) -> Path:
    for suffix in ("", ".gz"):
        if (path := data / f"{stem}{suffix}").is_file():
            return path
    raise SystemExit(f"{data}: no {stem}(.gz)")


def write_corpus(data: Path, dialogues: int, out: Path) -> list[Path]:
    """`dialogues` dialogues (the shipped ones repeated, ids made unique) in `FILES` files."""
    shipped = [d for i in range(1, 5) for d in _read(_found(data, f"dialogues_00{i}.json"))]
    corpus = [
        {**shipped[i % len(shipped)], "dialogue_id": f"{shipped[i % len(shipped)]['dialogue_id']}#{i}"}
        for i in range(dialogues)
    ]
    per_file = -(-dialogues // FILES)
    paths = []
    for index in range(FILES):
        path = out / f"dialogues_{index}.json"
        path.write_text(json.dumps(corpus[index * per_file : (index + 1) * per_file]), encoding="utf-8")
        paths.append(path)
    return paths


def _once(argv: list[str]) -> tuple[float, float]:
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    error = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv[:6])} ... failed: {error.decode()[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime


def best(argv: list[str], repeat: int) -> dict[str, float]:
    runs = [_once(argv) for _ in range(repeat)]
    return {"wall_s": min(w for w, _ in runs), "cpu_s": min(c for _, c in runs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--dialogues", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    python = sys.executable
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        files = [str(p) for p in write_corpus(args.data, args.dialogues, Path(tmp))]
        score = [python, "-m", "crsim", "gcdf1", "score", *files]
        score += ["--canonical-map", str(_found(args.data, "multiwoz21_canonical_map.json"))]
        score += ["--config", str(_found(args.data, "multiwoz_user_evaluator.yaml"))]
        loader = "import json, sys\nfor p in sys.argv[1:]:\n    json.load(open(p, encoding='utf-8'))"
        cases = [
            ("python -c pass (baseline)", [python, "-c", "pass"]),
            ("json.load of the files (baseline)", [python, "-c", loader, *files]),
            ("crsim gcdf1 score", score),
            ("crsim gcdf1 score -o (scores and behaviour log written)", [*score, "-o", f"{tmp}/scores.json"]),
        ]
        rows = []
        for label, argv in cases:
            rows.append({"command": label, **best(argv, args.repeat)})
            print(
                f"  {label}: {rows[-1]['cpu_s']:.3f} s CPU, {rows[-1]['wall_s']:.3f} s wall", file=sys.stderr
            )
    for row in rows[2:]:
        row["dialogues_per_cpu_s"] = round(args.dialogues / row["cpu_s"], 1)
        row["x_reference"] = round(REFERENCE_S_PER_1000 * args.dialogues / 1000 / row["cpu_s"], 1)
        row["within_goal_cpu"] = row["cpu_s"] <= GOAL_S
    result = {
        "dialogues": args.dialogues,
        "repeat": args.repeat,
        "cpus": os.cpu_count(),
        "goal_s": GOAL_S,
        "reference_s_per_1000": REFERENCE_S_PER_1000,
        "load_1min_before": round(load_before, 2),
        "load_1min_after": round(os.getloadavg()[0], 2),
        "rows": rows,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print("| command | wall s | CPU s | × reference (CPU) |\n|---|---:|---:|---:|")
    for row in rows:
        times = f"{row['wall_s']:.3f} | {row['cpu_s']:.3f}"
        print(f"| `{row['command']}` | {times} | {row.get('x_reference', '')} |")
    loads = f"load (1 min) before {result['load_1min_before']}, after {result['load_1min_after']}"
    print(f"{loads}; goal {GOAL_S} s on an idle core; wrote {RESULTS}")


if __name__ == "__main__":
    main()
