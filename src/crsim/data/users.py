"""Simulated users for an experiment, from the population source its config names."""

from __future__ import annotations

from crsim.data.population import PopulationConfig, build_population
from crsim.errors import ConfigError
from crsim.model.domain import Domain
from crsim.model.user import SimulatedUser


def build_users(config: PopulationConfig, domain: Domain, seed: int) -> list[SimulatedUser]:
    """MovieLens users (rating histories), ReDial or IARD seekers (dialogue feedback), or PEPPER
    users (MovieLens or a reviews table, split by rating), on `domain`."""
    if config.source == "movielens":
        if config.file is not None:
            raise ConfigError(
                "users.file: not supported for source 'movielens' (the shipped ratings are used)"
            )
        from crsim.data.movies import movie_ratings

        return build_population(config, domain, movie_ratings(), seed)
    if config.source in ("pepper", "reviews"):
        from crsim.data.population_pepper import build_pepper_population

        return build_pepper_population(config, domain, seed)
    if config.source == "iard":
        from crsim.data.population_iard import build_iard_population

        return build_iard_population(config, domain, seed, source=config.file)
    from crsim.data.population_redial import build_redial_population

    return build_redial_population(config, domain, seed, source=config.file)
