"""`crsim analyze` (the `analyze_app` Typer app): diversity, controllability, consistency, plots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from matplotlib.image import imread
from typer.testing import CliRunner

from crsim.cli.analyze import analyze_app
from crsim.eval.scores import ScoreRecord, write_scores
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.run_folder.files import DIALOGUES, LLM_CACHE
from test_analysis_stats import length_population

runner = CliRunner()
PNG = b"\x89PNG\r\n\x1a\n"


def write_run(folder: Path, dialogues: list[Dialogue]) -> Path:
    folder.mkdir(parents=True)
    (folder / DIALOGUES).write_text("".join(d.model_dump_json() + "\n" for d in dialogues), encoding="utf-8")
    return folder


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run1", length_population((4, 15), (45, 70), per_level=6))


def assert_png(path: Path) -> None:
    assert path.read_bytes()[:8] == PNG
    image = imread(path)
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100


def test_diversity_as_json(run: Path) -> None:
    result = runner.invoke(analyze_app, ["diversity", str(run), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["method"] == "rules" and report["runs"] == ["run1"]
    (group,) = report["groups"]
    assert (group["group"], group["dialogues"], group["utterances"]) == ("recusersim", 12, 36)
    assert group["distributions"]["length"]["counts"] == {"short": 18, "medium": 0, "long": 18}
    assert group["distributions"]["length"]["entropy"] == pytest.approx(0.6309, abs=1e-4)  # ln 2 / ln 3


def test_diversity_table_plots_and_utterances(run: Path, tmp_path: Path) -> None:
    plots, utterances = tmp_path / "plots", tmp_path / "utterances.jsonl"
    result = runner.invoke(
        analyze_app, ["diversity", str(run), "--plots", str(plots), "--utterances", str(utterances)]
    )
    assert result.exit_code == 0, result.output
    assert "Diversity (rules)" in result.output and "recusersim" in result.output
    for measure in ("length", "formality", "richness"):
        assert_png(plots / f"diversity_{measure}.png")
    rows = [json.loads(line) for line in utterances.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 36
    assert rows[0]["pattern"] == {"sentence_length": "short"} and rows[0]["length"] == "short"


def test_custom_thresholds_move_the_categories(run: Path) -> None:
    result = runner.invoke(
        analyze_app, ["diversity", str(run), "--json", "--short-max", "2", "--medium-max", "200"]
    )
    counts = json.loads(result.output)["groups"][0]["distributions"]["length"]["counts"]
    assert counts == {"short": 0, "medium": 36, "long": 0}


def test_one_simulator_in_two_runs_is_reported_per_run(run: Path, tmp_path: Path) -> None:
    other = write_run(tmp_path / "run2", length_population((4, 15), (4, 15), per_level=2))
    result = runner.invoke(analyze_app, ["diversity", str(run), str(other), "--json"])
    report = json.loads(result.output)
    assert [g["group"] for g in report["groups"]] == ["recusersim@run1", "recusersim@run2"]
    assert report["runs"] == ["run1", "run2"]


def test_controllability_detects_the_direction_and_draws_panels(run: Path, tmp_path: Path) -> None:
    result = runner.invoke(analyze_app, ["controllability", str(run), "--json"])
    assert result.exit_code == 0, result.output
    (control,) = json.loads(result.output)["results"]
    assert control["pattern"] == "sentence_length" and control["test"]["direction"] == "intended"
    plots = tmp_path / "plots"
    table = runner.invoke(
        analyze_app, ["controllability", str(run), "--plots", str(plots), "--unit", "utterance"]
    )
    assert table.exit_code == 0, table.output
    assert "intended (long vs short" in table.output and "unit: utterance" in table.output
    assert_png(plots / "controllability_recusersim.png")


def test_controllability_says_when_no_persona_has_a_pattern(tmp_path: Path) -> None:
    plain = Dialogue(id="d", simulator_id="abus", utterances=[Utterance(role=Role.USER, text="Hi.")])
    result = runner.invoke(analyze_app, ["controllability", str(write_run(tmp_path / "r", [plain]))])
    assert result.exit_code == 0
    assert "no dialogue has a linguistic pattern" in result.output


def test_consistency_of_two_score_files(tmp_path: Path) -> None:
    def records(values: list[float]) -> list[ScoreRecord]:
        return [
            ScoreRecord(dialogue_id=f"d{k}", crs_id="c", simulator_id="s", metric="judge/action", value=v)
            for k, v in enumerate(values)
        ]

    write_scores(records([1.0, 2.0, 3.0, 4.0]), tmp_path / "a.jsonl")
    write_scores(records([2.0, 4.0, 6.0, 8.5]), tmp_path / "b.jsonl")
    result = runner.invoke(
        analyze_app, ["consistency", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--json"]
    )
    assert result.exit_code == 0, result.output
    (metric,) = json.loads(result.output)["metrics"]
    assert metric["paired"] == 4 and metric["dialogues"]["spearman_rho"] == pytest.approx(1.0)
    table = runner.invoke(analyze_app, ["consistency", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")])
    assert "judge/action" in table.output and "1.00" in table.output


def judge_config(tmp_path: Path, reply: str) -> Path:
    config = tmp_path / "judge.yaml"
    config.write_text(
        "llm:\n  default:\n    provider: scripted\n    replies:\n      - " + json.dumps(reply) + "\n",
        encoding="utf-8",
    )
    return config


def test_llm_measures_use_the_judge_config_and_cache_in_the_run_folder(run: Path, tmp_path: Path) -> None:
    # one answer that reads under both schemas (each ignores the other's field)
    config = judge_config(tmp_path, json.dumps({"formality": "formal", "key_points": []}))
    result = runner.invoke(
        analyze_app, ["diversity", str(run), "--measure", "llm", "--judge", str(config), "--json"]
    )
    assert result.exit_code == 0, result.output
    distributions = json.loads(result.output)["groups"][0]["distributions"]
    assert distributions["formality"]["counts"] == {"informal": 0, "neutral": 0, "formal": 36}
    assert distributions["richness"]["counts"] == {"low": 36, "high": 0}
    assert (run / LLM_CACHE).is_file()


def test_unreadable_llm_answers_are_counted_as_errors(run: Path, tmp_path: Path) -> None:
    config = judge_config(tmp_path, "formal, I think")
    cache = tmp_path / "cache.sqlite"
    args = ["diversity", str(run), "--measure", "llm", "--judge", str(config), "--cache", str(cache)]
    result = runner.invoke(analyze_app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    formality = json.loads(result.output)["groups"][0]["distributions"]["formality"]
    assert (formality["n"], formality["errors"], formality["entropy"]) == (0, 36, None)
    assert cache.is_file() and not (run / LLM_CACHE).exists()
    table = runner.invoke(analyze_app, args)
    assert "unreadable judge answers formality: 36, richness: 36" in table.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["diversity", "{tmp}/nowhere"], "expected a run folder with dialogues.jsonl"),
        (
            ["diversity", "{run}", "--judge", "{tmp}/x.yaml"],
            "--judge and --cache apply to --measure llm only",
        ),
        (["diversity", "{run}", "--short-max", "30", "--medium-max", "30"], "--medium-max"),
        (
            ["controllability", "{run}", "--measure", "llm", "--judge", "{tmp}/x.yaml"],
            "x.yaml: file not found",
        ),
        (["consistency", "{tmp}/a.jsonl", "{tmp}/b.jsonl"], "a.jsonl: file not found"),
    ],
)
def test_bad_input_ends_in_one_line_naming_it(
    run: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    filled = [a.format(tmp=tmp_path, run=run) for a in args]
    result = runner.invoke(analyze_app, filled)
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


def test_a_bad_dialogue_record_names_the_file_and_line(tmp_path: Path) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / DIALOGUES).write_text('{"id": "ok"}\n{"id": ""}\n', encoding="utf-8")
    result = runner.invoke(analyze_app, ["diversity", str(folder)])
    assert result.exit_code == 2
    assert "record 2" in result.output and "dialogues.jsonl" in result.output
