"""Runs of scripted users against an HTTP CRS through the real batch layer (`run_batch`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from crsim.core.components import BuildContext
from crsim.core.plugins import Params
from crsim.core.seeding import derive_seed
from crsim.crs.base import CRSReply
from crsim.crs.http.generic import GenericHTTPCRS, GenericParams
from crsim.llm.client import LLMHub
from crsim.model.dialogue import Dialogue
from crsim.model.domain import Domain
from crsim.model.io import iter_dialogues
from crsim.model.user import SimulatedUser
from crsim.runner.batch import BatchResult, run_batch
from crsim.runner.build import DialogueTask, Experiment
from crsim.runner.config import ExperimentConfig
from crsim.sim.base import UserTurn


class ScriptedUser:
    """Asks for movies and never ends the dialogue itself, so only the CRS or the budget can."""

    Params = Params

    def __init__(self) -> None:
        self.turn = 0

    async def start(self, user: SimulatedUser, greeting: CRSReply | None = None) -> UserTurn:
        self.turn = 1
        return UserTurn("I would like to watch a science fiction movie.")

    async def respond(self, reply: CRSReply) -> UserTurn:
        self.turn += 1
        return UserTurn(f"Something else, please ({self.turn}).")


def http_experiment(
    domain: Domain, base_url: str, *, dialogues: int = 50, max_turns: int = 6, **http_args: Any
) -> Experiment:
    """`dialogues` scripted users talking to the generic-protocol CRS at `base_url`."""
    args = {"base_url": base_url, **http_args}
    spec = {"name": "generic_http", "id": "remote", "args": args}
    config = ExperimentConfig.model_validate(
        {
            "name": "faults",
            "users": {"size": dialogues},
            "crss": [spec],
            "max_turns": max_turns,
            "concurrency": 10,
        }
    )
    params = GenericParams.model_validate(args)
    users = [SimulatedUser(id=f"u{i:03d}") for i in range(dialogues)]
    tasks = [
        DialogueTask(i, f"remote/scripted/{u.id}", "remote", "scripted", u, derive_seed(config.seed, u.id))
        for i, u in enumerate(users)
    ]
    components = {"crss": [{"id": "remote", "name": "generic_http", "args": params.model_dump(mode="json")}]}
    return Experiment(
        config=config,
        domain=domain,
        users=users,
        crss={"remote": GenericHTTPCRS(params, BuildContext(domain))},
        simulator_factories={"scripted": lambda _seed: ScriptedUser()},  # type: ignore[dict-item]
        tasks=tasks,
        components=components,
        llms=LLMHub(config.llm),
    )


async def run_experiment(experiment: Experiment, run_dir: Path) -> tuple[BatchResult, list[Dialogue]]:
    result = await run_batch(experiment, run_dir)
    return result, list(iter_dialogues(run_dir / "dialogues.jsonl"))


def error_kinds(dialogues: Iterable[Dialogue]) -> Counter[str]:
    """Failed dialogues counted by error type (the adapter's error class names the kind)."""
    return Counter(
        d.termination.error.type
        for d in dialogues
        if d.termination is not None and d.termination.error is not None
    )
