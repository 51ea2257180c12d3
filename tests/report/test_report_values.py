"""The report's per-dialogue score values (`crsim.report.collect`): typed arrays, no object per
dialogue, and the same values in the same order as the report took them from objects before."""

from __future__ import annotations

import json
import random
from array import array
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from crsim.report.collect import collect_run
from crsim.report.titles import open_run
from report_support import restamp, small_run


def reference_values(scores: list[dict[str, Any]]) -> dict[str, dict[tuple[str, str], list[float]]]:
    """The per-dialogue values as the report gathered them with a dict per dialogue and metric."""
    turn_sums: dict[tuple[str, str], list[float]] = {}
    group_of: dict[str, tuple[str, str]] = {}
    values: dict[str, dict[tuple[str, str], list[float]]] = defaultdict(lambda: defaultdict(list))
    for record in scores:
        group = (record["crs_id"] or "", record["simulator_id"] or "")
        if record.get("turn") is None:
            if record["value"] is not None:
                values[record["metric"]][group].append(record["value"])
        elif record["value"] is not None:
            group_of[record["dialogue_id"]] = group
            acc = turn_sums.setdefault((record["dialogue_id"], record["metric"]), [0.0, 0.0])
            acc[0] += record["value"]
            acc[1] += 1
    for (dialogue_id, label), (total, count) in turn_sums.items():
        values[label][group_of[dialogue_id]].append(total / count)
    return {label: dict(groups) for label, groups in values.items()}


@pytest.fixture(scope="module")
def run_with_turn_values(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run whose scores gain turn-level values (up to 12 turns, interleaved across dialogues and
    metrics, some None) of a judge aspect and of a metric that only has them."""
    run = small_run(tmp_path_factory.mktemp("values") / "run", users=8, crss=["popular", "retrieval"])
    path = run / "scores.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    ids = list(dict.fromkeys((r["dialogue_id"], r["crs_id"], r["simulator_id"]) for r in records))
    rng = random.Random(3)
    extra = []
    for metric in ("quality/helpful", "turny"):
        for dialogue_id, crs, simulator in ids:
            for turn in range(1, rng.randint(1, 12)):
                value = None if rng.random() < 0.2 else rng.random() * 5
                extra.append(
                    {"dialogue_id": dialogue_id, "crs_id": crs, "simulator_id": simulator, "metric": metric}
                    | {"value": value, "turn": turn}
                )
    rng.shuffle(extra)
    records = records[:5] + extra + records[5:]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    restamp(run)
    return run


def test_the_values_are_typed_arrays_equal_to_the_object_wise_ones(run_with_turn_values: Path) -> None:
    records = [
        json.loads(line)
        for line in (run_with_turn_values / "scores.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    view = collect_run(open_run(run_with_turn_values), "run", max_dialogues=3)
    expected = reference_values(records)
    assert list(view.values) == list(expected)  # the plots' panels come in this order
    for label, groups in expected.items():
        assert set(view.values[label]) == set(groups), label
        for group, values in groups.items():
            found = view.values[label][group]
            assert isinstance(found, array) and found.typecode == "d"
            assert list(found) == values, (label, group)  # bit for bit, in the same order
    # The browser's sampled dialogues show their turn means too.
    for entry in view.browser:
        mine = [
            r for r in records if r["dialogue_id"] == entry["id"] and r.get("turn") and r["value"] is not None
        ]
        turny = [r["value"] for r in mine if r["metric"] == "turny"]
        if turny:
            assert entry["scores"]["turny"] == sum(turny) / len(turny)
