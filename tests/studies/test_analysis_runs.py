"""`crsim.studies.language.runs`: measuring whole runs from Python, without the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crsim.core.errors import CrsimError
from crsim.studies.language.diversity import diversity
from crsim.studies.language.runs import MeasureOptions, Method, measure_runs, thresholds, write_utterances
from test_analysis_cli import write_run
from test_analysis_stats import length_population


def options(**changes: object) -> MeasureOptions:
    base: dict[str, object] = {
        "method": Method.RULES,
        "judge": None,
        "cache": None,
        "items": None,
        "concurrency": 2,
        "thresholds": thresholds(20, 40, 2),
    }
    return MeasureOptions(**{**base, **changes})  # type: ignore[arg-type]


def test_measure_runs_groups_every_user_utterance(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run1", length_population((4, 15), (45, 70), per_level=6))
    measured = measure_runs([run], options())
    assert measured.runs == ["run1"] and len(measured.dialogues) == 12
    assert sum(len(d.utterances) for d in measured.dialogues) == 36
    report = diversity(measured.dialogues, method="rules", thresholds=measured.thresholds, runs=measured.runs)
    assert report.groups[0].distributions["length"].counts == {"short": 18, "medium": 0, "long": 18}
    out = tmp_path / "utterances.jsonl"
    write_utterances(measured, out)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 36 and {row["run"] for row in rows} == {"run1"}


def test_options_that_do_not_fit_the_method_are_refused(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run1", length_population((4, 15), (45, 70), per_level=1))
    with pytest.raises(CrsimError, match="--judge and --cache apply to --measure llm only"):
        measure_runs([run], options(cache=tmp_path / "c.sqlite"))
    with pytest.raises(CrsimError, match="expected a run folder"):
        measure_runs([tmp_path / "missing"], options())
