"""`crsim evaluate`, `crsim report` and `crsim compare` at scale: up to a million dialogue records.

    python bench/scale.py [--dialogues 1000000] [--counts 100000,300000,1000000] [--keep DIR]
        [--repeat N (default 2)]

Writes a run folder of synthetic records in the run format (manifest with the default, non-LLM
metrics; `dialogues.jsonl` with 4 CRSs × 2 simulators and a few turns per dialogue: greeting,
preferences, recommendations of shipped movie ids, accept/reject/seen reactions, targets) for the
largest count; the smaller counts are the first records of the same file (the generator is
sequential, so they are what writing that many would give). For each count, each step in its own
subprocess, timed by the child's CPU time (user + system) and peak resident memory (both from wait4):

- in-run baselines: a plain `json.loads` pass over the file, and a pass that validates every line as
  a `Dialogue` (the floor of reading the records into crsim's types);
- `crsim evaluate RUN_DIR --json`.

Then, on the largest folder, `crsim report RUN_DIR` and `crsim compare RUN_DIR --json`.
Limits: at the largest count evaluate within 4× the validation pass's CPU time and every command
under 1 GB peak; evaluate's CPU time linear in the count (CPU per 1,000 dialogues at each count, and
its ratio to the smallest count's). CPU time, not wall time: the machine is shared, and the load
average is printed before and after each step. The same process can take 10–20% more CPU time from
one run to the next on a shared virtual machine: the steps run `--repeat` times (default 2),
interleaved, and each step's least CPU time counts (every run's is kept in the results). Prints a table and
writes bench/results/scale.json. Not a unit test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from crsim.domains.movielens import movie_items
from crsim.eval.scores import default_metrics

RESULTS = Path(__file__).resolve().parent / "results" / "scale.json"
CRSS = ["popular", "retrieval", "llm", "kbrd"]
SIMULATORS = ["abus", "llm_dual"]
GENRES = ["comedy", "drama", "action", "thriller", "horror", "romance", "animation", "sci-fi"]

JSON_PASS = """
import json, sys
n = 0
with open(sys.argv[1], "rb") as handle:
    for line in handle:
        json.loads(line)
        n += 1
print(n)
"""
VALIDATE_PASS = """
import sys
from pathlib import Path
from crsim.model.io import iter_dialogues
print(sum(1 for _ in iter_dialogues(Path(sys.argv[1]))))
"""


def _act(intent: str, *slots: tuple[str, str | None]) -> dict[str, Any]:
    return {"intent": intent, "slots": [list(s) for s in slots]}


def _utterance(role: str, text: str, acts: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"role": role, "text": text, "acts": acts, **extra}


def synthetic_dialogue(index: int, rng: random.Random, items: list[tuple[str, str]]) -> dict[str, Any]:
    """One record as `crsim run` writes it: a greeting, preferences, then recommendation rounds."""
    crs, simulator = CRSS[index % len(CRSS)], SIMULATORS[(index // len(CRSS)) % len(SIMULATORS)]
    user = f"u-{index // (len(CRSS) * len(SIMULATORS)):06d}"
    genre = rng.choice(GENRES)
    targets = [items[rng.randrange(len(items))][0] for _ in range(rng.randint(1, 5))]
    utterances = [
        _utterance(
            "crs", "Hello! What kind of movie are you in the mood for?", [_act("greeting"), _act("elicit")]
        ),
        _utterance(
            "user",
            f"Hi! I'd like a {genre} movie, something recent.",
            [_act("greeting"), _act("disclose", ("genre", genre))],
            annotations={"agenda": ["disclose(decade)", "inquire(plot)", "goodbye()"]},
        ),
    ]
    accepted = False
    for round_ in range(rng.randint(1, 6)):
        shown = [items[rng.randrange(len(items))] for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.15:
            shown[0] = next(i for i in items if i[0] == targets[0])
        titles = ", ".join(title for _, title in shown)
        utterances.append(
            _utterance(
                "crs",
                f"You might like {titles}.",
                [_act("recommend", ("title", title)) for _, title in shown],
                recommended_items=[item_id for item_id, _ in shown],
            )
        )
        reaction = (
            "accept" if shown[0][0] in targets or rng.random() < 0.1 else rng.choice(["reject", "seen"])
        )
        text = {"accept": "Great, I'll watch it!", "reject": "Not for me.", "seen": "I've seen that one."}[
            reaction
        ]
        utterances.append(
            _utterance(
                "user",
                text,
                [_act(reaction, ("title", shown[0][1]))],
                annotations={"judged": {shown[0][0]: {"decision": reaction}}, "failed_rounds": round_},
            )
        )
        if reaction == "accept":
            accepted = True
            break
    utterances.append(_utterance("user", "Thanks, bye!", [_act("goodbye")]))
    return {
        "format_version": "1.1",
        "id": f"{crs}/{simulator}/{user}",
        "utterances": utterances,
        "user_id": user,
        "crs_id": crs,
        "simulator_id": simulator,
        "information_need": {"constraints": {"genre": genre}, "requests": ["plot"], "targets": targets},
        "metadata": {"seed": rng.randrange(2**31), "domain": "movies"},
        "termination": {"reason": "user_ended" if accepted or rng.random() < 0.8 else "max_turns"},
        "timing": {"started_at": "2026-01-01T00:00:00+00:00", "duration_s": round(rng.random(), 6)},
    }


def write_run(folder: Path, dialogues: int, seed: int = 7) -> int:
    """A run folder with `dialogues` synthetic records; returns the size of dialogues.jsonl in bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {"name": "scale", "seed": seed, "domain": "movies", "max_turns": 20}
    config["metrics"] = [spec.model_dump(mode="json") for spec in default_metrics()]
    manifest = {"run_format_version": "1", "config": config, "planned_dialogues": dialogues}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    items = [(item.id, f"{item.title} ({item.year})") for item in movie_items()]
    rng = random.Random(seed)
    with (folder / "dialogues.jsonl").open("w", encoding="utf-8") as handle:
        for index in range(dialogues):
            handle.write(json.dumps(synthetic_dialogue(index, rng, items)) + "\n")
    return (folder / "dialogues.jsonl").stat().st_size


