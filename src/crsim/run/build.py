"""Turn a validated experiment config into objects: the domain, users, components and dialogue tasks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from crsim.data.domains import domain_named
from crsim.data.users import build_users
from crsim.errors import ConfigError
from crsim.eval.evaluate import build_metrics
from crsim.llm.client import LLMHub
from crsim.model.domain import Domain
from crsim.model.user import SimulatedUser
from crsim.registry import ComponentSpec, crs_registry, llm_roles_of, simulator_registry
from crsim.run.config import ExperimentConfig
from crsim.seeding import derive_seed
from crsim.sim.base import UserSimulator


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
    crss: dict[str, Any]
    simulator_factories: dict[str, Callable[[int], UserSimulator]]
    tasks: list[DialogueTask]
    components: dict[str, list[dict[str, Any]]]
    llms: LLMHub


def _labels(specs: list[ComponentSpec], field: str) -> list[str]:
    labels = [s.label for s in specs]
    for label in labels:
        if labels.count(label) > 1:
            raise ConfigError(f"{field}: {label!r} appears twice; give each an `id` to tell them apart")
    return labels


def build_domain(config: ExperimentConfig) -> Domain:
    return domain_named(config.domain)


def build_experiment(config: ExperimentConfig) -> Experiment:
    """Validate every component's arguments and create the CRSs, simulator factories and tasks.

    Metrics are built here too, only to check them: a bad metric must fail before the dialogues
    are held, not after. So are the LLM providers of the roles the components use (a missing
    model file fails here); API keys and endpoints are only tried by the dialogues themselves.
    """
    llms = LLMHub(config.llm)
    build_metrics(config.metrics, llms=llms)
    domain = build_domain(config)
    users = build_users(config.users, domain, seed=config.seed)
    components: dict[str, list[dict[str, Any]]] = {"crss": [], "simulators": []}

    crss: dict[str, Any] = {}
    for i, (spec, label) in enumerate(zip(config.crss, _labels(config.crss, "crss"), strict=True)):
        where = f"crss[{i}]"
        params = crs_registry.params(spec.name, spec.args, where=where)
        cls = crs_registry.get(spec.name)
        extra = _llm_arguments(cls, params, llms, where)
        crs_registry.check_construction(
            spec.name, where, _call("params, domain", extra), params, domain, **extra
        )
        crss[label] = cls(params, domain, **extra)
        components["crss"].append({"id": label, "name": spec.name, "args": params.model_dump(mode="json")})

    factories: dict[str, Callable[[int], UserSimulator]] = {}
    for i, (spec, label) in enumerate(
        zip(config.simulators, _labels(config.simulators, "simulators"), strict=True)
    ):
        where = f"simulators[{i}]"
        params = simulator_registry.params(spec.name, spec.args, where=where)
        cls = simulator_registry.get(spec.name)
        extra = _llm_arguments(cls, params, llms, where)
        simulator_registry.check_construction(
            spec.name, where, _call("params, domain, seed", extra), params, domain, config.seed, **extra
        )
        factories[label] = _simulator_factory(cls, params, domain, extra)
        components["simulators"].append(
            {"id": label, "name": spec.name, "args": params.model_dump(mode="json")}
        )

    combinations = [
        (c, s, u, t) for c in crss for s in factories for u in users for t in range(config.trials)
    ]
    tasks = [
        DialogueTask(
            index=index,
            id=f"{crs_label}/{sim_label}/{user.id}" + (f"#{trial}" if config.trials > 1 else ""),
            crs_label=crs_label,
            simulator_label=sim_label,
            user=user,
            seed=derive_seed(config.seed, crs_label, sim_label, user.id, *([trial] if trial else [])),
            trial=trial,
        )
        for index, (crs_label, sim_label, user, trial) in enumerate(combinations[: config.limit])
    ]
    return Experiment(config, domain, users, crss, factories, tasks, components, llms)


def _call(positional: str, extra: dict[str, Any]) -> str:
    """How the build layer calls a component's class, for the error of a wrong signature."""
    return f"Class({', '.join([positional, *(f'{key}=...' for key in extra)])})"


def _llm_arguments(cls: Any, params: Any, llms: LLMHub, where: str) -> dict[str, Any]:
    """`llms=` for components that use language models, after building the providers of their roles."""
    roles = llm_roles_of(cls, params, where)
    if roles is None:
        return {}
    try:
        llms.check(roles)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return {"llms": llms}


def _simulator_factory(
    cls: Any, params: Any, domain: Domain, extra: dict[str, Any]
) -> Callable[[int], UserSimulator]:
    def make(seed: int) -> UserSimulator:
        simulator: UserSimulator = cls(params, domain, seed, **extra)
        return simulator

    return make
