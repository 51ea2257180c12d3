"""Users without ratings: MultiWOZ-style goals sampled from the items of a domain."""

from __future__ import annotations

import pytest

from crsim.core.errors import ConfigError
from crsim.domains import domain_named
from crsim.model.annotations import GOAL_MATCHES, user_persona
from crsim.model.domain import Domain
from crsim.users.goals import build_goal_population
from crsim.users.population import PopulationConfig
from crsim.users.sources import build_users


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


def test_a_broad_goal_keeps_at_most_max_goal_targets_drawn_with_the_user_s_seed() -> None:
    domain = domain_named("restaurants")
    every = build_goal_population(PopulationConfig(size=40), domain, seed=5)
    capped = build_goal_population(PopulationConfig(size=40, max_goal_targets=3), domain, seed=5)
    assert capped == build_goal_population(PopulationConfig(size=40, max_goal_targets=3), domain, seed=5)
    broad = 0
    for full, user in zip(every, capped, strict=True):
        matches = full.need.targets  # with the default cap (100) every match of these goals is a target
        assert user.need.constraints == full.need.constraints and user.need.requests == full.need.requests
        assert user_persona(GOAL_MATCHES, user.id, user.profile.persona) == len(matches)
        assert user_persona(GOAL_MATCHES, full.id, full.profile.persona) == len(matches)
        if len(matches) <= 3:
            assert user.need.targets == matches
            continue
        broad += 1
        assert len(user.need.targets) == 3 and set(user.need.targets) < set(matches)
        assert user.need.targets == [i for i in matches if i in user.need.targets]  # catalogue order
    assert broad > 10
    other_seed = build_goal_population(PopulationConfig(size=40, max_goal_targets=3, seed=6), domain, seed=5)
    assert [u.need.targets for u in other_seed] != [u.need.targets for u in capped]


def test_goals_on_a_large_catalogue_hold_the_cap_not_every_match(domain: Domain) -> None:
    users = build_goal_population(PopulationConfig(size=60, source="goals"), domain, seed=0)
    counts = [user_persona(GOAL_MATCHES, u.id, u.profile.persona) or 0 for u in users]
    assert max(counts) > 1000  # a genre alone matches thousands of the 4,041 movies
    for user, count in zip(users, counts, strict=True):
        assert len(user.need.targets) == min(count, 100)
        for item_id in user.need.targets:
            values = {
                slot: domain.items[item_id].values(domain.attribute(slot)) for slot in user.need.constraints
            }
            assert all(v in [x.lower() for x in values[s]] for s, v in user.need.constraints.items())
