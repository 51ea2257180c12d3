"""`crsim evaluate` at scale: 100,000 synthetic dialogue records in the run format.

    python bench/scale.py [--dialogues 100000] [--keep DIR]

Writes a run folder (manifest with the default, non-LLM metrics: Success, SRRR, RDL, Turns,
Recall@(t,10), PC@10; `dialogues.jsonl` with 4 CRSs × 2 simulators and a few turns per dialogue:
greeting, preferences, recommendations of shipped movie ids, accept/reject/seen reactions, targets),
then times `crsim evaluate RUN_DIR` in a subprocess and reads its peak memory (ru_maxrss from wait4).
In-run baselines, each also a subprocess: a plain `json.loads` pass over the file, and a pass that
validates every line as a `Dialogue`. Targets: under 60 s and under 2 GB.
Prints a table and writes bench/results/scale.json. Not a unit test.
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


def timed(args: list[str]) -> dict[str, float]:
    """Wall time and peak resident memory of one subprocess (wait4 gives that child's own rusage)."""
    start = time.perf_counter()
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    stderr = process.stderr.read().decode() if process.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{stderr}")
    cpu = usage.ru_utime + usage.ru_stime
    return {"seconds": round(wall, 2), "cpu_s": round(cpu, 2), "peak_mb": round(usage.ru_maxrss / 1024, 1)}


def measure(dialogues: int, folder: Path) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    size = write_run(folder, dialogues)
    generate_s = time.perf_counter() - start
    records = str(folder / "dialogues.jsonl")
    crsim = [sys.executable, "-m", "crsim"]
    steps = {
        "json.loads pass (baseline)": timed([sys.executable, "-c", JSON_PASS, records]),
        "Dialogue validation pass": timed([sys.executable, "-c", VALIDATE_PASS, records]),
        "crsim evaluate": timed([*crsim, "evaluate", str(folder), "--json"]),
    }
    baseline = steps["json.loads pass (baseline)"]
    for step in steps.values():
        step["ratio_to_baseline"] = round(step["seconds"] / baseline["seconds"], 2)
        step["cpu_ratio_to_baseline"] = round(step["cpu_s"] / baseline["cpu_s"], 2)
    scores = folder / "scores.jsonl"
    return {
        "dialogues": dialogues,
        "file_mb": round(size / 1e6, 1),
        "score_lines": sum(1 for _ in scores.open("rb")),
        "generate_s": round(generate_s, 1),
        "steps": steps,
        "targets": {"seconds": 60, "peak_mb": 2048},
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "system": platform.system(),
            "load_average_1m": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        },
    }


def print_table(result: dict[str, Any]) -> None:
    print(f"{result['dialogues']:,} dialogues, {result['file_mb']} MB of records")
    print(f"{'step':<30} {'wall s':>8} {'CPU s':>8} {'peak MB':>9} {'× baseline (wall, CPU)':>24}")
    for name, step in result["steps"].items():
        ratios = f"{step['ratio_to_baseline']:.2f}, {step['cpu_ratio_to_baseline']:.2f}"
        print(
            f"{name:<30} {step['seconds']:>8.2f} {step['cpu_s']:>8.2f} {step['peak_mb']:>9.1f} {ratios:>24}"
        )
    print(f"load average (1 min) before and after: {result['machine']['load_average_1m']}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dialogues", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, help="Write the run folder here and keep it.")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="crsim-scale-")) / "run"
    try:
        result = measure(args.dialogues, folder)
    finally:
        if args.keep is None:
            shutil.rmtree(folder.parent, ignore_errors=True)
    print_table(result)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