def timed(args: list[str]) -> dict[str, Any]:
    """Wall time, CPU time and peak resident memory of one subprocess (wait4 gives that child's own
    rusage), with the load average before and after."""
    load = os.getloadavg()[0]
    start = time.perf_counter()
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr_bytes = process.stderr.read() if process.stderr else b""
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{stderr_bytes.decode(errors='replace')}")
    cpu = usage.ru_utime + usage.ru_stime
    return {
        "seconds": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "peak_mb": round(usage.ru_maxrss / 1024, 1),
        "load_1m": [round(load, 1), round(os.getloadavg()[0], 1)],
    }


def prefix_run(source: Path, folder: Path, dialogues: int) -> None:
    """A run folder holding the first `dialogues` records of `source`'s."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((source / "manifest.json").read_text(encoding="utf-8"))
    manifest["planned_dialogues"] = dialogues
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    with (source / "dialogues.jsonl").open("rb") as inp, (folder / "dialogues.jsonl").open("wb") as out:
        for _, line in zip(range(dialogues), inp, strict=False):
            out.write(line)


def held(folder: Path) -> int:
    path = folder / "dialogues.jsonl"
    return sum(1 for _ in path.open("rb")) if path.is_file() else 0


def measure_count(folder: Path, repeat: int = 1) -> dict[str, Any]:
    """The baselines and `crsim evaluate` on one run folder. With `repeat` > 1 the three steps run
    that many times, interleaved (so that a slow spell of the machine falls on all of them), and each
    step's figures are those of its run with the least CPU time; every run's CPU time is kept."""
    records = str(folder / "dialogues.jsonl")
    commands = {
        "json.loads pass": [sys.executable, "-c", JSON_PASS, records],
        "Dialogue validation pass": [sys.executable, "-c", VALIDATE_PASS, records],
        "crsim evaluate": [*CRSIM, "evaluate", str(folder), "--json"],
    }
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, args in commands.items():
            if name == "crsim evaluate":
                for output in ("scores.jsonl", "summary.json"):
                    (folder / output).unlink(missing_ok=True)
            runs[name].append(timed(args))
    steps = {}
    for name, timings in runs.items():
        steps[name] = {**min(timings, key=lambda t: t["cpu_s"]), "cpu_s_runs": [t["cpu_s"] for t in timings]}
    dialogues = held(folder)
    validation, evaluate = steps["Dialogue validation pass"], steps["crsim evaluate"]
    return {
        "dialogues": dialogues,
        "file_mb": round((folder / "dialogues.jsonl").stat().st_size / 1e6, 1),
        "score_lines": sum(1 for _ in (folder / "scores.jsonl").open("rb")),
        "steps": steps,
        "evaluate_over_validation_cpu": round(evaluate["cpu_s"] / validation["cpu_s"], 2),
        "evaluate_cpu_ms_per_dialogue": round(1000 * evaluate["cpu_s"] / dialogues, 4),
    }


CRSIM = [sys.executable, "-m", "crsim"]
CPU_LIMIT, MEMORY_LIMIT_MB = 4.0, 1024.0


def save(result: dict[str, Any]) -> None:
    """Write what is measured so far (a long run on a shared machine may be stopped)."""
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


def measure(counts: list[int], root: Path, repeat: int = 1) -> dict[str, Any]:
    largest = max(counts)
    source = root / f"run-{largest}"
    start = time.perf_counter()
    if held(source) != largest:
        write_run(source, largest)
    generate_s = time.perf_counter() - start
    rows: list[dict[str, Any]] = []
    commands: dict[str, Any] = {}
    result: dict[str, Any] = {
        "counts": rows,
        "largest": {"dialogues": largest, "commands": commands},
        "generate_s": round(generate_s, 1),
        "repeat": repeat,
        "limits": {"evaluate_cpu_over_validation": CPU_LIMIT, "peak_mb": MEMORY_LIMIT_MB},
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "system": platform.system(),
        },
    }
    for count in sorted(counts):
        folder = source if count == largest else root / f"run-{count}"
        if folder != source and held(folder) != count:
            prefix_run(source, folder, count)
        rows.append(measure_count(folder, repeat))
        first = rows[0]["evaluate_cpu_ms_per_dialogue"]
        rows[-1]["per_dialogue_cpu_vs_smallest"] = round(rows[-1]["evaluate_cpu_ms_per_dialogue"] / first, 2)
        print_row(rows[-1])
        save(result)
    out = root / "report.html"
    commands["crsim report"] = timed([*CRSIM, "report", str(source), "--out", str(out)])
    save(result)
    commands["crsim compare"] = timed([*CRSIM, "compare", str(source), "--json"])
    peaks = [row["steps"]["crsim evaluate"]["peak_mb"] for row in rows]
    result["limits"].update(
        evaluate_cpu_met=rows[-1]["evaluate_over_validation_cpu"] <= CPU_LIMIT,
        evaluate_memory_met=max(peaks) < MEMORY_LIMIT_MB,
        report_memory_met=commands["crsim report"]["peak_mb"] < MEMORY_LIMIT_MB,
        compare_memory_met=commands["crsim compare"]["peak_mb"] < MEMORY_LIMIT_MB,
    )
    save(result)
    return result


HEADER = (
    f"{'dialogues':>10} {'MB':>7} {'json CPU s':>10} {'validate CPU s':>14} {'evaluate CPU s':>14} "
    f"{'eval/valid':>10} {'ms/dialogue':>11} {'vs smallest':>11} {'eval peak MB':>12} {'load 1m':>12}"
)


def print_row(row: dict[str, Any]) -> None:
    steps = row["steps"]
    load = steps["crsim evaluate"]["load_1m"]
    print(
        f"{row['dialogues']:>10,} {row['file_mb']:>7.0f} {steps['json.loads pass']['cpu_s']:>10.1f} "
        f"{steps['Dialogue validation pass']['cpu_s']:>14.1f} {steps['crsim evaluate']['cpu_s']:>14.1f} "
        f"{row['evaluate_over_validation_cpu']:>10.2f} {row['evaluate_cpu_ms_per_dialogue']:>11.3f} "
        f"{row['per_dialogue_cpu_vs_smallest']:>11.2f} {steps['crsim evaluate']['peak_mb']:>12.0f} "
        f"{load[0]:>5.1f}→{load[1]:<5.1f}",
        flush=True,
    )


def print_table(result: dict[str, Any]) -> None:
    print(HEADER)
    for row in result["counts"]:
        print_row(row)
    largest = result["largest"]
    for name, step in largest["commands"].items():
        print(
            f"{name} on {largest['dialogues']:,} dialogues: {step['cpu_s']:.1f} s CPU, "
            f"{step['seconds']:.1f} s wall, peak {step['peak_mb']:.0f} MB "
            f"(load {step['load_1m'][0]}→{step['load_1m'][1]})"
        )
    limits = result["limits"]
    print(
        f"limits: evaluate ≤ {limits['evaluate_cpu_over_validation']:g}× the validation CPU at the largest "
        f"count: {'met' if limits['evaluate_cpu_met'] else 'NOT met'}; peak < {limits['peak_mb']:.0f} MB: "
        f"evaluate {'met' if limits['evaluate_memory_met'] else 'NOT met'}, report "
        f"{'met' if limits['report_memory_met'] else 'NOT met'}, compare "
        f"{'met' if limits['compare_memory_met'] else 'NOT met'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dialogues", type=int, default=1_000_000, help="The largest count.")
    parser.add_argument(
        "--counts",
        help="Comma-separated counts to measure (default: a tenth, three tenths and all of --dialogues).",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="Write the run folders here and keep them (reused when they hold the count).",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=2,
        help="Run each step this many times (interleaved) and keep its run with the least CPU time.",
    )
    args = parser.parse_args()
    counts = (
        [int(c) for c in args.counts.split(",")]
        if args.counts
        else [args.dialogues // 10, 3 * args.dialogues // 10, args.dialogues]
    )
    root = args.keep or Path(tempfile.mkdtemp(prefix="crsim-scale-"))
    print(HEADER, flush=True)
    try:
        result = measure(counts, root, args.repeat)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    print_table(result)


if __name__ == "__main__":
    main()
