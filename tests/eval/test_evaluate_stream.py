"""`crsim evaluate` scores dialogues one at a time as it reads them (no score records, lines written
directly, outcomes folded into the summaries); what it writes is what the batch path writes.

The batch path (`score_all` over a batch, `SummaryBuilder.add` of its records) is the reference: it
is what every dialogue goes through when an evaluator awaits, and what a batch goes through from a
dialogue that needs acts on. Files are compared byte for byte.
"""

from __future__ import annotations

import importlib.util
import json
import math
import random
from pathlib import Path
from types import ModuleType

import pytest

import crsim.eval.run_scoring as run_scoring
import crsim.eval.streaming as streaming
from crsim.eval.curves import CurveBuilder
from crsim.eval.metrics.base import PerTurnMetric
from crsim.eval.scores import trusted_record
from crsim.eval.streaming import DialogueStream
from crsim.eval.summaries import SummaryBuilder
from crsim.model.dialogue import Dialogue
from crsim.model.run_folder.scores import (
    ScoreRecord,
    json_float,
    json_string,
    line_head,
    metric_part,
    score_line,
)

BENCH = Path(__file__).resolve().parents[2] / "bench" / "scale.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_scale", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TEXTS = [
    "plain", "", "with \"quotes\"", "back\\slash", "tab\there", "new\nline", "\x00\x1f\x7f", "café ☕",
    "emoji 🎬", "\u2028sep", "dialogue 'd-1', metric 'Recall@(t,10)': ValueError: bad", "€uro\r",
]  # fmt: skip
FLOATS = [
    0.0, -0.0, 1.0, 0.5, 1 / 3, 2 / 3, 1e-4, 9.99e-5, 1e-5, 2.5e-7, 123.456, 1e15, 9.999e15, 1e16, 1e21,
    -0.25, 5e-324, 1.7976931348623157e308, 0.1 + 0.2,
]  # fmt: skip


def test_score_line_is_what_pydantic_writes_for_the_record() -> None:
    rng = random.Random(3)
    values: list[float | None] = [*FLOATS, None]
    values += [rng.random() * 10 ** rng.randint(-9, 18) * rng.choice((1, -1)) for _ in range(3000)]
    for n, value in enumerate(values):
        texts: list[str | None] = [*TEXTS, None]
        fields = [texts[(n + shift) % len(texts)] for shift in range(7)]
        dialogue_id, metric = fields[0] or "d", fields[4] or "m"
        record = trusted_record(
            dialogue_id, fields[1], fields[2], fields[3], metric, value, fields[5], fields[6]
        )
        head = line_head(dialogue_id, fields[1], fields[2], fields[3])
        assert (
            score_line(head, metric_part(metric), value, fields[5], fields[6])
            == record.model_dump_json() + "\n"
        )
        assert (
            ScoreRecord.model_validate_json(score_line(head, metric_part(metric), value, None, None)).value
            == value
        )
    assert json_string(None) == json_float(None) == "null"


def _records(bench: ModuleType, n: int) -> list[dict[str, object]]:
    rng = random.Random(11)
    items = [(item.id, f"{item.title} ({item.year})") for item in list(bench.movie_items())[:300]]
    records = [bench.synthetic_dialogue(i, rng, items) for i in range(n)]
    for index in (3, 17, 18, 25):  # user utterances without acts: the rules annotator fills them in
        for utterance in records[index]["utterances"]:  # type: ignore[union-attr]
            if utterance["role"] == "user":
                utterance["acts"] = []
    records[5]["termination"] = {"reason": "error", "error": {"source": "user", "type": "X", "message": "m"}}
    records[6]["information_need"] = None  # no targets
    records[8]["termination"] = {"reason": "error", "error": {"source": "crs", "type": "Y", "message": "n"}}
    records[13]["id"] = records[12]["id"]  # the same id twice in one batch: its values are merged
    records[30]["id"] = records[2]["id"]  # ... and in two batches: counted twice
    return records


