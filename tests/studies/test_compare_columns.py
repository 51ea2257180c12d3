"""The paired comparison read column-wise (`crsim.studies.compare.read_columns`): the same numbers as
the object-wise reading, bit for bit, and no Python object per dialogue held while reading a run."""

from __future__ import annotations

import gc
import json
import random
import tracemalloc
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from crsim.eval.scores import ScoreRecord
from crsim.studies.compare import (
    ComparisonOptions,
    Observation,
    ObservationList,
    compare,
    pair,
    read_columns,
    read_observations,
    trial_spread,
    user_means,
)

BROKEN = {"reason": "user_error", "error": {"source": "user", "type": "LLMOutputError", "message": "x"}}


def write_run(
    folder: Path, *, seed: int, users: int = 9, crss: Sequence[str] = ("A", "B", "C"), repeat_id: bool = False
) -> Path:
    """A run folder with what pairing must get right: users met in several trials and twice in one
    trial, a user reused under a second id (`u1#2`), dialogues without a user, broken by the
    simulator, values missing, turn-level values (up to 12 turns, some None), a repeated
    dialogue-level record (the last counts), scores of unknown dialogues, records out of order."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    dialogues: list[dict[str, Any]] = []
    for simulator in ("abus", "llm"):
        for crs in crss:
            for u in range(users):
                user = f"u{u}" if u != users - 1 else "u1#2"
                for trial in range(rng.choice([1, 1, 2, 3])):
                    for _ in range(2 if rng.random() < 0.15 else 1):  # met twice in one trial
                        record: dict[str, Any] = {
                            "id": f"{simulator}-{crs}-{len(dialogues)}",
                            "crs_id": crs,
                            "simulator_id": simulator,
                            "user_id": user,
                            "metadata": {"trial": trial},
                        }
                        if rng.random() < 0.1:
                            record["termination"] = BROKEN
                        dialogues.append(record)
            dialogues.append({"id": f"{simulator}-{crs}-nouser", "crs_id": crs, "simulator_id": simulator})
    if repeat_id:  # a second record under an id already used: the last one is the dialogue
        dialogues.append({**dialogues[3], "user_id": "u7", "metadata": {"trial": 0}})
    scores: list[dict[str, Any]] = []
    for record in dialogues:

        def score(
            metric: str, value: float | None, turn: int | None = None, *, d: dict[str, Any] = record
        ) -> None:
            scores.append(
                ScoreRecord(
                    dialogue_id=d["id"],
                    crs_id=d["crs_id"],
                    simulator_id=d["simulator_id"],
                    metric=metric,
                    value=value,
                    turn=turn,
                ).model_dump(mode="json")
            )

        score("Success", float(rng.random() < 0.5))
        score("Score", None if rng.random() < 0.1 else rng.gauss(0, 1) * 10 ** rng.randint(-3, 3))
        if rng.random() < 0.1:
            score("Score", rng.random())  # a second record: the last value counts
        for turn in range(1, rng.randint(1, 12)):
            score("quality/aspect", None if rng.random() < 0.2 else rng.random() * 5, turn)
        if rng.random() < 0.5:
            score("Mixed", rng.random())
        for turn in range(1, rng.randint(0, 3)):
            score("Mixed", rng.random(), turn)  # turn values replace the dialogue-level one
    scores.append({**scores[0], "dialogue_id": "unknown"})
    rng.shuffle(scores[len(scores) // 2 :])  # the second half out of order
    (folder / "dialogues.jsonl").write_text(
        "".join(json.dumps(d) + "\n" for d in dialogues), encoding="utf-8"
    )
    (folder / "scores.jsonl").write_text("".join(json.dumps(s) + "\n" for s in scores), encoding="utf-8")
    return folder


# The pairing and the means as they were computed from observation objects before the columns: the
# reference the column-wise statistics must equal bit for bit.


def reference_pair(a: Sequence[Observation], b: Sequence[Observation]) -> dict[str, Any]:
    left = {(o.user, o.unit): o for o in a}
    right = {(o.user, o.unit): o for o in b}
    common = [key for key in left if key in right]
    per_user: dict[str, list[tuple[float, float]]] = defaultdict(list)
    not_evaluable = missing = 0
    for key in common:
        x, y = left[key], right[key]
        if not (x.evaluable and y.evaluable):
            not_evaluable += 1
        elif x.value is None or y.value is None:
            missing += 1
        else:
            per_user[x.who].append((x.value, y.value))
    users = sorted(per_user)
    values = [np.mean(per_user[u], axis=0) for u in users]
    kept = [v for u in users for pair_ in per_user[u] for v in pair_]
    return {
        "a": [float(v[0]) for v in values],
        "b": [float(v[1]) for v in values],
        "users": users,
        "pairs": sum(len(per_user[u]) for u in users),
        "not_evaluable": not_evaluable,
        "missing": missing,
        "unmatched": len(left) + len(right) - 2 * len(common),
        "one_per_user": all(len(per_user[u]) == 1 for u in users),
        "binary": bool(kept) and all(v in (0.0, 1.0) for v in kept),
    }


def reference_user_means(observations: Sequence[Observation]) -> tuple[float | None, int]:
    by_user: dict[str, list[float]] = defaultdict(list)
    for o in observations:
        if o.evaluable and o.value is not None:
            by_user[o.who].append(o.value)
    if not by_user:
        return None, 0
    return float(np.mean([np.mean(v) for v in by_user.values()])), len(by_user)


def reference_trial_spread(observations: Sequence[Observation]) -> tuple[int, float | None]:
    by_trial: dict[int, list[Observation]] = defaultdict(list)
    for o in observations:
        by_trial[o.unit[0]].append(o)
    means = [m for m in (reference_user_means(found)[0] for found in by_trial.values()) if m is not None]
    return len(by_trial), (float(np.std(means, ddof=1)) if len(means) >= 2 else None)


def as_dict(sample: Any) -> dict[str, Any]:
    return {
        "a": [float(v) for v in sample.a],
        "b": [float(v) for v in sample.b],
        **{k: getattr(sample, k) for k in ("users", "pairs", "not_evaluable", "missing", "unmatched")},
        "one_per_user": sample.one_per_user,
        "binary": sample.binary,
    }


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_column_statistics_equal_the_object_wise_ones_bit_for_bit(tmp_path: Path, seed: int) -> None:
    run = write_run(tmp_path / "run", seed=seed)
    objects = read_observations(run / "dialogues.jsonl", run / "scores.jsonl")
    cells: dict[tuple[str, str], dict[str, list[Observation]]] = defaultdict(lambda: defaultdict(list))
    for o in objects:
        cells[(o.simulator, o.metric)][o.crs].append(o)
    columns = read_columns([(run / "dialogues.jsonl", run / "scores.jsonl", "")])
    assert columns.metrics == list(dict.fromkeys(o.metric for o in objects))
    checked = 0
    for (simulator, metric), by_crs in cells.items():
        cell = columns.cell(simulator, metric)
        assert set(cell) == set(by_crs)
        for crs, found in by_crs.items():
            assert user_means(cell[crs]) == reference_user_means(found)
            assert trial_spread(cell[crs]) == reference_trial_spread(found)
        for x in by_crs:
            for y in by_crs:
                if x != y:
                    assert as_dict(pair(cell[x], cell[y])) == reference_pair(by_crs[x], by_crs[y])
                    checked += 1
    assert checked >= 2 * 4 * 6  # simulators × metrics × ordered pairs of CRSs
    # several trials, a user met twice in a trial, turn values and drops were all there to get right
    assert any(o.unit[0] > 0 for o in objects) and any(o.unit[1] > 0 for o in objects)
    assert any(not o.evaluable for o in objects) and any(o.value is None for o in objects)


@pytest.mark.parametrize("options", [ComparisonOptions(), ComparisonOptions(baseline="B", metrics=["Score"])])
def test_a_comparison_of_columns_equals_the_one_of_objects(
    tmp_path: Path, options: ComparisonOptions
) -> None:
    runs = [
        write_run(tmp_path / "one", seed=4),
        write_run(tmp_path / "two", seed=5, crss=("A", "B"), repeat_id=True),  # a repeated id: a dict
    ]
    objects: list[Observation] = []
    for run, suffix in zip(runs, [" [one]", " [two]"], strict=True):
        objects += read_observations(run / "dialogues.jsonl", run / "scores.jsonl", crs_suffix=suffix)
    columns = read_columns(
        (run / "dialogues.jsonl", run / "scores.jsonl", suffix)
        for run, suffix in zip(runs, [" [one]", " [two]"], strict=True)
    )
    if options.baseline:
        options = options.model_copy(update={"baseline": "B [one]"})
    by_columns = compare(columns, options).model_dump_json()
    assert by_columns == compare(ObservationList(objects), options).model_dump_json()
    assert json.loads(by_columns)["results"]


def synthetic_lines(folder: Path, dialogues: int, metrics: int = 8) -> None:
    """A run of `dialogues` records as bench/scale.py pairs them (4 CRSs × 2 simulators, each user
    once per pairing), with `metrics` dialogue-level scores each, written as JSON lines directly."""
    folder.mkdir(parents=True)
    rng = random.Random(0)
    with (
        (folder / "dialogues.jsonl").open("w", encoding="utf-8") as d,
        (folder / "scores.jsonl").open("w", encoding="utf-8") as s,
    ):
        for index in range(dialogues):
            crs, simulator = f"crs{index % 4}", f"sim{index // 4 % 2}"
            ids = {"crs_id": crs, "simulator_id": simulator}
            name = f"{crs}/{simulator}/u-{index // 8:06d}"
            d.write(json.dumps({"id": name, **ids, "user_id": f"u-{index // 8:06d}"}) + "\n")
            for m in range(metrics):
                s.write(
                    json.dumps({"dialogue_id": name, **ids, "metric": f"m{m}", "value": rng.random()}) + "\n"
                )


def test_reading_columns_holds_no_python_object_per_dialogue(tmp_path: Path) -> None:
    dialogues, metrics = 20_000, 4
    synthetic_lines(tmp_path / "run", dialogues, metrics)
    synthetic_lines(tmp_path / "small", 80, metrics)
    read_columns([(tmp_path / "small" / "dialogues.jsonl", tmp_path / "small" / "scores.jsonl", "")])
    files = [(tmp_path / "run" / "dialogues.jsonl", tmp_path / "run" / "scores.jsonl", "")]
    gc.collect()
    objects_before = len(gc.get_objects())
    tracemalloc.start()
    try:
        columns = read_columns(files)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    gc.collect()
    # Arrays, not objects: container objects do not grow with the dialogues (the object-wise reading
    # holds an Observation per dialogue and metric, 80,000 here).
    assert len(gc.get_objects()) - objects_before < 1_000
    # Bytes per dialogue: the codes (about 40), 17 per metric, and the users' ids (a user per 8
    # dialogues here): 148, read as 1.5 × that. Observation objects and their dict hold about 190
    # per dialogue and metric (tracemalloc of `read_observations` on this run: 1,489 with 8 metrics).
    per_dialogue = 40 + 17 * metrics + 40
    assert held < 1.5 * per_dialogue * dialogues, held / dialogues
    # While reading, besides: a batch of score records (21 bytes each) and the sorting of the codes.
    assert peak < 3 * per_dialogue * dialogues + 2_000_000, peak / dialogues
    assert len(columns.metrics) == metrics and columns.cell("sim0", "m0")["crs0"].key.size == dialogues // 8
