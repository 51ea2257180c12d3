"""Item domains by name or path: the one place a config's `domain` (or a manifest's) becomes a `Domain`.

A domain is a domain file (docs/domains.md). Named domains are a plug-in kind like every other (a
`crsim.core.plugins.Registry`): an entry names a domain and points at a package whose folder holds
`domain.yaml` (crsim's own are in the built-in table) or, from an installed package's `crsim.domain`
entry point, at an object holding the path of a domain file (a `str` or `Path`). Anything else a
config names is read as a path to a domain file. Evaluation
resolves a run's domain from its folder with `domain_of`, without the runner's builder.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from crsim.core.errors import ConfigError
from crsim.core.plugins import Registry
from crsim.domains.loader import check_domain_file, read_domain_file
from crsim.domains.ratings import read_ratings
from crsim.model.domain import Domain
from crsim.model.run_folder.manifest import Manifest

__all__ = [
    "check_domain_file",
    "domain_catalogue",
    "domain_file",
    "domain_named",
    "domain_of",
    "known_domains",
    "read_domain_file",
    "read_ratings",
]

#: The entry-point group of domains (crsim's shipped ones and installed distributions').
ENTRY_POINT_GROUP = "crsim.domain"

#: Domain name -> a package holding `domain.yaml`, or the path of a domain file; loaded when named.
domain_catalogue: Registry[Any] = Registry("domain")


def known_domains() -> list[str]:
    """The names of every domain a config can name (the `crsim.domain` entry points)."""
    return domain_catalogue.names()


def domain_file(reference: str) -> Path:
    """The domain file a config's `domain` means: a known domain's name, else a path to a domain file."""
    if reference in domain_catalogue:
        return _named_file(reference)
    path = Path(reference)
    if path.suffix.lower() in (".yaml", ".yml") or path.is_file():
        return path
    names = ", ".join(known_domains())
    raise ConfigError(f"domain: unknown domain {reference!r}; expected one of {names} or a domain file path")


def _named_file(name: str) -> Path:
    """The domain file of the catalogue entry `name`: its package's `domain.yaml`, or the path it holds."""
    try:
        value = domain_catalogue.get(name)
    except ConfigError as exc:
        raise ConfigError(f"domain: {exc}") from None
    if isinstance(value, ModuleType) and value.__file__ is not None:
        return Path(value.__file__).parent / "domain.yaml"
    if isinstance(value, str | Path):
        return Path(value)
    raise ConfigError(
        f"domain: {name!r} names a {type(value).__name__}; "
        "expected a package holding domain.yaml or the path of a domain file"
    )


def domain_named(reference: str) -> Domain:
    """The domain a config names (`movies`, `restaurants`, `path/to/domain.yaml`), read once per process."""
    return _read(domain_file(reference).resolve())


@cache
def _read(path: Path) -> Domain:
    """The domain of a domain file: from the domain cache on disk when it holds it (large catalogues,
    `crsim.domains.disk_cache`), else read and checked (`save_domain` then keeps it once it is built)."""
    from crsim.domains.disk_cache import load_domain

    cached, ref = load_domain(path)
    if cached is not None:
        return cached
    try:
        domain = read_domain_file(path)
    except ConfigError as exc:
        raise ConfigError(f"domain: {exc}") from None
    if ref is not None:
        domain.__dict__["_cache"] = ref
    return domain


def domain_of(manifest: Manifest) -> Domain:
    """The domain a run was made in, as its manifest says (`config.domain`, default 'movies')."""
    return domain_named(manifest.domain)
