"""`recusersim` on the real local model (SmolLM2-135M): three short dialogues, structure only.

The tiny model's ratings and replies carry little meaning; what is checked is that every step
runs on a real model with constrained JSON: ratings as numbers or error values with the raw text,
actions, replies, calls counted per kind. Conflict resolution (the longest JSON answer) and the
refinement tools (one more sequential call per turn) are left out to keep the test short; the
scripted tests and `configs/recusersim.yaml` cover them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from crsim.model.dialogue import Role, TerminationReason
from crsim.model.io import iter_dialogues
from crsim.runner.batch import run_batch
from crsim.runner.build import build_experiment
from crsim.runner.config import ExperimentConfig

KINDS = {"rating", "excitation", "action", "response"}


@pytest.mark.slow
def test_three_recusersim_dialogues_on_the_local_model(tmp_path: Path) -> None:
    args = {
        "refinements": [],  # refiners add a sequential call per turn; scripted tests cover them
        "resolve_conflicts": False,  # the slowest call (a long JSON answer); scripted tests cover it
        "max_tokens": 32,
        "json_max_tokens": 64,
        "json_temperature": 0.2,
        "justification_chars": 40,
        "max_history_turns": 1,
        "plot_chars": 60,
        "include_preferences": False,  # shorter prompts
    }
    config = ExperimentConfig.model_validate(
        {
            "users": {"size": 3},
            "simulators": [{"name": "recusersim", "args": args}],
            "crss": [{"name": "popular"}],
            "max_turns": 2,
            "concurrency": 3,
            "llm": {"default": {"provider": "local", "max_concurrency": 3, "temperature": 0.7}},
            "out": str(tmp_path / "run"),
        }
    )
    experiment = build_experiment(config)
    asyncio.run(run_batch(experiment, tmp_path / "run"))
    dialogues = list(iter_dialogues(tmp_path / "run" / "dialogues.jsonl"))
    assert len(dialogues) == 3
    for dialogue in dialogues:
        assert dialogue.termination is not None
        if dialogue.termination.reason == TerminationReason.USER_ERROR:  # a tiny model may fail a choice
            assert dialogue.termination.error and dialogue.termination.error.type == "LLMOutputError"
        notes = dialogue.metadata["recusersim"]
        assert notes["conflict_resolution"] == {} and notes["sampled_profile"]
        persona = dialogue.user_profile.persona if dialogue.user_profile else {}
        assert persona["sentence_length"] in ("short", "medium", "long")
        users = dialogue.by(Role.USER)
        assert users and all(u.text.strip() for u in users)
        opening = users[0].annotations
        assert opening["llm_calls_by_kind"]["response"] == (2 if "role_flip" in opening else 1)  # one redraft
        for utterance in users:
            assert set(utterance.annotations["llm_calls_by_kind"]) <= KINDS
            assert all(c.role in ("user", "annotator") for c in utterance.llm_calls)
        for utterance in users[1:]:
            for rating in utterance.annotations["ratings"].values():
                if isinstance(rating, dict):
                    assert (rating["score"] is None) == ("error" in rating)
                    assert rating["score"] is not None or rating["raw"] is not None
