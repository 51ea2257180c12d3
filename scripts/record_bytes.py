"""Print the records of scripted-model runs of the simulators that write typed annotations, for a
before/after byte comparison (timing fields removed).

    PYTHONPATH=<tree>/src:tests:tests/sim python scripts/record_bytes.py > out.jsonl

Run it with two source trees and compare the outputs with `cmp`: a refactoring that must not
change records (issue 18) leaves them byte-identical. It covers recusersim (ratings, profile notes,
persona), pepper (general preferences, item interface, reflections) and target_biased (target split
in the metadata); the quickstart (`crsim run`) covers the rule-based simulators and CRSs.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from crsim.model.dialogue import Dialogue
from crsim.model.io import iter_dialogues
from crsim.runner.batch import run_batch
from crsim.runner.build import build_experiment
from crsim.runner.config import ExperimentConfig

#: Wall-clock fields, the only ones allowed to differ between two runs.
WALL_CLOCK = frozenset({"timing", "latency_s"})


def _without_wall_clock(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_wall_clock(v) for k, v in value.items() if k not in WALL_CLOCK}
    if isinstance(value, list):
        return [_without_wall_clock(v) for v in value]
    return value


def _line(dialogue: Dialogue) -> str:
    """The record as written, key order kept, wall-clock fields removed at every depth."""
    return json.dumps(_without_wall_clock(json.loads(dialogue.model_dump_json())), ensure_ascii=False)


def recusersim_run(folder: Path) -> list[Dialogue]:
    """Two users × popular and retrieval with the scripted model of tests/sim/test_recusersim.py."""
    from crsim.llm.providers.scripted import ScriptedProvider
    from test_recusersim import Answers

    answers = Answers(
        ActionSelection=[
            {"reasoning": "more", "actions": ["request_recommendation"]},
            {"reasoning": "done", "actions": ["end_conversation"]},
        ],
    )
    config = ExperimentConfig.model_validate(
        {
            "users": {"size": 2},
            "simulators": [{"name": "recusersim", "args": {"refinements": ["length"]}}],
            "crss": [{"name": "popular"}, {"name": "retrieval"}],
            "max_turns": 4,
            "llm": {"default": {"provider": "scripted", "replies": ["x"]}, "cache": {"mode": "off"}},
            "metrics": [{"name": "turns"}, {"name": "user_ratings"}],
            "out": str(folder),
        }
    )
    experiment = build_experiment(config)
    for llm_role in ("user", "annotator"):
        experiment.llms.role(llm_role).provider = ScriptedProvider(Answers(**{**answers.json}))
    asyncio.run(run_batch(experiment, folder))
    return list(iter_dialogues(folder / "dialogues.jsonl"))


def pepper_dialogues() -> list[Dialogue]:
    """pepper with an item interface and target_biased with a given split (tests/sim/test_pepper.py)."""
    from test_pepper import MOVIES, ListCRS, answers, pepper_user, simulate

    user = pepper_user({MOVIES[0]: 4.5}, [MOVIES[1]])
    crs = ListCRS([[MOVIES[0], MOVIES[2]], [MOVIES[0], MOVIES[2]]])
    pepper = simulate("pepper", user, crs, answers(), turns=3, items_shown=2)
    selected, residual = MOVIES[1], MOVIES[5]
    biased_user = pepper_user(
        {MOVIES[0]: 4.0}, [selected, residual], target_split={"selected": [selected], "residual": [residual]}
    )
    biased = simulate("target_biased", biased_user, ListCRS([[residual, selected]]), answers(), turns=2)
    return [pepper, biased]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        dialogues = recusersim_run(Path(tmp) / "run") + pepper_dialogues()
    for dialogue in dialogues:
        sys.stdout.write(_line(dialogue) + "\n")


if __name__ == "__main__":
    main()
