"""First steps: `crsim init` writes a commented starter config that runs as it is, and `crsim run`
ends with what its metrics mean and the commands that come next."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from crsim.cli import app
from crsim.runner.config import ExperimentConfig, load_config

runner = CliRunner()


@pytest.mark.parametrize("domain", ["movies", "restaurants"])
def test_init_writes_a_commented_config_that_runs(domain: str, tmp_path: Path) -> None:
    config = tmp_path / "study.yaml"
    made = runner.invoke(app, ["init", "--domain", domain, "-o", str(config)])
    assert made.exit_code == 0, made.output
    text = config.read_text(encoding="utf-8")
    assert sum(line.lstrip().startswith("#") for line in text.splitlines()) >= 5
    assert yaml.safe_load(text)["domain"] == domain
    loaded = load_config(config, {})
    assert loaded.metrics == ExperimentConfig().metrics  # the defaults, written out to edit
    run_dir = tmp_path / "run"
    ran = runner.invoke(app, ["run", str(config), "--users", "3", "-o", str(run_dir), "--json"])
    assert ran.exit_code == 0, ran.output
    groups = json.loads(ran.output)
    assert {g["crs_id"] for g in groups} == {"popular", "retrieval"}
    assert all(g["n_dialogues"] == 3 for g in groups)


def test_init_keeps_an_existing_file_and_checks_the_domain(tmp_path: Path) -> None:
    config = tmp_path / "study.yaml"
    config.write_text("name: mine\n", encoding="utf-8")
    kept = runner.invoke(app, ["init", "-o", str(config)])
    assert kept.exit_code == 2 and "exists already" in kept.output
    assert config.read_text(encoding="utf-8") == "name: mine\n"
    assert runner.invoke(app, ["init", "-o", str(config), "--force"]).exit_code == 0
    unknown = runner.invoke(app, ["init", "--domain", "nowhere", "-o", str(tmp_path / "x.yaml")])
    assert unknown.exit_code == 2 and "unknown domain 'nowhere'" in unknown.output


def test_run_ends_with_a_legend_of_its_metrics_and_the_next_commands(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    ran = runner.invoke(app, ["run", "--users", "3", "-o", str(run_dir)], env={"COLUMNS": "200"})
    assert ran.exit_code == 0, ran.output
    tail = ran.output[ran.output.index("metrics (docs/metrics.md):") :].splitlines()
    shown = ["Success", "SRRR", "RDL(turns)", "Turns", "Recall@(t,10)", "PC@10"]
    shown += ["Requests answered", "Task success"]
    legend = {line.split(":")[0].strip(): line for line in tail[1 : 1 + len(shown)]}
    assert list(legend) == shown
    assert all("higher is better" in legend[m] for m in shown if m != "Turns")
    assert "lower is better" in legend["Turns"]
    after = tail[1 + len(shown) :]
    assert after[0] == "next:"
    assert after[1].split()[:3] == ["crsim", "compare", str(run_dir)]
    assert after[2].split()[:5] == ["crsim", "report", str(run_dir), "-o", "report.html"]
