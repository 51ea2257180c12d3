"""Simulated-user populations from rating histories: determinism, held-out targets, constraints."""

from __future__ import annotations

import math
from statistics import fmean

import pytest
from pydantic import ValidationError

from crsim.core.errors import ConfigError
from crsim.domains.movielens import movie_domain, movie_ratings
from crsim.model.domain import Domain
from crsim.model.items import Item, ItemCollection
from crsim.model.user import SimulatedUser, source_user_id
from crsim.users.population import PopulationConfig, build_population, default_population


@pytest.fixture(scope="module")
def movie_users() -> list[SimulatedUser]:
    return build_population(PopulationConfig(size=60), movie_domain(), movie_ratings(), seed=7)


def _tiny_domain() -> Domain:
    """Ten items: the even ones are comedies of the 1990s by one director, the odd ones dramas."""
    items = [
        Item(
            id=str(n),
            title=f"Film {n}",
            year=1995 if n % 2 == 0 else 2005,
            genres=["comedy"] if n % 2 == 0 else ["drama"],
            directors=["Ann Lee"] if n % 2 == 0 else [f"Director {n}"],
            actors=[f"Actor {n}"],
        )
        for n in range(10)
    ]
    return Domain(
        name="tiny",
        items=ItemCollection(items, name="tiny"),
        informable_slots={"genre": "genres", "decade": "decade", "director": "directors", "actor": "actors"},
        requestable_slots={"plot": "plot", "year": "year"},
    )


def _tiny_ratings() -> dict[str, dict[str, float]]:
    """Users 1-3 rate all ten items (comedies high); user 4 rates three; item 'x' is not in the catalogue."""
    full = {str(n): (5.0 if n % 2 == 0 else 2.0) for n in range(10)}
    return {"1": dict(full), "2": dict(full), "3": {**full, "x": 4.0}, "4": {"0": 5.0, "1": 1.0, "2": 3.0}}


def test_same_seed_same_population_and_different_seed_differs() -> None:
    config = PopulationConfig(size=30)
    first = build_population(config, movie_domain(), movie_ratings(), seed=3)
    again = build_population(config, movie_domain(), movie_ratings(), seed=3)
    other = build_population(config, movie_domain(), movie_ratings(), seed=4)
    assert [u.model_dump() for u in first] == [u.model_dump() for u in again]
    assert [u.model_dump() for u in first] != [u.model_dump() for u in other]


def test_config_seed_overrides_the_experiment_seed() -> None:
    seeded = PopulationConfig(size=10, seed=11)
    a = build_population(seeded, movie_domain(), movie_ratings(), seed=1)
    b = build_population(seeded, movie_domain(), movie_ratings(), seed=2)
    c = build_population(PopulationConfig(size=10), movie_domain(), movie_ratings(), seed=11)
    assert [u.model_dump() for u in a] == [u.model_dump() for u in b] == [u.model_dump() for u in c]


def test_size_is_honoured_with_unique_eligible_users(movie_users: list[SimulatedUser]) -> None:
    ratings = movie_ratings()
    assert len(movie_users) == 60
    assert len({u.id for u in movie_users}) == 60
    for user in movie_users:
        assert user.id.startswith("ml-") and "#" not in user.id
        assert len(ratings[user.id.removeprefix("ml-")]) >= 20


def test_targets_are_held_out_top_rated_items(movie_users: list[SimulatedUser]) -> None:
    ratings = movie_ratings()
    for user in movie_users:
        original = ratings[user.id.removeprefix("ml-")]
        targets = user.need.targets
        assert 1 <= len(targets) <= 5
        assert not set(targets) & set(user.profile.item_ratings)
        assert set(targets) | set(user.profile.item_ratings) == set(original)
        # Every target lies within the user's top 20 % by rating.
        threshold = sorted(original.values(), reverse=True)[math.ceil(0.2 * len(original)) - 1]
        assert all(original[t] >= threshold for t in targets)


def test_every_target_satisfies_every_constraint(movie_users: list[SimulatedUser]) -> None:
    domain = movie_domain()
    slots_seen: set[str] = set()
    for user in movie_users:
        assert 1 <= len(user.need.constraints) <= 2
        assert "genre" in user.need.constraints
        slots_seen.update(user.need.constraints)
        for slot, value in user.need.constraints.items():
            attribute = domain.informable_slots[slot]
            for target in user.need.targets:
                assert value in domain.items[target].values(attribute), (user.id, slot, value, target)
    assert len(slots_seen) >= 3, "secondary constraints should vary across slots"


def test_requests_come_from_requestable_slots(movie_users: list[SimulatedUser]) -> None:
    requestable = set(movie_domain().requestable_slots)
    for user in movie_users:
        assert 1 <= len(user.need.requests) <= 2
        assert len(set(user.need.requests)) == len(user.need.requests)
        assert set(user.need.requests) <= requestable


