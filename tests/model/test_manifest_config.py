"""The manifest's config is read typed, in one place (`Manifest`), with the experiment config's defaults.

`ExperimentConfig` (runner floor) takes the defaults readers need from `crsim.model.run_folder.manifest`;
the test checks they agree, so a manifest that lacks a field reads as the run it describes would have
run. A second test checks that no module outside `model/run_folder` reads `manifest.config` itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import crsim
from crsim.core.errors import DataError
from crsim.core.plugins import ComponentSpec
from crsim.eval.scores import default_metrics
from crsim.model.run_folder.manifest import Manifest
from crsim.runner.config import ExperimentConfig

SRC = Path(crsim.__file__).parent


def test_a_bare_manifest_reads_as_the_experiment_defaults() -> None:
    defaults = ExperimentConfig()
    bare = Manifest()
    assert (bare.seed, bare.max_turns, bare.domain) == (defaults.seed, defaults.max_turns, defaults.domain)
    assert bare.metrics is None and defaults.metrics == default_metrics()  # None: evaluate's defaults
    assert bare.crss == [] and bare.users == {} and bare.users_source is None and bare.llm == {}


def test_a_written_config_reads_back_typed() -> None:
    config = ExperimentConfig.model_validate(
        {"seed": 7, "max_turns": 9, "domain": "restaurants", "crss": [{"name": "popular", "id": "pop"}]}
    ).manifest_config()
    manifest = Manifest(config=config)
    assert (manifest.seed, manifest.max_turns, manifest.domain) == (7, 9, "restaurants")
    assert [c.label for c in manifest.crss] == ["pop"]
    assert manifest.metrics == default_metrics()
    assert manifest.simulators and all(isinstance(s, ComponentSpec) for s in manifest.simulators)


def test_a_malformed_component_is_located() -> None:
    manifest = Manifest(config={"metrics": [{"name": "turns"}, {"args": {}}]})
    with pytest.raises(DataError, match=r"field 'config\.metrics\.1\.name'"):
        _ = manifest.metrics


def test_no_module_reads_the_untyped_manifest_config() -> None:
    """`manifest.config` / `typed_manifest.config` appear only in `crsim/model/run_folder/`."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if SRC / "model" / "run_folder" in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "config":
                owner = node.value
                name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
                if name in ("manifest", "typed_manifest"):
                    found.append(f"{path.relative_to(SRC)}:{node.lineno}: {ast.unparse(node)}")
    assert found == []
