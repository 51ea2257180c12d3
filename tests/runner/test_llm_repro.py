"""The reproducibility statement of the README for LLM runs (issue 20 item 8): on the local model,
with `max_concurrency: 1` and `options: {cache_prompt: false}`, two fresh runs with one seed (no
response cache shared, dialogues held concurrently) write the same records, timing aside."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from crsim.runner.batch import run_batch
from crsim.runner.build import build_experiment
from crsim.runner.config import ExperimentConfig
from support import needs_local_model, records_without_timing

#: The settings the README names for fresh runs that repeat exactly on the local model.
REPEATABLE = {"provider": "local", "max_concurrency": 1, "options": {"cache_prompt": False}}


def _fresh_run(out: Path) -> int:
    """Hold the experiment into `out` with its own, empty response cache; the provider calls made."""
    config: dict[str, Any] = {
        "seed": 11,
        "users": {"size": 3},
        "simulators": [{"name": "llm_single", "args": {"max_tokens": 24, "max_history_turns": 2}}],
        "crss": [{"name": "popular"}],
        "max_turns": 2,
        "concurrency": 2,  # dialogues in flight together: their calls interleave
        "llm": {"default": {**REPEATABLE, "temperature": 0.9, "max_tokens": 48, "context_size": 2048}},
        "out": str(out),
    }
    experiment = build_experiment(ExperimentConfig.model_validate(config))
    asyncio.run(run_batch(experiment, out))
    return sum(llm.calls for llm in experiment.llms.roles.values())


@needs_local_model
@pytest.mark.slow
def test_two_fresh_runs_on_the_local_model_write_the_same_records(tmp_path: Path) -> None:
    calls_a = _fresh_run(tmp_path / "a")
    calls_b = _fresh_run(tmp_path / "b")
    assert calls_a > 0 and calls_a == calls_b  # every answer was generated, none came from a cache
    assert records_without_timing(tmp_path / "a" / "dialogues.jsonl") == records_without_timing(
        tmp_path / "b" / "dialogues.jsonl"
    )
