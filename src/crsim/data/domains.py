"""Item domains by name: the one place a domain name (a config's `domain`, a manifest's) becomes a
`Domain`, so that evaluation resolves a run's domain from its folder without the runner's builder."""

from __future__ import annotations

from crsim.errors import ConfigError
from crsim.model.domain import Domain
from crsim.model.run_folder.manifest import Manifest

#: The domains crsim ships.
KNOWN_DOMAINS = ("movies",)


def domain_named(name: str) -> Domain:
    """The shipped domain called `name`; any other name is a ConfigError listing the known ones."""
    if name == "movies":
        from crsim.data.movies import movie_domain

        return movie_domain()
    raise ConfigError(f"domain: unknown domain {name!r}; expected 'movies'")


def domain_of(manifest: Manifest) -> Domain:
    """The domain a run was made in, as its manifest says (`config.domain`, default 'movies')."""
    return domain_named(manifest.domain)
