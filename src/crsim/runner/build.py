"""Turn a validated experiment config into objects: the domain, users, components and dialogue tasks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from crsim.core.components import BuildContext, construct, llm_roles_of, prepare
from crsim.core.errors import ConfigError
from crsim.core.plugins import ComponentSpec
from crsim.core.seeding import derive_seed
from crsim.crs.base import CRS, crs_registry
from crsim.domains import domain_named
from crsim.domains.disk_cache import save_domain
from crsim.eval.metrics.base import metric_registry
from crsim.eval.scores import build_metrics
from crsim.llm.client import LLMHub
from crsim.model.domain import Domain
from crsim.model.user import SimulatedUser
from crsim.runner.config import ExperimentConfig
from crsim.sim.base import UserSimulator, simulator_registry
from crsim.users.sources import build_users


@dataclass(frozen=True)
class DialogueTask:
    """One dialogue to hold: who talks to whom, under which id and seed."""

    index: int
    id: str
    crs_label: str
    simulator_label: str
    user: SimulatedUser
    seed: int
    trial: int = 0


@dataclass(frozen=True)
class Experiment:
    config: ExperimentConfig
    domain: Domain
    users: list[SimulatedUser]
    crss: dict[str, CRS]
    simulator_factories: dict[str, Callable[[int], UserSimulator]]
    tasks: list[DialogueTask]
    components: dict[str, list[dict[str, Any]]]
    llms: LLMHub
    #: Model role -> the components that call it (`crss[0] 'llm'`), for the preflight's messages.
    llm_users: dict[str, list[str]] = field(default_factory=dict)


def _labels(specs: list[ComponentSpec], field: str) -> list[str]:
    labels = [s.label for s in specs]
    for label in labels:
        if labels.count(label) > 1:
            raise ConfigError(f"{field}: {label!r} appears twice; give each an `id` to tell them apart")
    return labels


def build_domain(config: ExperimentConfig) -> Domain:
    return domain_named(config.domain)


def build_experiment(config: ExperimentConfig, run_folder: Path | None = None) -> Experiment:
    """Validate every component's arguments and create the CRSs, simulator factories and tasks.

    Every component is built as `Class(params, ctx)` from one `BuildContext` (the domain, the LLM
    hub, the run seed, the run folder); a simulator per dialogue, with the dialogue's seed. Its
    signature is checked here, so a plug-in that cannot be built so is a config error naming the
    field before any dialogue. Metrics are built here too, only to check them: a bad metric must
    fail before the dialogues are held, not after. So are the LLM providers of the roles the
    components use (a missing model file fails here); API keys and endpoints are only tried by the
    dialogues themselves.
    """
    llms = LLMHub(config.llm)
    build_metrics(config.metrics, BuildContext(llms=llms, seed=config.seed, run_folder=run_folder))
    llm_users: dict[str, list[str]] = {}
    for i, spec in enumerate(config.metrics):
        where = f"metrics[{i}]"
        metric_params = metric_registry.params(spec.name, spec.args, where=where)
        roles = llm_roles_of(metric_registry.get(spec.name), metric_params)
        _uses(llm_users, roles, f"{where} {spec.name!r}")
    domain = build_domain(config)
    ctx = BuildContext(domain=domain, llms=llms, seed=config.seed, run_folder=run_folder)
    users = build_users(config.users, domain, seed=config.seed)
    components: dict[str, list[dict[str, Any]]] = {"crss": [], "simulators": []}
    crss, seed_labels = _build_crss(config, ctx, llm_users, components["crss"])
    factories = _build_simulators(config, ctx, llm_users, components["simulators"])
    save_domain(domain)  # a large catalogue's built parts, for the next run (crsim.domains.disk_cache)
    tasks = _tasks(config, list(crss), list(factories), users, seed_labels)
    return Experiment(config, domain, users, crss, factories, tasks, components, llms, llm_users)


def _uses(llm_users: dict[str, list[str]], roles: list[str], who: str) -> None:
    """Note that `who` calls the models of `roles`."""
    for role in roles:
        llm_users.setdefault(role, []).append(who)


def _build_crss(
    config: ExperimentConfig,
    ctx: BuildContext,
    llm_users: dict[str, list[str]],
    components: list[dict[str, Any]],
) -> tuple[dict[str, CRS], dict[str, str]]:
    """The CRSs by label, and the label whose seeds each one's dialogues take (a degraded twin's
    dialogues take its original's seeds); each CRS's validated arguments go to `components`."""
    crss: dict[str, CRS] = {}
    seed_labels: dict[str, str] = {}
    for i, (spec, label) in enumerate(zip(config.crss, _labels(config.crss, "crss"), strict=True)):
        cls, params = prepare(crs_registry, spec, ctx, f"crss[{i}]")
        _uses(llm_users, llm_roles_of(cls, params), f"crss[{i}] {label!r}")
        crss[label] = construct(cls, params, ctx)
        seed_labels[label] = getattr(crss[label], "seed_label", None) or label
        components.append({"id": label, "name": spec.name, "args": params.model_dump(mode="json")})
    return crss, seed_labels


def _build_simulators(
    config: ExperimentConfig,
    ctx: BuildContext,
    llm_users: dict[str, list[str]],
    components: list[dict[str, Any]],
) -> dict[str, Callable[[int], UserSimulator]]:
    """A factory per simulator label (a simulator per dialogue, with the dialogue's seed); each
    simulator's validated arguments go to `components`."""
    factories: dict[str, Callable[[int], UserSimulator]] = {}
    for i, (spec, label) in enumerate(
        zip(config.simulators, _labels(config.simulators, "simulators"), strict=True)
    ):
        sim_cls, params = prepare(simulator_registry, spec, ctx, f"simulators[{i}]")
        _uses(llm_users, llm_roles_of(sim_cls, params), f"simulators[{i}] {label!r}")
        factories[label] = _simulator_factory(sim_cls, params, ctx)
        components.append({"id": label, "name": spec.name, "args": params.model_dump(mode="json")})
    return factories


def _tasks(
    config: ExperimentConfig,
    crs_labels: list[str],
    simulator_labels: list[str],
    users: list[SimulatedUser],
    seed_labels: dict[str, str],
) -> list[DialogueTask]:
    """One task per CRS, simulator, user and trial (up to `limit`), each with its derived seed."""
    trials = range(config.trials)
    combinations = [(c, s, u, t) for c in crs_labels for s in simulator_labels for u in users for t in trials]
    return [
        DialogueTask(
            index=index,
            id=f"{crs_label}/{sim_label}/{user.id}" + (f"#{trial}" if config.trials > 1 else ""),
            crs_label=crs_label,
            simulator_label=sim_label,
            user=user,
            seed=derive_seed(
                config.seed, seed_labels[crs_label], sim_label, user.id, *([trial] if trial else [])
            ),
            trial=trial,
        )
        for index, (crs_label, sim_label, user, trial) in enumerate(combinations[: config.limit])
    ]


def _simulator_factory(
    cls: type[UserSimulator], params: BaseModel, ctx: BuildContext
) -> Callable[[int], UserSimulator]:
    """Builds the simulator of one dialogue: the run's context with the dialogue's seed."""

    def make(seed: int) -> UserSimulator:
        return construct(cls, params, ctx.for_dialogue(seed))

    return make
