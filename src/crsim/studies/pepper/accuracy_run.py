"""PEPPER's preference representation accuracy (Table 2) over an experiment config's population.

`preference_accuracy_study` builds the config's domain and PEPPER users, asks the config's `user`
model which of two targets with different ratings each user prefers (given general preferences,
raw feedback or binary likes) and scores the picks against the true ratings; `crsim pepper
pref-accuracy` only parses options and prints the report.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from crsim.core.atomic_files import atomic_output
from crsim.core.errors import ConfigError
from crsim.core.progress import Progress
from crsim.llm.client import LLMHub
from crsim.model import annotations as keys
from crsim.runner.build import build_domain
from crsim.runner.config import ExperimentConfig
from crsim.sim.base import simulator_registry
from crsim.sim.pepper.common import PepperParams
from crsim.studies.pepper.accuracy import AccuracyOptions, AccuracyReport, preference_accuracy

PEPPER_SOURCES = ("pepper", "reviews")


def preference_accuracy_study(
    experiment: ExperimentConfig,
    pairs: int = 5,
    *,
    both_orders: bool = False,
    cache_path: Path | None = None,
    out: Path | None = None,
    progress: Progress | None = None,
) -> AccuracyReport:
    """The study over `experiment`'s users (a PEPPER source) with its `llm` section (role `user`);
    `out`, when given, gets the report as JSON (every choice included); `progress` counts the users
    (an error when an answer of theirs could not be used)."""
    from crsim.users.pepper import pepper_source
    from crsim.users.sources import build_users

    if experiment.users.source not in PEPPER_SOURCES:
        raise ConfigError(
            f"users.source: {experiment.users.source!r}; the study needs a PEPPER source "
            "('pepper' or 'reviews')"
        )
    domain = build_domain(experiment)
    population = build_users(experiment.users, domain, experiment.seed)
    source = pepper_source(experiment.users, domain)
    true = {
        u.id: source.ratings[str(keys.user_persona(keys.SOURCE_USER_ID, u.id, u.profile.persona))]
        for u in population
    }
    hub = LLMHub(experiment.llm, cache_path=cache_path)
    hub.check(["user"])
    options = accuracy_options(experiment, pairs)
    options.both_orders = both_orders
    if progress is not None:
        progress.set_total(len(population))

    async def go() -> AccuracyReport:
        try:
            return await preference_accuracy(hub.role("user"), population, true, domain, options, progress)
        finally:
            await hub.aclose()

    report = asyncio.run(go())
    if out is not None:
        with atomic_output(out) as handle:
            handle.write(report.model_dump_json(indent=1))
    return report


def accuracy_options(experiment: ExperimentConfig, pairs: int) -> AccuracyOptions:
    """The narrative settings of the config's first `pepper` simulator, so that the study judges the
    same general preferences as the dialogues (and finds them in a shared cache)."""
    options = AccuracyOptions(pairs_per_user=pairs, seed=experiment.seed)
    for i, spec in enumerate(experiment.simulators):
        params = simulator_registry.params(spec.name, spec.args, where=f"simulators[{i}]")
        if spec.name == "pepper" and isinstance(params, PepperParams):
            options.narrative_items = params.narrative_items
            options.plot_chars = params.plot_chars
            options.narrative_max_tokens = params.narrative_max_tokens
            break
    return options
