"""The run folder's home in the model layer: typed manifest, domain from the folder, old names kept,
and no reader of run folders importing the runner."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import crsim
from crsim.data.domains import domain_named, domain_of
from crsim.errors import ConfigError, DataError
from crsim.model.run_folder import DIALOGUES, MANIFEST, Manifest, load_manifest, open_run

SRC = Path(crsim.__file__).parent


def _folder(path: Path, manifest: dict[str, object]) -> Path:
    path.mkdir()
    (path / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    (path / DIALOGUES).write_text("", encoding="utf-8")
    return path


def test_the_typed_manifest_reads_a_minimal_manifest_and_keeps_unknown_fields(tmp_path: Path) -> None:
    run = _folder(tmp_path / "run", {"config": {"seed": 5}, "note": "by hand"})
    manifest = load_manifest(run)
    assert (manifest.seed, manifest.domain, manifest.planned_dialogues) == (5, "movies", None)
    assert manifest.model_extra == {"note": "by hand"}
    folder = open_run(run)
    assert folder.manifest == {"config": {"seed": 5}, "note": "by hand"}  # as written, for reports
    assert folder.typed_manifest.seed == 5 and folder.domain == "movies"


def test_a_manifest_field_of_the_wrong_type_names_the_file_and_field(tmp_path: Path) -> None:
    run = _folder(tmp_path / "run", {"config": {}, "planned_dialogues": "many"})
    with pytest.raises(DataError) as caught:
        open_run(run)
    assert caught.value.path == str(run / MANIFEST) and caught.value.field == "planned_dialogues"


def test_the_domain_is_resolved_from_the_manifest() -> None:
    assert domain_of(Manifest(config={"domain": "movies"})) is domain_named("movies")
    with pytest.raises(ConfigError, match="unknown domain 'books'"):
        domain_of(Manifest(config={"domain": "books"}))


def test_old_module_names_still_give_the_same_objects() -> None:
    import crsim.eval.evaluation as evaluation
    import crsim.model.run_folder as run_folder
    from crsim.eval import evaluate, stats, summary_file
    from crsim.report import run_folder as report_run_folder
    from crsim.run import evaluation as old_evaluation
    from crsim.run import interrupt, lock, records

    assert old_evaluation.evaluate_path is evaluation.evaluate_path
    assert old_evaluation.EvaluateOptions is evaluation.EvaluateOptions
    assert (
        report_run_folder.open_run is run_folder.open_run
        and report_run_folder.RunFolder is run_folder.RunFolder
    )
    assert (
        lock.run_folder_lock is run_folder.run_folder_lock
        and records.read_manifest is run_folder.read_manifest
    )
    assert summary_file.read_summary_file is run_folder.read_summary_file
    assert evaluate.ScoreRecord is run_folder.ScoreRecord and stats.Aggregate is run_folder.Aggregate
    assert interrupt.run_interruptibly is crsim.interrupt.run_interruptibly


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_readers_of_run_folders_never_import_the_runner() -> None:
    """eval, report, meta, model and the dataframes read run folders through model/run_folder; the
    command-line modules among them are left to the CLI's own contract."""
    offenders = []
    for package in ("eval", "report", "meta", "model"):
        for path in sorted((SRC / package).rglob("*.py")):
            if path.stem == "cli" or path.stem.endswith("_cli"):
                continue
            offenders += [
                f"{path.relative_to(SRC)}: {m}" for m in _imports(path) if m.startswith("crsim.run")
            ]
    offenders += [f"analysis.py: {m}" for m in _imports(SRC / "analysis.py") if m.startswith("crsim.run")]
    assert offenders == []
