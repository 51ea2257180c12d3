"""Simulated users for an experiment, from the population source its config names."""

from __future__ import annotations

from typing import Literal

from crsim.data.population import PopulationConfig, build_population
from crsim.errors import ConfigError
from crsim.model.domain import Domain, SlotKind
from crsim.model.user import SimulatedUser

#: Sources whose users come from the domain itself: its ratings file, or goals from its items.
DOMAIN_SOURCES = ("movielens", "ratings", "goals")


def default_source(domain: Domain) -> Literal["movielens", "goals"]:
    """The population source of a config that names none: rating histories when the domain has a
    ratings file (`movielens`, the name the movie domain's users have always had), goals otherwise."""
    return "movielens" if domain.ratings is not None else "goals"


def build_users(config: PopulationConfig, domain: Domain, seed: int) -> list[SimulatedUser]:
    """Users of the domain's ratings file, goals sampled from its items, ReDial or IARD seekers
    (dialogue feedback), or PEPPER users (MovieLens or a reviews table, split by rating), on `domain`."""
    source = config.source if "source" in config.model_fields_set else default_source(domain)
    if source in ("movielens", "ratings"):
        return _rating_users(config, domain, seed)
    if source == "goals":
        from crsim.data.population_goals import build_goal_population

        return build_goal_population(config, domain, seed)
    if source in ("pepper", "reviews"):
        from crsim.data.population_pepper import build_pepper_population

        return build_pepper_population(config, domain, seed)
    if source == "iard":
        from crsim.data.population_iard import build_iard_population

        return build_iard_population(config, domain, seed, source=config.file)
    from crsim.data.population_redial import build_redial_population

    return build_redial_population(config, domain, seed, source=config.file)


def _rating_users(config: PopulationConfig, domain: Domain, seed: int) -> list[SimulatedUser]:
    """Users with rating histories from the domain's ratings file."""
    if config.file is not None:
        raise ConfigError(
            f"users.file: not supported for source {config.source!r} (the domain's ratings file is used)"
        )
    if domain.ratings is None:
        raise ConfigError(
            f"users.source: domain {domain.name!r} has no ratings file; use source 'goals' "
            "(goals sampled from the items) or add `ratings:` to the domain file"
        )
    from crsim.data.domains import read_ratings

    ratings = read_ratings(domain.ratings)
    config = slots_for_domain(config, domain)
    return build_population(
        config, domain, ratings, seed, label=domain.ratings.label, source=domain.ratings.name
    )


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
