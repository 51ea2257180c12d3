"""Every public function that takes a file or folder takes it as `str` as well as `Path`.

Each case calls the function with a plain string and checks it does what it does with a `Path`
(before, several reached `.is_file()` or `.exists()` on the string and raised AttributeError)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from crsim.datasets.base import ConversionReport, convert_dataset
from crsim.datasets.dialoguekit import DialogueKitParams, DialogueKitReader
from crsim.datasets.iard import read_redial_movies
from crsim.datasets.redial import read_catalog
from crsim.datasets.stats import file_stats
from crsim.eval.learned.artifact import load_artifact, save_artifact
from crsim.eval.learned.crsarena import CRSARENA_MODEL, cached_model
from crsim.eval.learned.crsarena_model import load_model
from crsim.eval.learned.satisfaction import SATISFACTION_ARTIFACT, cached_artifact
from crsim.eval.run_scoring import evaluate_path, load_judge_config
from crsim.llm.config import load_llm_settings
from crsim.model import Dialogue, Role, Utterance
from crsim.model.io import iter_dialogue_records, iter_dialogues, validate_file
from crsim.report.html import build_report, write_report
from crsim.report.titles import count_lines, open_run
from crsim.runner.batch import run_batch
from crsim.runner.build import build_experiment
from crsim.runner.config import ExperimentConfig, load_config
from crsim.studies.meta.baselines import default_baselines_path, load_baselines
from crsim.studies.meta.predictions import Predictions, read_run_file, write_run_file
from crsim.studies.pairwise import run_dialogues
from report_support import small_run

FIXTURES = Path(__file__).parents[1] / "fixtures"
CONFIGS = Path(__file__).parents[2] / "configs"


@pytest.fixture
def dialogues_file(tmp_path: Path) -> Path:
    path = tmp_path / "dialogues.jsonl"
    dialogue = Dialogue(
        id="d1",
        utterances=[
            Utterance(role=Role.USER, text="Any comedy?"),
            Utterance(role=Role.CRS, text="Airplane!"),
        ],
    )
    path.write_text(dialogue.model_dump_json() + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_run(tmp_path_factory.mktemp("runs") / "run", users=2)


def test_model_io(dialogues_file: Path) -> None:
    assert [d.id for d in iter_dialogues(str(dialogues_file))] == ["d1"]
    assert [n for n, _ in iter_dialogue_records(str(dialogues_file))] == [1]
    assert validate_file(str(dialogues_file)) == validate_file(dialogues_file) == (1, [])
    assert file_stats(str(dialogues_file)) == file_stats(dialogues_file)


def test_dataset_conversion_and_catalogues() -> None:
    reader = DialogueKitReader(DialogueKitParams())
    source = FIXTURES / "moviebot" / "annotated_dialogues.json"
    report = ConversionReport()
    from_str = [d.id for d in convert_dataset(reader, str(source), report=report)]
    assert from_str == [d.id for d in convert_dataset(reader, source)] and report.written == len(from_str)
    catalog = next((FIXTURES / "redial").glob("movies_with_mentions.csv*"))
    assert read_catalog(str(catalog)) == read_catalog(catalog)
    assert read_redial_movies(str(catalog)) == read_redial_movies(catalog)


def test_run_report_and_evaluation(run_dir: Path, dialogues_file: Path, tmp_path: Path) -> None:
    assert open_run(str(run_dir)).typed_manifest == open_run(run_dir).typed_manifest
    assert count_lines(str(run_dir / "dialogues.jsonl")) == count_lines(run_dir / "dialogues.jsonl") > 0
    write_report(build_report([open_run(run_dir)]), str(tmp_path / "r.html"))
    assert (tmp_path / "r.html").stat().st_size > 0
    result = evaluate_path(str(dialogues_file), out=str(tmp_path / "eval"))
    assert result is not None and (tmp_path / "eval" / "summary.json").is_file()
    assert [d.id for d in run_dialogues(str(run_dir))] == [d.id for d in run_dialogues(run_dir)]


def test_run_batch_and_configs(tmp_path: Path) -> None:
    config = ExperimentConfig.model_validate(
        {"name": "s", "users": {"size": 1}, "simulators": [{"name": "abus"}], "crss": [{"name": "popular"}]}
    )
    asyncio.run(run_batch(build_experiment(config), str(tmp_path / "out")))
    assert (tmp_path / "out" / "dialogues.jsonl").is_file()
    experiment = CONFIGS / "llm-local.yaml"
    assert load_config(str(experiment)) == load_config(experiment)
    judges = CONFIGS / "judge-local.yaml"
    assert load_judge_config(str(judges)) == load_judge_config(judges)
    assert load_llm_settings(str(judges)) == load_llm_settings(judges)


def test_learned_models_and_meta_files(tmp_path: Path) -> None:
    artifact = load_artifact(str(SATISFACTION_ARTIFACT))
    assert artifact == load_artifact(SATISFACTION_ARTIFACT) == cached_artifact(str(SATISFACTION_ARTIFACT))
    save_artifact(artifact, str(tmp_path / "a.json"))
    assert (tmp_path / "a.json").read_bytes() == SATISFACTION_ARTIFACT.read_bytes()
    assert load_model(str(CRSARENA_MODEL)) == cached_model(str(CRSARENA_MODEL))
    assert load_baselines(str(default_baselines_path())) == load_baselines()
    predictions = Predictions(source="test")
    predictions.add(("c1", 1, "relevance"), 2.0)
    write_run_file(predictions, str(tmp_path / "run.json"))
    assert len(json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))) == 1
    assert read_run_file(str(tmp_path / "run.json")).values == read_run_file(tmp_path / "run.json").values


def test_dataframes_and_export(run_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    from crsim.report.dataframes import dialogues_df, export_run

    assert len(dialogues_df(str(run_dir))) == len(dialogues_df(run_dir))
    written = export_run(str(run_dir), str(tmp_path / "csv"), fmt="csv")
    assert written and all(path.parent == tmp_path / "csv" for path in written)
