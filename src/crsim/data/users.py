"""Simulated users for an experiment, from the population source its config names.

A population source is a function `(config, domain, seed) -> list[SimulatedUser]` declared as a
`crsim.population_source` entry point (the built-ins below, in pyproject.toml); `users.source` in a
config names one, and only its module is imported.
"""

from __future__ import annotations

from collections.abc import Callable

from crsim.data.population import PopulationConfig, build_population, source_catalogue
from crsim.errors import ConfigError
from crsim.model.domain import Domain
from crsim.model.user import SimulatedUser

#: What a population source is: the config's `users` section, the domain and the run seed in.
PopulationSource = Callable[[PopulationConfig, Domain, int], list[SimulatedUser]]

__all__ = ["PopulationSource", "build_users", "iard_users", "movielens_users", "pepper_users", "redial_users"]


def build_users(config: PopulationConfig, domain: Domain, seed: int) -> list[SimulatedUser]:
    """The users of the source `config.source` names (MovieLens rating histories, ReDial or IARD
    seekers' dialogue feedback, PEPPER users from MovieLens or a reviews table, or a plug-in's), on
    `domain`."""
    source: PopulationSource = source_catalogue.get(config.source)
    return source(config, domain, seed)


def movielens_users(config: PopulationConfig, domain: Domain, seed: int) -> list[SimulatedUser]:
    """`source: movielens`: users from the shipped MovieLens rating histories."""
    if config.file is not None:
        raise ConfigError("users.file: not supported for source 'movielens' (the shipped ratings are used)")
    from crsim.data.movies import movie_ratings

    return build_population(config, domain, movie_ratings(), seed)


def pepper_users(config: PopulationConfig, domain: Domain, seed: int) -> list[SimulatedUser]:
    """`source: pepper` or `reviews`: PEPPER users (all top-rated items as targets, the rest seen)."""
    from crsim.data.population_pepper import build_pepper_population

    return build_pepper_population(config, domain, seed)


def iard_users(config: PopulationConfig, domain: Domain, seed: int) -> list[SimulatedUser]:
    """`source: iard`: IARD seekers' accepted recommendations and feedback (`users.file` or shipped)."""
    from crsim.data.population_iard import build_iard_population

    return build_iard_population(config, domain, seed, source=config.file)


def redial_users(config: PopulationConfig, domain: Domain, seed: int) -> list[SimulatedUser]:
    """`source: redial`: ReDial seekers' movie feedback (`users.file` or shipped)."""
    from crsim.data.population_redial import build_redial_population

    return build_redial_population(config, domain, seed, source=config.file)
