"""The report's Behaviour section: shown for runs whose simulator, CRS or judge is a language model
(here the scripted provider), with the behaviour tables and their examples; absent for runs of
rule-based components only, whose report stays as it was."""

from __future__ import annotations

import asyncio
import html as html_lib
import re
from pathlib import Path
from typing import Any

import pytest

from crsim.eval.run_scoring import evaluate_path
from crsim.report.html import build_report
from crsim.report.titles import open_run
from crsim.runner.batch import run_batch
from crsim.runner.build import build_experiment
from crsim.runner.config import ExperimentConfig
from report_support import PAYLOADS, poison, small_run

SCRIPTED: dict[str, Any] = {
    "name": "behaviour-report",
    "seed": 7,
    "users": {"size": 2},
    "simulators": [{"name": "llm_single", "args": {"max_tokens": 40}}],
    "crss": [{"name": "retrieval"}],
    "max_turns": 2,
    "llm": {
        "default": {
            "provider": "scripted",
            "model": "check",
            "replies": ["Here are some movies you might like.", "I recommend a comedy to you. Bye. [END]"],
        }
    },
}


def _section(page: str) -> str:
    match = re.search(r'<section id="behaviour">(.*?)</section>', page, re.S)
    assert match is not None
    return match.group(1)


def test_behaviour_section_for_llm_driven_runs(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    asyncio.run(run_batch(build_experiment(ExperimentConfig.model_validate(SCRIPTED)), run_dir))
    evaluate_path(run_dir)
    page = build_report([open_run(run_dir)])
    section = _section(page)
    assert "<h3>Simulators</h3>" in section and "<h3>CRSs</h3>" in section
    flip = re.search(r">role_flip_dialogue</td><td>dialogue</td><td class=\"num\"[^>]*>([^<]*)<", section)
    assert flip is not None
    # both scripted users open in the recommender's voice; the simulator's draft check catches it
    assert flip.group(1).startswith("0/2 0% [")
    row = re.search(
        r">all_requests_asked</td><td>dialogue</td><td class=\"num\" title=\"([^\"]*)\">([^<]*)<", section
    )
    assert row is not None
    examples, cell = html_lib.unescape(row.group(1)), row.group(2)
    assert cell.startswith("0/2 0% [")  # the dialogue ends at the first recommendation: nothing asked
    assert "retrieval/llm_single/" in examples and "not asked: year" in examples
    assert 'href="#behaviour"' in page


def test_behaviour_section_escapes_recorded_text(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    asyncio.run(run_batch(build_experiment(ExperimentConfig.model_validate(SCRIPTED)), run_dir))
    poison(run_dir)  # the CRS id (a column of the section) and every text hold script
    section = _section(build_report([open_run(run_dir)]))
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in section
    assert not any(payload in section for payload in PAYLOADS)


def test_no_behaviour_section_for_rule_based_runs(tmp_path: Path) -> None:
    run_dir = small_run(tmp_path / "run", users=2)
    page = build_report([open_run(run_dir)])
    assert 'id="behaviour"' not in page and 'href="#behaviour"' not in page


def test_behaviour_of_a_run_over_the_sample_size_is_counted_on_a_seeded_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import crsim.report.behaviour as sections

    run_dir = tmp_path / "run"
    asyncio.run(run_batch(build_experiment(ExperimentConfig.model_validate(SCRIPTED)), run_dir))
    evaluate_path(run_dir)
    monkeypatch.setattr(sections, "BEHAVIOUR_SAMPLE", 1)  # the run holds 2 dialogues
    section = _section(build_report([open_run(run_dir)]))
    assert "counted on 1 of 2 dialogues, sampled with seed 0" in section
    flip = re.search(r">role_flip_dialogue</td><td>dialogue</td><td class=\"num\"[^>]*>([^<]*)<", section)
    assert flip is not None and flip.group(1).startswith("0/1 0% [")
    monkeypatch.setattr(sections, "BEHAVIOUR_SAMPLE", 2)  # the whole run: no note
    assert "counted on" not in _section(build_report([open_run(run_dir)]))
