"""The run folder's home in the model layer: typed manifest, domain from the folder."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import crsim
from crsim.core.errors import ConfigError, DataError
from crsim.domains import domain_named, domain_of
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


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found
