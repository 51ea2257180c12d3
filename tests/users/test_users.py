"""Choosing the user population from the experiment config."""

from __future__ import annotations

import pytest

from crsim.core.errors import ConfigError
from crsim.model.domain import Domain
from crsim.users.population import PopulationConfig
from crsim.users.sources import build_users


def test_the_config_source_selects_the_population(domain: Domain) -> None:
    movielens = build_users(PopulationConfig(size=5), domain, seed=1)
    redial = build_users(PopulationConfig(source="redial", size=5), domain, seed=1)
    assert all(u.id.startswith("ml-") for u in movielens)
    assert all(u.id.startswith("redial-") for u in redial)
    assert all(u.profile.persona["source"] == "redial" for u in redial)
    assert all(set(u.need.targets) <= set(domain.items.ids) for u in redial)


def test_a_file_is_refused_where_it_would_be_ignored(domain: Domain) -> None:
    with pytest.raises(ConfigError, match=r"users\.file"):
        build_users(PopulationConfig(file="ratings.csv"), domain, seed=1)  # type: ignore[arg-type]
