"""`crsim gcdf1 score | query` through typer's CliRunner, on the reference evaluator's dialogues."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli.gcdf1 import gcdf1_app
from crsim.studies.gcdf1.behaviour import DESCRIPTIONS, Behaviour, BehaviourFile

FIXTURES = Path(__file__).parents[1] / "fixtures" / "gcdf1"
FILES = [str(FIXTURES / f"dialogues_00{i}.json.gz") for i in range(1, 5)]
MAP = str(FIXTURES / "multiwoz21_canonical_map.json.gz")
CONFIG = str(FIXTURES / "multiwoz_user_evaluator.yaml")
runner = CliRunner()


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gcdf1") / "per_dialogue.json"
    result = runner.invoke(
        gcdf1_app,
        ["score", *FILES, "--canonical-map", MAP, "--config", CONFIG, "-o", str(out)],
        terminal_width=160,
    )
    assert result.exit_code == 0, result.output
    assert "GCDF1 corpus means (128 dialogues)" in result.output
    assert "combined" in result.output and "attraction" in result.output
    return out


def test_score_writes_the_reference_shape_and_matches_it(scored: Path) -> None:
    got = json.loads(scored.read_text(encoding="utf-8"))
    with gzip.open(FIXTURES / "expected_per_dialogue.json.gz", "rt", encoding="utf-8") as handle:
        expected = json.load(handle)
    assert set(got) == set(expected)
    matched = 0
    for dialogue_id, scores in expected.items():
        same = set(got[dialogue_id]) == set(scores)
        for metric, value in scores.items():
            mine = got[dialogue_id][metric]
            if isinstance(value, str):
                same &= mine == value
            else:
                same &= set(mine) == set(value) and all(abs(mine[d] - value[d]) <= 1e-6 for d in value)
        matched += same
    assert matched == 128


def test_score_writes_the_behaviour_log_beside_the_scores(scored: Path) -> None:
    log = BehaviourFile.read(scored.with_name("per_dialogue.behaviour.json"))
    assert len(log.dialogues) == 128 and log.errors == {}
    failed = [d for d, _ in log.query("failed_dialogue")]
    assert failed == ["MUL0992.json", "MUL1392.json", "MUL2197.json", "PMUL2009.json", "PMUL3596.json"]
    assert log.totals()["repeated_constraint"] > 0


def test_query_lists_dialogues_and_counts(scored: Path) -> None:
    result = runner.invoke(
        gcdf1_app, ["query", str(scored), "--behaviour", "failed_dialogue"], terminal_width=160
    )
    assert result.exit_code == 0, result.output
    assert "failed_dialogue: 5 of 128 dialogues" in result.output
    assert "MUL0992.json" in result.output and "area=centre" in result.output
    result = runner.invoke(
        gcdf1_app, ["query", str(scored), "-b", "repeat_unexplained", "--domain", "train", "--json"]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["behaviour"] == "repeat_unexplained" and payload["domain"] == "train"
    assert payload["dialogues"] and all(d["count"] == len(d["events"]) for d in payload["dialogues"])
    assert all(e["domain"] == "train" for d in payload["dialogues"] for e in d["events"])
    counts = [d["count"] for d in payload["dialogues"]]
    assert counts == sorted(counts, reverse=True)


def test_query_list_shows_every_behaviour_with_counts(scored: Path) -> None:
    result = runner.invoke(gcdf1_app, ["query", "--list", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["behaviour"] for r in rows] == [b.value for b in Behaviour]
    assert all(r["description"] == DESCRIPTIONS[Behaviour(r["behaviour"])][1] for r in rows)
    result = runner.invoke(
        gcdf1_app, ["query", str(scored.with_name("per_dialogue.behaviour.json")), "--list"]
    )
    assert result.exit_code == 0 and "failed_dialogue" in result.output


def test_query_errors_are_one_line(scored: Path) -> None:
    result = runner.invoke(gcdf1_app, ["query", str(scored), "--behaviour", "no_such_thing"])
    assert result.exit_code == 2 and "unknown behaviour 'no_such_thing'" in result.output
    result = runner.invoke(gcdf1_app, ["query", str(scored)])
    assert result.exit_code == 2 and "--behaviour" in result.output


def test_score_json_means_and_custom_behaviour_path(tmp_path: Path) -> None:
    log = tmp_path / "log.json"
    result = runner.invoke(
        gcdf1_app, ["score", FILES[0], "--canonical-map", MAP, "--behaviour-out", str(log), "--json"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["dialogues"] == 32 and summary["skipped"] == 0
    assert 0.0 < summary["means"]["igcd_f1"]["combined"]["mean"] < 1.0
    assert summary["means"]["igcd_f1"]["combined"]["n"] == 32
    assert BehaviourFile.read(log).dialogues


def test_score_needs_the_canonical_map_the_config_asks_for() -> None:
    result = runner.invoke(gcdf1_app, ["score", FILES[0], "--config", CONFIG])
    assert result.exit_code == 2 and "--canonical-map" in result.output


def test_score_reports_bad_dialogues_and_scores_the_rest(tmp_path: Path) -> None:
    with gzip.open(FILES[0], "rt", encoding="utf-8") as handle:
        dialogues = json.load(handle)[:3]
    dialogues[1]["turns"][2]["frames"] = "oops"
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(dialogues), encoding="utf-8")
    out = tmp_path / "scores.json"
    result = runner.invoke(
        gcdf1_app, ["score", str(path), "--canonical-map", MAP, "-o", str(out)], terminal_width=200
    )
    assert result.exit_code == 0, result.output
    assert (
        f"{path}, record 1, dialogue '{dialogues[1]['dialogue_id']}', field 'turns[2].frames'"
        in result.output
    )
    assert len(json.loads(out.read_text(encoding="utf-8"))) == 2
    errors = BehaviourFile.read(tmp_path / "scores.behaviour.json").errors
    assert list(errors) == [dialogues[1]["dialogue_id"]]


def test_score_fails_when_nothing_can_be_scored(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text("[]", encoding="utf-8")
    result = runner.invoke(gcdf1_app, ["score", str(path), "--canonical-map", MAP])
    assert result.exit_code == 2 and "no dialogue could be scored" in result.output


def test_docs_describe_every_behaviour() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "gcdf1.md").read_text(encoding="utf-8")
    missing = [b.value for b in Behaviour if f"`{b.value}`" not in docs]
    assert missing == []
