"""The command line: one-line errors for bad input, options that map onto config fields, outputs."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.cli import run as run_command
from crsim.core.errors import ConfigError
from crsim.runner.config import CLI_OVERRIDES, ExperimentConfig, load_config

runner = CliRunner()


def test_every_run_option_maps_to_a_config_field() -> None:
    for option, path in CLI_OVERRIDES.items():
        model: type = ExperimentConfig
        for part in path.split("."):
            assert part in model.model_fields, f"--{option} maps to missing field {path}"
            model = model.model_fields[part].annotation  # type: ignore[assignment]
    config = load_config(None, {"users": 7, "seed": 3, "concurrency": 2, "max_turns": 4, "out": Path("x")})
    assert (config.users.size, config.seed, config.concurrency, config.max_turns) == (7, 3, 2, 4)


def test_every_run_option_reaches_the_run(tmp_path: Path) -> None:
    how = {"config", "resume", "as_json", "retry_errors", "retry_kinds", "preflight"}  # not config fields
    options = set(inspect.signature(run_command.run).parameters) - how
    assert options == set(CLI_OVERRIDES), "a `crsim run` option without a config field would be dropped"
    run_dir = tmp_path / "run"
    args = ["--users", "2", "--seed", "5", "--concurrency", "3", "--max-turns", "2", "--json"]
    result = runner.invoke(app, ["run", "--out", str(run_dir), *args])
    assert result.exit_code == 0, result.output
    config = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))["config"]
    assert (config["users"]["size"], config["seed"], config["concurrency"], config["max_turns"]) == (
        2,
        5,
        3,
        2,
    )
    summary = json.loads(result.output)
    assert all(s["n_dialogues"] == 2 and s["metrics"]["Turns"]["mean"] <= 2 for s in summary)


def test_overrides_fill_sections_left_empty_and_name_sections_of_the_wrong_shape(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("users: null\n")
    assert load_config(config, {"users": 3}).users.size == 3
    config.write_text("users: 5\n")
    with pytest.raises(ConfigError, match=r"c.yaml: field 'users': expected a mapping"):
        load_config(config, {"users": 3})


def _error(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return result.output


def test_unknown_component_is_named(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("crss: [{name: kbrd}]\n")
    out = _error(["run", str(config), "--out", str(tmp_path / "r")])
    assert f"{config}: crss[0]: unknown crs 'kbrd'" in out and "popular" in out


def test_a_bad_metric_fails_before_any_dialogue_is_held(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("users: {size: 2}\nmetrics: [{name: turns}, {name: recall, args: {cutoff: 5}}]\n")
    out = _error(["run", str(config), "--out", str(tmp_path / "r")])
    assert f"{config}: metrics[1].args.cutoff: unknown argument" in out
    assert not (tmp_path / "r").exists()


def test_a_bad_option_value_is_blamed_on_the_option_not_the_file(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("seed: 3\n")
    assert "--users: field 'users.size'" in _error(["run", str(config), "--users", "0"])
    config.write_bytes(b"seed: \xff\n")
    assert f"{config}: not readable as YAML/JSON" in _error(["run", str(config)])
    assert f"{tmp_path}: is a folder; expected an experiment config" in _error(["run", str(tmp_path)])


def test_unknown_argument_and_field_are_named(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("simulators: [{name: abus, args: {patiense: 2}}]\n")
    assert "simulators[0].args.patiense: unknown argument" in _error(
        ["run", str(config), "--out", str(tmp_path)]
    )
    config.write_text("max_turn: 3\n")
    assert "field 'max_turn'" in _error(["run", str(config)])


def test_missing_files_are_named(tmp_path: Path) -> None:
    assert "nope.yaml: file not found" in _error(["run", str(tmp_path / "nope.yaml")])
    assert "no manifest.json" in _error(["evaluate", str(tmp_path)])
    for broken in ("[]", '{"config": []}', "{"):
        (tmp_path / "manifest.json").write_text(broken)
        assert f"{tmp_path / 'manifest.json'}: " in _error(["evaluate", str(tmp_path)])


def test_validate_lists_problems_and_fails(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b", "termination": {"reason": "bored"}}\nnot json\n')
    result = runner.invoke(app, ["validate", "file", str(path)])
    assert result.exit_code == 1
    assert "record 2, field 'termination.reason'" in result.output
    assert "record 3" in result.output
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "1", "title": "Heat"}\n{"id": "2", "year": 1999}\n')
    result = runner.invoke(app, ["validate", "file", str(items), "--kind", "items"])
    assert result.exit_code == 1 and "record 2, field 'title'" in result.output


def test_schema_exports_json_schema(tmp_path: Path) -> None:
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.output)
    assert "utterances" in schema["properties"]
    runner.invoke(app, ["schema", "--kind", "config", "-o", str(tmp_path / "c.json")])
    assert "max_turns" in json.loads((tmp_path / "c.json").read_text())["properties"]


def test_run_then_evaluate_reproduces_the_summary(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = runner.invoke(app, ["run", "--out", str(run_dir), "--users", "10", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert not any(s.pop("failed") for s in summary)  # `crsim run` says which pairings it did not test
    assert {s["crs_id"] for s in summary} == {"popular", "retrieval"}
    assert all(s["n_dialogues"] == 10 for s in summary)
    for name in ("manifest.json", "dialogues.jsonl", "scores.jsonl", "summary.json"):
        assert (run_dir / name).exists()
    again = runner.invoke(app, ["evaluate", str(run_dir), "--json"])
    assert again.exit_code == 0
    scored = json.loads(again.output)
    # evaluate adds the simulator-attributed issues of each pairing beside its metrics
    issues = [s.pop("simulator_issues") for s in scored]
    assert scored == summary
    assert all(
        set(i) == {"missed_recommendation", "restated_constraint", "asked_stated_slot"} for i in issues
    )


@pytest.mark.slow
def test_errors_have_no_traceback_unless_debug(tmp_path: Path) -> None:
    base = [sys.executable, "-m", "crsim"]
    plain = subprocess.run([*base, "run", str(tmp_path / "missing.yaml")], capture_output=True, text=True)
    assert plain.returncode == 2
    assert plain.stderr.strip().count("\n") == 0 and "Traceback" not in plain.stderr
    debug = subprocess.run(
        [*base, "--debug", "run", str(tmp_path / "missing.yaml")], capture_output=True, text=True
    )
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_brackets_in_paths_are_text_not_markup(tmp_path: Path) -> None:
    missing = tmp_path / "[red]exp.yaml"
    assert f"{missing}: file not found" in _error(["run", str(missing)])
    folder = tmp_path / "[bold]runs"
    folder.mkdir()
    path = folder / "d.jsonl"
    path.write_text('{"id": "a"}\n')
    result = runner.invoke(app, ["validate", "file", str(path)])
    assert result.exit_code == 0 and f"{path}: 1 dialogues valid" in result.output
    path.write_text('{"id": "a", "termination": {"reason": "bored"}}\n')
    result = runner.invoke(app, ["validate", "file", str(path)])
    assert result.exit_code == 1 and f"{path}, record 1, field 'termination.reason'" in result.output