def _write_run(bench: ModuleType, folder: Path, n: int) -> None:
    bench.write_run(folder, n)
    lines = [json.dumps(record) for record in _records(bench, n)]
    (folder / "dialogues.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("replace", [True, False])
def test_streamed_evaluation_writes_what_the_batch_path_writes(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replace: bool
) -> None:
    monkeypatch.setattr(streaming, "BATCH", 7)  # batches mixing streamed dialogues and annotated ones
    outputs = {}
    for way in ("stream", "batch"):
        run = tmp_path / way
        _write_run(bench, run, 40)
        if not replace:  # an earlier evaluation of other metrics is merged
            spec = run_scoring.EvaluateOptions(metrics=[{"name": "rdl", "args": {"length": "utterances"}}])
            run_scoring.evaluate_path(run, spec)
        with monkeypatch.context() as patch:
            if way == "batch":  # every dialogue through `score_all` and the records
                patch.setattr(DialogueStream, "score", lambda self, dialogue: False)
            seen: list[str] = []
            result = run_scoring.evaluate_path(
                run,
                run_scoring.EvaluateOptions(replace=replace),
                on_batch=lambda b, out=seen: out.extend(d.id for d in b),
            )
        assert result.annotation.annotated == 4 and result.annotation.annotator == "rules"
        outputs[way] = (
            (run / "scores.jsonl").read_bytes(),
            json.loads((run / "summary.json").read_text(encoding="utf-8")),
            seen,
        )
    stream, batch = outputs["stream"], outputs["batch"]
    assert stream[0] == batch[0]
    for summary in (stream[1], batch[1]):
        summary.pop("built_from")  # the two folders' own files
    assert stream[1] == batch[1]
    assert stream[2] == batch[2] and len(stream[2]) == 40
    lines = stream[0].decode().splitlines()
    assert len(lines) == 40 * 8 + (0 if replace else 40)
    assert any(json.loads(line)["annotator"] == "rules" for line in lines)


def test_streamed_lines_are_redacted_as_the_batch_path_redacts(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stream checks each dialogue's ids and each missing reason for secrets (not the whole text
    of a batch) and redacts the lines of a dialogue that may hold one: the same bytes as the batch
    path, which redacts the serialised records."""
    secret = "s3cr3t-value-2718"
    monkeypatch.setenv("CRSIM_STREAM_TEST_API_KEY", secret)
    token = "sk-" + "a1B2" * 6
    monkeypatch.setattr(streaming, "BATCH", 3)  # the dialogues below are streamed: no batch needs acts
    outputs = {}
    for way in ("stream", "batch"):
        run = tmp_path / way
        bench.write_run(run, 40)
        records = _records(bench, 40)
        records[7]["id"] = f"d-{secret}"
        records[10]["crs_id"] = f"crs {token}"
        records[11]["simulator_id"] = f'sim "Bearer {token}"'
        records[6]["id"] = f"no-targets-{secret}"  # a dialogue whose reasons are missing values
        lines = [json.dumps(record) for record in records]
        (run / "dialogues.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        with monkeypatch.context() as patch:
            if way == "batch":
                patch.setattr(DialogueStream, "score", lambda self, dialogue: False)
            run_scoring.evaluate_path(run, run_scoring.EvaluateOptions())
        outputs[way] = (run / "scores.jsonl").read_text(encoding="utf-8")
    assert outputs["stream"] == outputs["batch"]
    text = outputs["stream"]
    assert secret not in text and token not in text
    parsed = [json.loads(line) for line in text.splitlines()]
    assert {p["dialogue_id"] for p in parsed} >= {"d-[redacted]", "no-targets-[redacted]"}
    assert any(p["crs_id"] == "crs [redacted]" for p in parsed)


def test_folded_outcomes_are_the_records_folded(bench: ModuleType) -> None:
    dialogues = [Dialogue.model_validate(r) for r in _records(bench, 40)]
    labels = ["A", "B"]
    rng = random.Random(5)
    reasons = [None, None, None, "no targets", "not evaluable: error (user)", "error: ValueError"]
    rows = []
    for dialogue in dialogues:
        outcomes = []
        for _ in labels:
            reason = rng.choice(reasons)
            outcomes.append(
                (None if reason else rng.random(), reason, "boom" if reason == "error: ValueError" else None)
            )
        rows.append(((dialogue.crs_id, dialogue.simulator_id), dialogue.id, outcomes))
    by_records, by_outcomes = SummaryBuilder(seed=2), SummaryBuilder(seed=2)
    for start in range(0, 40, 7):
        part, window = dialogues[start : start + 7], rows[start : start + 7]
        records = [
            trusted_record(d_id, key[0], key[1], None, label, *outcome)
            for key, d_id, outcomes in window
            for label, outcome in zip(labels, outcomes, strict=True)
        ]
        by_records.add(records, part)
        for dialogue in part:
            by_outcomes.add_dialogue(dialogue)
        by_outcomes.add_outcomes(labels, window)
    assert by_outcomes.summaries() == by_records.summaries()
    assert [list(s.missing_reasons) for s in by_outcomes.summaries()] == [
        list(s.missing_reasons) for s in by_records.summaries()
    ]


class _Rows(PerTurnMetric):
    """Per-turn values from a list, in order: full rows, partial rows and rows of None."""

    def __init__(self, rows: list[list[float | None]]) -> None:
        super().__init__()
        self.rows = iter(rows)

    def default_label(self) -> str:
        return "rows"

    def compute(self, dialogue: Dialogue) -> float:
        return 0.0

    def per_turn(self, dialogue: Dialogue, max_turns: int) -> list[float | None]:
        return next(self.rows)


def test_curve_sums_in_blocks_are_the_running_sums(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("crsim.eval.curves._CURVE_BLOCK", 16)
    rng = random.Random(9)
    rows: list[list[float | None]] = []
    for n in range(300):
        row: list[float | None] = [rng.random() * 10 ** rng.randint(-3, 3) for _ in range(6)]
        if n % 17 == 0:
            row[rng.randrange(6)] = None
        if n % 29 == 0:
            row = [None] * 6
        rows.append(row)
    dialogue = Dialogue.model_validate(_records(bench, 40)[0])
    builder = CurveBuilder([_Rows(rows)], 6)
    for _ in rows:
        builder.add_one(dialogue)
    (curve,) = builder.curves()
    sums, squares, counts = [0.0] * 6, [0.0] * 6, [0] * 6
    for row in rows:  # one row at a time, as the curves were summed before blocks
        for index, value in enumerate(row):
            if value is not None:
                sums[index] += value
                squares[index] += value * value
                counts[index] += 1
    assert curve.n == counts
    assert curve.mean == [s / c for s, c in zip(sums, counts, strict=True)]  # exactly: the same additions
    expected_sd = [
        math.sqrt(max(0.0, (q - c * (s / c) * (s / c)) / (c - 1)))
        for s, q, c in zip(sums, squares, counts, strict=True)
    ]
    assert curve.sd == expected_sd
