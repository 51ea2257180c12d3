"""`crsim list`, `crsim describe` and `crsim --version` (issue 20 item 2)."""

from __future__ import annotations

from importlib.metadata import version

from typer.testing import CliRunner

from crsim.cli import app

runner = CliRunner()


def test_version_is_the_installed_distributions() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"crsim {version('crsim')}"


def test_list_shows_every_kind_and_marks_language_model_users() -> None:
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    for kind in ("simulator", "crs", "metric", "annotator", "dataset", "rubric", "domain"):
        assert kind in lines
    abus = next(line for line in lines if line.split()[:1] == ["abus"])
    popular = next(line for line in lines if line.split()[:1] == ["popular"])
    assert abus.split()[1] == "LLM" and popular.split()[1] != "LLM"


def test_list_of_one_kind_and_a_misspelt_kind() -> None:
    result = runner.invoke(app, ["list", "metrics"])
    assert result.exit_code == 0 and "success_rate" in result.output and "abus" not in result.output
    bad = runner.invoke(app, ["list", "metrix"])
    assert bad.exit_code == 2 and "did you mean 'metric'" in bad.output


def test_describe_shows_class_llm_use_and_every_argument() -> None:
    result = runner.invoke(app, ["describe", "abus"])
    assert result.exit_code == 0, result.output
    assert "crsim.sim.agenda.simulator.AgendaBasedSimulator" in result.output
    assert "language model: only with some arguments" in result.output
    assert "  patience: int = 3  (>= 1)\n      Failed recommendation rounds" in result.output
    assert "  nlu: 'rules' | 'llm' = 'rules'" in result.output
    judge = runner.invoke(app, ["describe", "judge"])
    assert "language model: yes, roles: judge" in judge.output


def test_describe_unknown_name_suggests_the_closest() -> None:
    result = runner.invoke(app, ["describe", "recal"])
    assert result.exit_code == 2 and "did you mean 'recall'?" in result.output
