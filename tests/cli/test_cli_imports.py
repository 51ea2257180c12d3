"""No command pays at startup for libraries it does not use (issue 21, bench/startup.py).

Each probe is a fresh interpreter running `crsim ARGS` and listing the modules it imported. Showing a
command's help needs typer/rich (and pydantic where options come from a config model), never the
numeric, plotting or client libraries a command's work may load later; `crsim gcdf1 score` needs
none of them at all (it reads JSON and YAML and scores in pure Python).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from crsim.cli import COMMANDS

FIXTURES = Path(__file__).parents[1] / "fixtures" / "gcdf1"
_PROBE = """
import json, sys
from crsim.cli import main
sys.argv = ["crsim", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""
#: Libraries that cost tens to hundreds of ms to import and that no command's help needs.
HEAVY = {"numpy", "scipy", "sklearn", "pandas", "matplotlib", "openai", "httpx", "jinja2", "torch", "ray"}


def _modules_after(*args: str) -> set[str]:
    """The modules a fresh interpreter has imported after `crsim ARGS`."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, timeout=120, check=True
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def _libraries_after(*args: str) -> set[str]:
    """The top-level packages a fresh interpreter has imported after `crsim ARGS`."""
    return {name.split(".")[0] for name in _modules_after(*args)}


@pytest.mark.slow
def test_a_help_that_needs_no_data_model_does_not_import_it() -> None:
    """The shared CLI support writes files atomically; that must not bring in the run-folder package
    and the data model (pydantic models) just to show `crsim gcdf1 --help`."""
    loaded = _modules_after("gcdf1", "--help")
    assert "crsim.cli._support" in loaded
    assert not {"crsim.model", "crsim.model.run_folder"} & loaded


@pytest.mark.slow
@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_commands_help_imports_no_heavy_library(name: str) -> None:
    loaded = _libraries_after(name, "--help") & HEAVY
    assert not loaded, f"crsim {name} --help imported {sorted(loaded)}"


@pytest.mark.slow
def test_gcdf1_score_imports_no_numeric_or_client_library() -> None:
    loaded = _libraries_after(
        "gcdf1",
        "score",
        str(FIXTURES / "dialogues_001.json.gz"),
        "--canonical-map",
        str(FIXTURES / "multiwoz21_canonical_map.json.gz"),
        "--config",
        str(FIXTURES / "multiwoz_user_evaluator.yaml"),
    )
    assert not loaded & HEAVY, f"crsim gcdf1 score imported {sorted(loaded & HEAVY)}"


#: Modules that build the data model's records or the LLM client (its retries and SQLite cache).
RECORDS = {"crsim.model.dialogue", "crsim.model.run_folder.manifest", "crsim.llm.client", "sqlite3"}


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name in COMMANDS if name != "run"])
def test_a_commands_help_builds_no_record_model(name: str) -> None:
    """Help texts that name a run folder's files import `files.py` alone: the packages `crsim.model`,
    `crsim.model.run_folder` and `crsim.llm` load their submodules on first use."""
    loaded = _modules_after(name, "--help") & RECORDS
    assert not loaded, f"crsim {name} --help imported {sorted(loaded)}"


@pytest.mark.slow
def test_run_help_builds_the_config_model_but_not_the_llm_client() -> None:
    """`crsim run --help` derives its help from the config model, whose LLM section is a config class:
    the client, its retries and the SQLite cache stay unloaded."""
    loaded = _modules_after("run", "--help")
    assert "crsim.runner.config" in loaded
    assert not {"crsim.llm.client", "crsim.llm.cache", "sqlite3", "tenacity"} & loaded
