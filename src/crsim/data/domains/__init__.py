"""Item domains by name or path: the one place a config's `domain` (or a manifest's) becomes a `Domain`.

A domain is a domain file (docs/domains.md). The shipped ones are package data, one folder per domain
beside this module (`movies/domain.yaml`, `restaurants/domain.yaml`, `hotels/domain.yaml`); installed
distributions add theirs through the `crsim.domain` entry-point group, whose entries name a domain
and point at an object holding the path of its domain file (a `str` or `Path`). Anything else a
config names is read as a path to a domain file. Evaluation resolves a run's domain from its folder
with `domain_of`, without the runner's builder.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoint, entry_points
from importlib.resources import files
from pathlib import Path

from crsim.data.domains.loader import check_domain_file, read_domain_file, read_ratings
from crsim.errors import ConfigError
from crsim.model.domain import Domain
from crsim.model.run_folder.manifest import Manifest

__all__ = [
    "check_domain_file",
    "domain_file",
    "domain_named",
    "domain_of",
    "known_domains",
    "read_domain_file",
    "read_ratings",
]

#: The entry-point group of domains that installed distributions ship.
ENTRY_POINT_GROUP = "crsim.domain"


def _shipped() -> dict[str, Path]:
    """Domain name -> domain file of the domains shipped as package data."""
    root = Path(str(files("crsim.data.domains")))
    return {p.parent.name: p for p in sorted(root.glob("*/domain.yaml"))}


def _installed() -> dict[str, EntryPoint]:
    """Domain name -> `crsim.domain` entry point of an installed distribution (loaded when named)."""
    return {entry.name: entry for entry in entry_points(group=ENTRY_POINT_GROUP)}


def known_domains() -> list[str]:
    """The names of every domain a config can name: shipped ones and those of installed plug-ins."""
    return sorted({*_installed(), *_shipped()})


def domain_file(reference: str) -> Path:
    """The domain file a config's `domain` means: a known domain's name, else a path to a domain file."""
    shipped = _shipped()
    if reference in shipped:
        return shipped[reference]
    installed = _installed()
    if reference in installed:
        return _entry_path(installed[reference])
    path = Path(reference)
    if path.suffix.lower() in (".yaml", ".yml") or path.is_file():
        return path
    names = ", ".join(known_domains())
    raise ConfigError(f"domain: unknown domain {reference!r}; expected one of {names} or a domain file path")


def _entry_path(entry: EntryPoint) -> Path:
    try:
        return Path(str(entry.load()))
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            f"domain: the {ENTRY_POINT_GROUP} entry point {entry.name!r} ({entry.value}) "
            f"cannot be loaded: {exc}"
        ) from None


def domain_named(reference: str) -> Domain:
    """The domain a config names (`movies`, `restaurants`, `path/to/domain.yaml`), read once per process."""
    return _read(domain_file(reference).resolve())


@cache
def _read(path: Path) -> Domain:
    try:
        return read_domain_file(path)
    except ConfigError as exc:
        raise ConfigError(f"domain: {exc}") from None


def domain_of(manifest: Manifest) -> Domain:
    """The domain a run was made in, as its manifest says (`config.domain`, default 'movies')."""
    return domain_named(manifest.domain)
