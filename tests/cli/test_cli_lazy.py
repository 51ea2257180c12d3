"""`crsim --help` lists every command without importing any of them (issue 18: startup under 0.3 s
of CPU); the listed line of each command is its own help's first paragraph."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import typer

from crsim.cli import COMMANDS

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


def _modules_after(*args: str) -> set[str]:
    """The modules a fresh interpreter has imported after `crsim ARGS`."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, timeout=120, check=True
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


@pytest.mark.slow
def test_help_imports_no_command_and_no_heavy_library() -> None:
    loaded = _modules_after("--help")
    commands = {lazy.module for lazy in COMMANDS.values()}
    assert not commands & loaded, f"crsim --help imported {sorted(commands & loaded)}"
    heavy = {"sklearn", "scipy", "numpy", "pydantic", "httpx", "jinja2", "matplotlib"}
    assert not heavy & {name.split(".")[0] for name in loaded}


@pytest.mark.slow
def test_a_command_imports_its_module_only() -> None:
    loaded = _modules_after("schema", "--help")
    assert "crsim.cli.schema" in loaded
    others = {lazy.module for name, lazy in COMMANDS.items() if name != "schema"}
    assert not others & loaded


@pytest.mark.parametrize("name", list(COMMANDS))
def test_listed_summary_is_the_commands_own_help(name: str) -> None:
    command = typer.main.get_command(COMMANDS[name].load())
    own = (command.help or "").split("\n\n")[0].strip()
    assert COMMANDS[name].summary == own, f"update the summary of {name!r} in crsim/cli/__init__.py"


def test_meta_eval_help_names_the_evaluators_cache_file() -> None:
    from crsim.cli import meta_eval
    from crsim.studies.meta.evaluator import LLM_CACHE

    assert meta_eval.LLM_CACHE == LLM_CACHE