def test_preferences_follow_the_known_ratings() -> None:
    users = build_population(PopulationConfig(size=3, min_ratings=5), _tiny_domain(), _tiny_ratings(), seed=0)
    for user in users:
        known = user.profile.item_ratings
        assert user.profile.persona["mean_rating"] == pytest.approx(fmean(known.values()), abs=1e-3)
        assert user.profile.likes("genre") == ["comedy"]
        assert user.profile.dislikes("genre") == ["drama"]
        assert user.profile.likes("director") == ["Ann Lee"]
        assert "x" not in known  # not in the catalogue


def test_tiny_domain_constraints_use_what_targets_share() -> None:
    config = PopulationConfig(size=3, min_ratings=5, num_constraints=(2, 2), max_targets=2, target_share=0.5)
    for user in build_population(config, _tiny_domain(), _tiny_ratings(), seed=5):
        assert user.need.constraints["genre"] == "comedy"
        second = {k: v for k, v in user.need.constraints.items() if k != "genre"}
        assert second in ({"decade": "1990s"}, {"director": "Ann Lee"})
        assert len(user.need.targets) == 2


def test_min_ratings_and_cycling_when_size_exceeds_eligible_users() -> None:
    config = PopulationConfig(size=7, min_ratings=5, allow_reuse=True)
    users = build_population(config, _tiny_domain(), _tiny_ratings(), seed=1)
    ids = [u.id for u in users]
    assert len(ids) == 7 and len(set(ids)) == 7
    assert {i.split("#")[0] for i in ids} == {"ml-1", "ml-2", "ml-3"}
    assert sorted(ids[:3]) == ["ml-1", "ml-2", "ml-3"]
    assert all(i.endswith("#2") for i in ids[3:6]) and ids[6].endswith("#3")
    assert {source_user_id(i) for i in ids} == {"ml-1", "ml-2", "ml-3"}


def test_more_users_than_the_population_holds_is_an_error_unless_reuse_is_asked_for() -> None:
    config = PopulationConfig(size=4, min_ratings=5)
    expected = (
        r"^users.size: 4 users asked for, but the MovieLens population holds 3 eligible users; ask for at "
        r"most 3, or set users.allow_reuse: true \(--allow-reuse\) to simulate users more than once$"
    )
    with pytest.raises(ConfigError, match=expected):
        build_population(config, _tiny_domain(), _tiny_ratings(), seed=1)
    assert (
        len(build_population(PopulationConfig(size=3, min_ratings=5), _tiny_domain(), _tiny_ratings(), 1))
        == 3
    )


def test_the_source_user_of_a_reused_id() -> None:
    assert [source_user_id(i) for i in ("ml-7", "ml-7#2", "ml-7#10", "ml-7#1", "redial-#3x", "a#19")] == [
        "ml-7",
        "ml-7",
        "ml-7",
        "ml-7#1",
        "redial-#3x",
        "a",
    ]


def test_too_few_targets_share_anything_gives_fewer_constraints() -> None:
    config = PopulationConfig(
        size=1, min_ratings=5, num_constraints=(2, 2), constraint_slots=["actor", "decade"]
    )
    (user,) = build_population(config, _tiny_domain(), {"1": _tiny_ratings()["1"]}, seed=2)
    # Targets (top comedies) have distinct actors; the primary slot takes one and drops the rest.
    assert len(user.need.targets) == 1
    assert set(user.need.constraints) == {"actor", "decade"}


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"target_share": 0}, "target_share"),
        ({"target_share": 1.5}, "target_share"),
        ({"size": 0}, "size"),
        ({"num_constraints": (2, 1)}, "num_constraints"),
        ({"num_requests": (-1, 1)}, "num_requests"),
        ({"sizes": 3}, "sizes"),
    ],
)
def test_bad_config_is_rejected_with_the_field_named(args: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        PopulationConfig.model_validate(args)
    assert field in str(info.value)
    assert info.value.errors()[0]["loc"][0] == field


def test_unknown_slot_and_no_eligible_users_are_config_errors() -> None:
    with pytest.raises(ConfigError, match=r"constraint_slots.*mood"):
        build_population(PopulationConfig(constraint_slots=["mood"]), _tiny_domain(), _tiny_ratings(), seed=0)
    with pytest.raises(ConfigError, match="at least 50 ratings"):
        build_population(PopulationConfig(min_ratings=50), _tiny_domain(), _tiny_ratings(), seed=0)


def test_default_population_uses_the_movie_domain() -> None:
    users = default_population(size=5, seed=9)
    assert len(users) == 5
    assert all(t in movie_domain().items for u in users for t in u.need.targets)
