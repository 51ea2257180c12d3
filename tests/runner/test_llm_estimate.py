"""An LLM run says how long it will take: calls planned (dialogues × max_turns × each participant's
calls per turn) times the seconds per call measured over its first fresh calls, once, on stderr."""

from __future__ import annotations

import threading

from crsim.llm.usage import Tally
from crsim.runner.build import build_experiment
from crsim.runner.config import ExperimentConfig
from crsim.runner.estimate import FIRST_CALLS, estimate_line, llm_duration_estimate, planned_llm_calls
from crsim.runner.progress import PhaseMeter

CONFIG = {
    "users": {"size": 2},
    "simulators": ["llm_single", "llm_dual"],
    "crss": ["llm", "popular"],
    "max_turns": 3,
    "llm": {"default": {"provider": "scripted", "replies": ["Hi [END]"]}},
    "metrics": ["turns"],
}


def test_planned_calls_are_turns_times_each_participants_calls_per_turn() -> None:
    experiment = build_experiment(ExperimentConfig.model_validate(CONFIG))
    assert len(experiment.tasks) == 8
    # per user and turn: llm×single 1+1, llm×dual 1+2, popular×single 0+1, popular×dual 0+2
    assert planned_llm_calls(experiment) == 2 * 3 * (2 + 3 + 1 + 2)
    # the first four tasks (the llm CRS's) are held already: only the popular CRS's remain
    assert planned_llm_calls(experiment, held=4) == 2 * 3 * (1 + 2)


def test_a_run_without_models_plans_no_calls() -> None:
    experiment = build_experiment(ExperimentConfig.model_validate({"users": {"size": 2}}))
    assert planned_llm_calls(experiment) == 0


def test_the_estimate_multiplies_calls_left_by_the_measured_seconds_per_call() -> None:
    line = estimate_line(planned=60, fresh=4, done=4, elapsed=44.0)
    assert "about 60 model calls planned" in line and "11.0 s per call" in line
    assert "about 11 min in all" in line  # 44 s so far + 56 calls × 11 s = 660 s


def test_the_estimate_is_said_once_after_the_first_fresh_calls() -> None:
    meter = PhaseMeter("dialogues", 8, Tally())
    said: list[str] = []
    spoke = threading.Event()

    def write(line: str) -> None:
        said.append(line)
        spoke.set()

    with llm_duration_estimate(meter, 48, write, poll=0.01):
        meter.tally.calls = meter.tally.cached = FIRST_CALLS  # cached answers measure nothing
        assert not spoke.wait(0.2)
        meter.tally.calls += FIRST_CALLS
        assert spoke.wait(10)
        meter.tally.calls += 10
        assert not threading.Event().wait(0.1) and len(said) == 1
    assert said[0].startswith("LLM run: about 48 model calls planned")


def test_nothing_is_said_when_no_call_is_planned() -> None:
    meter = PhaseMeter("dialogues", 8, Tally())
    said: list[str] = []
    with llm_duration_estimate(meter, 0, said.append, poll=0.01):
        meter.tally.calls = 100
        threading.Event().wait(0.1)
    assert said == []
