"""Every participant's model calls go through the run's response cache, the `llm` CRS's included
(it takes its model role when it is built, before the run folder is known): a resumed run on the
scripted provider asks the model nothing it asked before."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from crsim.model.run_folder.files import DIALOGUES
from crsim.runner.batch import run_batch
from crsim.runner.build import Experiment, build_experiment
from crsim.runner.config import ExperimentConfig
from support import records_without_timing

ANSWER = json.dumps({"recommend": [1], "message": "Here is something for you."})
CONFIG = {
    "users": {"size": 6},
    "crss": [{"name": "llm", "args": {"reask": False}}],
    "max_turns": 3,
    "llm": {"default": {"provider": "scripted", "replies": [ANSWER]}},
    "metrics": [{"name": "turns"}],
}


def _calls(experiment: Experiment) -> int:
    return sum(llm.calls for llm in experiment.llms.roles.values())


def test_a_resumed_run_with_an_llm_crs_makes_no_new_model_calls(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    config = ExperimentConfig.model_validate(CONFIG)
    first = build_experiment(config, run_folder=run_dir)
    asyncio.run(run_batch(first, run_dir))
    assert _calls(first) > 0
    complete = records_without_timing(run_dir / DIALOGUES)

    lines = (run_dir / DIALOGUES).read_text(encoding="utf-8").splitlines(keepends=True)
    (run_dir / DIALOGUES).write_text("".join(lines[:2]), encoding="utf-8")  # as a killed run leaves it
    again = build_experiment(config, run_folder=run_dir)
    result = asyncio.run(run_batch(again, run_dir, resume=True))
    assert result.ran == 4
    assert _calls(again) == 0  # every answer came from the run's cache
    assert records_without_timing(run_dir / DIALOGUES) == complete
