"""Users without ratings: MultiWOZ-style goals sampled from the items of a domain."""

from __future__ import annotations

import pytest

from crsim.data.domains import domain_named
from crsim.data.population import PopulationConfig
from crsim.data.population_goals import build_goal_population
from crsim.data.users import build_users
from crsim.errors import ConfigError


def _satisfies(domain_name: str, item_id: str, constraints: dict[str, str]) -> bool:
    domain = domain_named(domain_name)
    item = domain.items[item_id]
    return all(
        value in [v.lower() for v in item.values(domain.attribute(slot))]
        for slot, value in constraints.items()
    )


@pytest.mark.parametrize("name", ["restaurants", "hotels"])
def test_goal_targets_are_exactly_the_items_meeting_every_constraint(name: str) -> None:
    domain = domain_named(name)
    users = build_goal_population(PopulationConfig(size=40), domain, seed=5)
    assert [u.id for u in users] == [f"goal-{n}" for n in range(1, 41)]
    for user in users:
        need = user.need
        assert 1 <= len(need.constraints) <= 2 and set(need.constraints) <= set(domain.informable_slots)
        assert need.targets, "the anchor item always satisfies its own constraints"
        assert need.targets == [i for i in domain.items.ids if _satisfies(name, i, need.constraints)]  # type: ignore[arg-type]
        assert 1 <= len(need.requests) <= 2 and set(need.requests) <= set(domain.requestable_slots)
        assert user.profile.item_ratings == {}
    assert len({tuple(sorted(u.need.constraints.items())) for u in users}) > 10  # varied goals


def test_goals_are_seeded() -> None:
    domain = domain_named("restaurants")
    first = build_goal_population(PopulationConfig(size=10), domain, seed=1)
    assert first == build_goal_population(PopulationConfig(size=10), domain, seed=1)
    assert first != build_goal_population(PopulationConfig(size=10), domain, seed=2)
    assert first == build_goal_population(PopulationConfig(size=10, seed=1), domain, seed=99)


def test_constraint_slots_can_be_chosen_and_are_checked() -> None:
    domain = domain_named("hotels")
    users = build_goal_population(
        PopulationConfig(size=15, constraint_slots=["stars"], num_constraints=(1, 1)), domain, seed=0
    )
    assert {tuple(u.need.constraints) for u in users} == {("stars",)}
    with pytest.raises(ConfigError, match=r"users.constraint_slots: unknown slot.*food"):
        build_goal_population(PopulationConfig(constraint_slots=["food"]), domain, seed=0)


def test_a_domain_without_ratings_gets_goal_users_unless_ratings_are_asked_for() -> None:
    domain = domain_named("restaurants")
    users = build_users(PopulationConfig(size=3), domain, seed=0)
    assert [u.profile.persona["source"] for u in users] == ["goals"] * 3
    with pytest.raises(ConfigError, match="domain 'restaurants' has no ratings file; use source 'goals'"):
        build_users(PopulationConfig(source="ratings"), domain, seed=0)


def test_movie_users_still_come_from_movielens_ratings_and_goals_work_on_movies_too() -> None:
    movies = domain_named("movies")
    assert build_users(PopulationConfig(size=2), movies, seed=0)[0].id.startswith("ml-")
    goals = build_users(PopulationConfig(size=5, source="goals"), movies, seed=0)
    assert all(
        u.need.targets and not set(u.need.constraints) - {"genre", "actor", "director", "decade", "keyword"}
        for u in goals
    )
