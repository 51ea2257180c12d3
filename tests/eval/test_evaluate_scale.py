"""What keeps `crsim evaluate` fast and small on a million dialogues gives the same numbers.

The records are those bench/scale.py writes (greeting, preferences, 1-6 recommendation rounds with
accept/reject/seen reactions, targets), so the shared readings, the one-pass scoring, the compact
summaries and the chunked frames are checked on the shape of data they were made for.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import random
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from crsim.core.components import BuildContext
from crsim.domains import domain_named
from crsim.eval.curves import CurveBuilder
from crsim.eval.metrics.base import Metric
from crsim.eval.metrics.structure import readings_shared, recommendation_rounds
from crsim.eval.run_scoring import evaluate_path
from crsim.eval.scores import build_metrics, default_metrics, score_dialogue, score_metrics, trusted_record
from crsim.eval.scoring import score_all
from crsim.eval.stats import aggregate, aggregate_coded
from crsim.eval.summaries import SummaryBuilder, summarize
from crsim.model.dialogue import Dialogue
from crsim.model.run_folder.scores import ScoreRecord
from crsim.model.user import source_user_id

BENCH = Path(__file__).resolve().parents[2] / "bench" / "scale.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_scale", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _bench()


def _records(bench: ModuleType, n: int, seed: int = 3) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    items = [(item.id, f"{item.title} ({item.year})") for item in list(bench.movie_items())[:300]]
    records = [bench.synthetic_dialogue(i, rng, items) for i in range(n)]
    records[3]["termination"] = {"reason": "error", "error": {"source": "user", "type": "X", "message": "m"}}
    records[5]["utterances"][1]["acts"] = []  # a user utterance without acts: NotApplicable
    records[6]["information_need"] = None  # no targets
    return records


@pytest.fixture(scope="module")
def dialogues(bench: ModuleType) -> list[Dialogue]:
    return [Dialogue.model_validate(r) for r in _records(bench, 120)]


@pytest.fixture(scope="module")
def metrics() -> list[Metric]:
    built = build_metrics(default_metrics(), BuildContext(domain=domain_named("movies")))
    return [m for m in built if isinstance(m, Metric)]


def test_trusted_record_is_what_model_construct_builds() -> None:
    fields = {
        "dialogue_id": "d", "crs_id": "c", "simulator_id": None, "termination": "user_ended",
        "metric": "Success", "value": 0.5, "missing_reason": None, "error": None,
    }  # fmt: skip
    fast, slow = trusted_record(*fields.values()), ScoreRecord.model_construct(**fields)
    assert fast == slow and list(fast.__dict__) == list(slow.__dict__)
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.model_dump_json() == slow.model_dump_json()


def test_one_pass_scoring_gives_the_records_of_each_metric_alone(
    dialogues: list[Dialogue], metrics: list[Metric]
) -> None:
    alone = [score_dialogue(d, m) for d in dialogues for m in metrics]
    with readings_shared():
        together = score_metrics(dialogues, metrics)
    assert [r.model_dump_json() for r in together] == [r.model_dump_json() for r in alone]
    reasons = {r.missing_reason for r in together if r.value is None}
    assert any(r and r.startswith("not evaluable") for r in reasons)  # the broken dialogue
    assert any(r and "acts" in r for r in reasons) and any(r and "target" in r for r in reasons)
    also = score_metrics(dialogues, metrics, score_unevaluable=True)
    assert also == [score_dialogue(d, m, score_unevaluable=True) for d in dialogues for m in metrics]


def test_shared_readings_live_only_inside_the_block(dialogues: list[Dialogue]) -> None:
    dialogue = dialogues[0].model_copy(deep=True)
    with readings_shared():
        first = recommendation_rounds(dialogue)
        assert recommendation_rounds(dialogue) is first  # read once, handed to every metric
    dialogue.utterances = dialogue.utterances[:2]  # no recommendation left
    assert first and recommendation_rounds(dialogue) == []


def test_curves_are_the_same_with_shared_readings(dialogues: list[Dialogue], metrics: list[Metric]) -> None:
    plain, shared = CurveBuilder(metrics, 20), CurveBuilder(metrics, 20)
    plain.add(dialogues)
    with readings_shared():
        score_metrics(dialogues, metrics)
        shared.add(dialogues)
    assert [c.model_dump() for c in shared.curves()] == [c.model_dump() for c in plain.curves()]


def test_compact_aggregate_is_the_aggregate_of_the_values() -> None:
    rng = np.random.default_rng(5)
    for size, per_user in ((40, 1), (300, 3), (7000, 1), (7000, 2)):
        values: list[float | None] = [float(v) for v in rng.integers(0, 4, size) / 3]
        for i in rng.choice(size, size // 10, replace=False):
            values[int(i)] = None
        users: list[str | None] = [f"u{i // per_user}" for i in range(size)]
        for i in rng.choice(size, 5, replace=False):
            users[int(i)] = None  # an unknown user is a user of its own
        order = rng.permutation(size)  # users first seen in no particular order
        values, users = [values[i] for i in order], [users[i] for i in order]
        codes = {u: n for n, u in enumerate(dict.fromkeys(u for u in users if u is not None))}
        coded = aggregate_coded(
            np.array([np.nan if v is None else v for v in values]),
            seed=7,
            clusters=np.array([-1 if u is None else codes[u] for u in users]),
            not_evaluable=2,
        )
        assert coded == aggregate(values, seed=7, clusters=users, not_evaluable=2)
        assert aggregate_coded(np.array([np.nan if v is None else v for v in values]), seed=1) == aggregate(
            values, seed=1
        )


def test_streamed_summaries_are_the_summary_of_all_records(
    dialogues: list[Dialogue], metrics: list[Metric]
) -> None:
    reused = [d.model_copy(update={"user_id": f"u-{i % 9}#{i + 2}"}) for i, d in enumerate(dialogues)]
    records = [score_dialogue(d, m) for d in reused for m in metrics]
    builder = SummaryBuilder(seed=7)
    per = len(metrics)
    for start in range(0, len(reused), 25):
        builder.add(records[start * per : (start + 25) * per], reused[start : start + 25])
    streamed = builder.summaries()
    assert streamed == summarize(records, reused, seed=7)
    for summary in streamed:  # every aggregate is the plain aggregate of its dialogues' values
        group = [d for d in reused if (d.crs_id, d.simulator_id) == (summary.crs_id, summary.simulator_id)]
        assert summary.n_users is not None and summary.n_users < summary.n_dialogues == len(group)
        for metric in metrics:
            mine = [r for r in records if r.metric == metric.label and r.dialogue_id in {d.id for d in group}]
            kept = [r for r in mine if not (r.missing_reason or "").startswith("not evaluable")]
            users = {d.id: source_user_id(d.user_id or "") for d in group}
            expected = aggregate(
                [r.value for r in kept],
                seed=7,
                clusters=[users[r.dialogue_id] for r in kept],
                not_evaluable=len(mine) - len(kept),
            )
            assert summary.metrics[metric.label] == expected


def test_evaluate_hands_every_batch_on_in_order(bench: ModuleType, tmp_path: Path) -> None:
    run = tmp_path / "run"
    bench.write_run(run, 30)
    lines = (run / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()
    seen: list[str] = []
    result = evaluate_path(run, on_batch=lambda batch: seen.extend(d.id for d in batch))
    assert seen == [json.loads(line)["id"] for line in lines]
    assert sum(s.n_dialogues for s in result.summaries) == 30


def test_score_all_uses_the_one_pass_scoring(dialogues: list[Dialogue], metrics: list[Metric]) -> None:
    records = asyncio.run(score_all(dialogues, metrics))
    assert records == [score_dialogue(d, m) for d in dialogues for m in metrics]
