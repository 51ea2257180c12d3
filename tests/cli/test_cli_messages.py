"""Messages that help (issue 20 item 7): the closest name for a typo, YAML errors with line and column, a
converter naming the dataset a file looks like, validate suggesting --kind items, --metrics errors naming
--metrics, and commands that found nothing to work on ending with an error."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.model.run_folder.scores import ScoreRecord, write_scores

runner = CliRunner()
FIXTURES = Path(__file__).parents[1] / "fixtures"


def _error(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    return result.output


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("sede: 3\n", "field 'sede': Extra inputs are not permitted (did you mean 'seed'?)"),
        ("users: {sise: 3}\n", "field 'users.sise': Extra inputs are not permitted (did you mean 'size'?)"),
        ("llm: {default: {provder: x}}\n", "field 'llm.default.provder'"),
        ("simulators: [{name: abuss}]\n", "unknown simulator 'abuss' (did you mean 'abus'?)"),
        (
            "simulators: [{name: abus, args: {patiense: 2}}]\n",
            "for simulator 'abus' (did you mean 'patience'?)",
        ),
        ("crss: [{name: retrievl}]\n", "unknown crs 'retrievl' (did you mean 'retrieval'?)"),
        (
            "users: {size: 3\nseed: [1,\n",
            "c.yaml: not valid YAML (expected ',' or '}', but got ':' at line 2, column 5)",
        ),
    ],
)
def test_config_mistakes_name_the_closest_field_or_component(
    tmp_path: Path, config: str, expected: str
) -> None:
    (tmp_path / "c.yaml").write_text(config, encoding="utf-8")
    assert expected in _error(["run", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "run")])


def test_a_name_far_from_every_known_one_gets_no_guess(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("simulators: [{name: zzzzzz}]\n", encoding="utf-8")
    message = _error(["run", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "run")])
    assert "unknown simulator 'zzzzzz'; expected one of" in message and "did you mean" not in message


@pytest.mark.parametrize(
    ("reader", "file", "expected"),
    [
        (
            "redial",
            "inspired/original/test.tsv.gz",
            "test.tsv.gz looks like INSPIRED's original TSV, which the 'inspired' reader reads",
        ),
        (
            "inspired",
            "redial/test_data.jsonl.gz",
            "looks like ReDial dialogues, which the 'redial' reader reads",
        ),
        (
            "iard",
            "crsarena_eval/crs_arena_eval.json.gz",
            "looks like CRSArena-Eval, which the 'crsarena_eval' reader",
        ),
    ],
)
def test_a_converter_given_another_datasets_file_names_it(
    tmp_path: Path, reader: str, file: str, expected: str
) -> None:
    message = _error(["data", "convert", reader, str(FIXTURES / file), "-o", str(tmp_path / "out.jsonl")])
    assert expected in message


def test_validate_suggests_the_kind_every_record_fits(tmp_path: Path) -> None:
    items = tmp_path / "items.jsonl"
    with gzip.open(
        Path(__file__).parents[2] / "src/crsim/domains/movielens/items.jsonl.gz", "rt", encoding="utf-8"
    ) as f:
        items.write_text("".join(next(f) for _ in range(3)), encoding="utf-8")
    result = runner.invoke(app, ["validate", "file", str(items)])
    assert result.exit_code == 1 and "every record is valid as items: try --kind items" in result.output
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"x": 1}\n', encoding="utf-8")
    assert "try --kind" not in runner.invoke(app, ["validate", "file", str(broken)]).output


def test_metrics_parse_errors_name_metrics(tmp_path: Path) -> None:
    message = _error(["evaluate", str(tmp_path), "--metrics", "recall:k"])
    assert "--metrics 'recall:k': 'k': expected KEY=VALUE" in message and "--arg" not in message


def test_need_eval_on_a_file_read_as_no_dialogues_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "gold.jsonl"
    empty.write_text("", encoding="utf-8")
    message = _error(["data", "annotate", "need-eval", str(empty)])
    assert "gold.jsonl: read as crsim dialogues (no --dataset), it holds no dialogues" in message


def test_consistency_with_fewer_than_three_pairs_is_an_error(tmp_path: Path) -> None:
    def records(n: int) -> list[ScoreRecord]:
        return [
            ScoreRecord(dialogue_id=f"d{k}", crs_id="c", simulator_id="s", metric="judge/a", value=float(k))
            for k in range(n)
        ]

    write_scores(records(2), tmp_path / "a.jsonl")
    write_scores(records(2), tmp_path / "b.jsonl")
    message = _error(
        ["analyze", "consistency", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--json"]
    )
    assert "pair fewer than 3 dialogues on every metric" in message
    write_scores(records(3), tmp_path / "a.jsonl")
    write_scores(records(3), tmp_path / "b.jsonl")
    fine = runner.invoke(
        app, ["analyze", "consistency", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--json"]
    )
    assert fine.exit_code == 0 and json.loads(fine.output)["metrics"][0]["paired"] == 3
