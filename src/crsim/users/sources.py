"""Simulated users for an experiment, from the population source its config names.

A population source is a function `(config, domain, seed) -> list[SimulatedUser]` declared as a
`crsim.population_source` entry point (the built-ins below, in pyproject.toml); `users.source` in a
config names one, and only its module is imported. A config that names none gets the domain's
default (`default_source`): rating histories when the domain has a ratings file, goals otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from crsim.core.errors import ConfigError
from crsim.model.domain import Domain, SlotKind
from crsim.model.user import SimulatedUser
from crsim.users.population import PopulationConfig, build_population, source_catalogue

#: What a population source is: the config's `users` section, the domain and the run seed in.
PopulationSource = Callable[[PopulationConfig, Domain, int], list[SimulatedUser]]

#: Sources whose users come from the domain itself: its ratings file, or goals from its items.
DOMAIN_SOURCES = ("movielens", "ratings", "goals")

__all__ = [
    "DOMAIN_SOURCES",
    "PopulationSource",
    "build_users",
    "default_source",
    "goal_users",
    "iard_users",
    "pepper_users",
    "rating_users",
    "redial_users",
    "slots_for_domain",
]


def default_source(domain: Domain) -> Literal["movielens", "goals"]:
    """The population source of a config that names none: rating histories when the domain has a
    ratings file (`movielens`, the name the movie domain's users have always had), goals otherwise."""
    return "movielens" if domain.ratings is not None else "goals"


def build_users(config: PopulationConfig, domain: Domain, seed: int) -> list[SimulatedUser]:
    """The users of the source `config.source` names (the domain's rating histories, goals sampled
    from its items, ReDial or IARD seekers' dialogue feedback, PEPPER users from MovieLens or a
    reviews table, or a plug-in's), on `domain`."""
    name = config.source if "source" in config.model_fields_set else default_source(domain)
    source: PopulationSource = source_catalogue.get(name)
    return source(config, domain, seed)


def rating_users(config: PopulationConfig, domain: Domain, seed: int) -> list[SimulatedUser]:
    """`source: movielens` or `ratings`: users with rating histories from the domain's ratings file."""
    if config.file is not None:
        raise ConfigError(
            f"users.file: not supported for source {config.source!r} (the domain's ratings file is used)"
        )
    if domain.ratings is None:
        raise ConfigError(
            f"users.source: domain {domain.name!r} has no ratings file; use source 'goals' "
            "(goals sampled from the items) or add `ratings:` to the domain file"
        )
    from crsim.domains import read_ratings

    ratings = read_ratings(domain.ratings)
    config = slots_for_domain(config, domain)
    return build_population(
        config, domain, ratings, seed, label=domain.ratings.label, source=domain.ratings.name
    )


def goal_users(config: PopulationConfig, domain: Domain, seed: int) -> list[SimulatedUser]:
    """`source: goals`: goals sampled from the domain's items (constraints some item satisfies)."""
    from crsim.users.goals import build_goal_population

    return build_goal_population(config, domain, seed)


def pepper_users(config: PopulationConfig, domain: Domain, seed: int) -> list[SimulatedUser]:
    """`source: pepper` (the domain's ratings file) or `reviews`: PEPPER users (all top-rated items as
    targets, the rest seen)."""
    from crsim.users.pepper import build_pepper_population

    return build_pepper_population(slots_for_domain(config, domain), domain, seed)


def iard_users(config: PopulationConfig, domain: Domain, seed: int) -> list[SimulatedUser]:
    """`source: iard`: IARD seekers' accepted recommendations and feedback (`users.file` or shipped)."""
    from crsim.users.iard import build_iard_population

    return build_iard_population(config, domain, seed, source=config.file)


def redial_users(config: PopulationConfig, domain: Domain, seed: int) -> list[SimulatedUser]:
    """`source: redial`: ReDial seekers' movie feedback (`users.file` or shipped)."""
    from crsim.users.redial import build_redial_population

    return build_redial_population(config, domain, seed, source=config.file)


def slots_for_domain(config: PopulationConfig, domain: Domain) -> PopulationConfig:
    """`config` with its constraint and preference slots defaulted to the domain's when the config left
    them unset and the defaults (the movie slots) are not all slots of this domain."""
    update = {}
    matched = [
        s.name
        for s in domain.informable
        if s.kind in (SlotKind.CATEGORICAL, SlotKind.MULTI, SlotKind.ORDINAL)
    ]
    for field in ("constraint_slots", "preference_slots"):
        if field not in config.model_fields_set and not set(getattr(config, field)) <= set(
            domain.informable_slots
        ):
            update[field] = matched
    return config.model_copy(update=update) if update else config
