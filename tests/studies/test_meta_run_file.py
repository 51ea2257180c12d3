"""Run files for `crsim meta-eval --run-file`: aliases, nulls, unknown conversations, malformed input."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from crsim.core.errors import DataError
from crsim.studies.meta import GoldSet, load_gold, meta_evaluate, read_run_file, write_run_file
from crsim.studies.meta.predictions import NULL_VALUE

FACE_RUN = Path(__file__).parents[1] / "fixtures" / "crsarena_eval" / "face_run.json.gz"
CONV = "kbrd_redial_dfc62638-0660-4413-81d4-75bef5ca0745"


@pytest.fixture(scope="module")
def gold() -> GoldSet:
    return load_gold()


def write(tmp_path: Path, data: Any, name: str = "run.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("key", ["dialogue_overall", "dialog_overall", "overall_impression", "overall"])
def test_overall_aliases(tmp_path: Path, key: str) -> None:
    path = write(tmp_path, [{"conv_id": CONV, "turns": [], "dial_level_pred": {key: 2.5}}])
    predictions = read_run_file(path)
    assert predictions.values == {(CONV, None, "overall"): 2.5}
    assert not predictions.notes


def test_two_aliases_must_agree(tmp_path: Path) -> None:
    same = write(
        tmp_path, [{"conv_id": CONV, "dial_level_pred": {"dialog_overall": 1, "overall_impression": 1}}]
    )
    assert read_run_file(same).values == {(CONV, None, "overall"): 1.0}
    differ = write(
        tmp_path, [{"conv_id": CONV, "dial_level_pred": {"dialog_overall": 1, "overall_impression": 2}}]
    )
    with pytest.raises(DataError, match="'overall_impression' and 'dialog_overall' both give overall"):
        read_run_file(differ)


def test_nulls_unknown_conversations_and_ignored_inputs_are_reported(tmp_path: Path, gold: GoldSet) -> None:
    records = [
        {
            "conv_id": CONV,
            "turns": [
                {"turn_ind": 1.0, "turn_level_pred": {"relevance": 2, "interestingness": None}},
                {"turn_ind": 2, "turn_level_pred": {"relevance": 1}},  # a user utterance
                {"turn_ind": 17, "turn_level_pred": {"relevance": 1, "Interestingness": 1}},
            ],
            "dial_level_pred": {"Task Completion": 1.5, "charm": 3, "relevance": 2},
            "model": "mine",
        },
        {"conv_id": "nobody_redial_x", "turns": [], "dial_level_pred": {"overall": 1}},
    ]
    predictions = read_run_file(write(tmp_path, records))
    assert predictions.values[(CONV, 1, "relevance")] == 2.0
    assert predictions.values[(CONV, 1, "interestingness")] is None
    assert predictions.reasons[(CONV, 1, "interestingness")] == NULL_VALUE
    assert predictions.values[(CONV, 17, "interestingness")] == 1.0
    assert predictions.values[(CONV, None, "task_completion")] == 1.5
    assert dict(predictions.notes) == {
        "unknown dialogue-level aspect 'charm' (ignored)": 1,
        "dialogue-level prediction of turn-level aspect 'relevance' (ignored)": 1,
        "unknown record field 'model' (ignored)": 1,
    }
    result = meta_evaluate(gold, predictions, "mine")
    assert result.unknown_conv_ids == ["nobody_redial_x"]
    # turn 17 of this conversation is rated for interestingness only; turn 2 is the user's
    assert result.unmatched == {
        "relevance: assistant turn without a gold label": 1,
        "relevance: turn_ind is not an assistant utterance": 1,
    }
    interest = result.cell("redial", "interestingness")
    assert interest.missing_reasons[NULL_VALUE] == 1
    assert interest.n == 1 and interest.undefined == "fewer than two pairs"
    assert result.notes == dict(predictions.notes)


def test_a_missing_or_empty_prediction_block_is_allowed(tmp_path: Path) -> None:
    predictions = read_run_file(write(tmp_path, [{"conv_id": CONV}, {"conv_id": "b_redial_1", "turns": []}]))
    assert predictions.values == {}


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ({"conv_id": CONV}, "expected a JSON array of records, got dict"),
        ([["not", "an", "object"]], "record 1: expected a JSON object, got list"),
        ([{"turns": []}], "record 1, field 'conv_id': missing"),
        ([{"conv_id": 7}], "record 1, field 'conv_id': expected a non-empty string, got int"),
        ([{"conv_id": "a_redial_1"}, {"conv_id": "a_redial_1"}], "record 2, field 'conv_id'"),
        ([{"conv_id": CONV, "turns": {}}], "field 'turns': conv_id '" + CONV + "': expected a list of turns"),
        ([{"conv_id": CONV, "turns": [{"turn_level_pred": {}}]}], "field 'turns[0].turn_ind': conv_id"),
        ([{"conv_id": CONV, "turns": [{"turn_ind": 1.5}]}], "field 'turns[0].turn_ind'"),
        ([{"conv_id": CONV, "turns": [{"turn_ind": -1}]}], "non-negative integer turn index, got -1"),
        ([{"conv_id": CONV, "turns": [{"turn_ind": 1}, {"turn_ind": 1}]}], "turn index 1 given twice"),
        (
            [{"conv_id": CONV, "turns": [{"turn_ind": 1, "turn_level_pred": {"relevance": "high"}}]}],
            "field 'turns[0].turn_level_pred.relevance': conv_id '" + CONV + "': expected a number or null",
        ),
        (
            [{"conv_id": CONV, "turns": [{"turn_ind": 1, "turn_level_pred": []}]}],
            "field 'turns[0].turn_level_pred'",
        ),
        ([{"conv_id": CONV, "dial_level_pred": {"overall": True}}], "field 'dial_level_pred.overall'"),
        ([{"conv_id": CONV, "dial_level_pred": 3}], "field 'dial_level_pred': conv_id"),
    ],
)
def test_malformed_run_files_name_file_record_and_field(tmp_path: Path, data: Any, where: str) -> None:
    path = write(tmp_path, data)
    with pytest.raises(DataError) as caught:
        read_run_file(path)
    message = str(caught.value)
    assert message.startswith(str(path))
    assert where in message


def test_non_finite_values_and_broken_json(tmp_path: Path) -> None:
    path = tmp_path / "nan.json"
    path.write_text('[{"conv_id": "a_redial_1", "dial_level_pred": {"overall": NaN}}]', encoding="utf-8")
    with pytest.raises(
        DataError, match=re.escape("field 'dial_level_pred.overall': conv_id 'a_redial_1': expected a finite")
    ):
        read_run_file(path)
    broken = tmp_path / "broken.json"
    broken.write_text('[{"conv_id": ', encoding="utf-8")
    with pytest.raises(DataError, match=re.escape("broken.json: not valid JSON")):
        read_run_file(broken)


def test_written_run_files_read_back_to_the_same_predictions(tmp_path: Path, gold: GoldSet) -> None:
    original = read_run_file(FACE_RUN)
    path = tmp_path / "copy.json"
    write_run_file(original, path, order=[c.conv_id for c in gold])
    copy = read_run_file(path)
    assert copy.values == original.values
    records = json.loads(path.read_text(encoding="utf-8"))
    assert [r["conv_id"] for r in records] == [c.conv_id for c in gold]
    assert "dialogue_overall" in records[0]["dial_level_pred"]
    with gzip.open(FACE_RUN, "rt", encoding="utf-8") as handle:
        raw = json.load(handle)
    assert sum(len(r["turns"]) for r in records) == sum(
        1 for r in raw for t in r["turns"] if t["turn_level_pred"]
    )
