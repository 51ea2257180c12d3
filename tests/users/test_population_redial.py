"""Simulated users from ReDial seekers: determinism, targets from liked movies, feedback as ratings."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from crsim.core.errors import ConfigError, DataError
from crsim.domains.movielens import movie_domain
from crsim.model.domain import Domain
from crsim.model.items import Item, ItemCollection
from crsim.model.user import SimulatedUser
from crsim.users.population import PopulationConfig
from crsim.users.redial import (
    DISLIKED_RATING,
    LIKED_RATING,
    build_redial_population,
    redial_seekers,
    redial_source,
)

FIXTURE = Path(__file__).parents[1] / "fixtures" / "redial" / "test_data.jsonl.gz"


def _raw() -> dict[str, dict[str, Any]]:
    with gzip.open(redial_source(), "rt", encoding="utf-8") as handle:
        return {d["conversationId"]: d for d in map(json.loads, handle)}


@pytest.fixture(scope="module")
def users() -> list[SimulatedUser]:
    return build_redial_population(PopulationConfig(size=300), movie_domain(), seed=11)


def test_shipped_source_is_the_original_test_split() -> None:
    assert gzip.decompress(redial_source().read_bytes()) == gzip.decompress(FIXTURE.read_bytes())


def test_deterministic(users: list[SimulatedUser]) -> None:
    again = build_redial_population(PopulationConfig(size=300), movie_domain(), seed=11)
    assert [u.model_dump() for u in again] == [u.model_dump() for u in users]
    other = build_redial_population(PopulationConfig(size=300), movie_domain(), seed=12)
    assert [u.id for u in other] != [u.id for u in users]


def test_targets_are_liked_domain_movies_outside_known_ratings(users: list[SimulatedUser]) -> None:
    domain = movie_domain()
    raw = _raw()
    for user in users:
        assert user.need.targets and user.profile.item_ratings
        assert not set(user.need.targets) & set(user.profile.item_ratings)
        dialogue = raw[user.profile.persona["conversation_id"]]
        answers = {**_answers(dialogue, "respondentQuestions"), **_answers(dialogue, "initiatorQuestions")}
        redial_ids = user.profile.persona["source_ids"]
        for target in user.need.targets:
            assert answers[redial_ids[target]]["liked"] == 1
        for target in user.need.targets:
            for slot, value in user.need.constraints.items():
                assert value in domain.items[target].values(domain.informable_slots[slot])


def _answers(dialogue: dict[str, Any], key: str) -> dict[str, Any]:
    value = dialogue[key]
    return value if isinstance(value, dict) else {}


def test_known_ratings_follow_the_feedback(users: list[SimulatedUser]) -> None:
    raw = _raw()
    disliked_seen = 0
    for user in users:
        dialogue = raw[user.profile.persona["conversation_id"]]
        answers = {**_answers(dialogue, "respondentQuestions"), **_answers(dialogue, "initiatorQuestions")}
        for item_id, rating in user.profile.item_ratings.items():
            liked = answers[user.profile.persona["source_ids"][item_id]]["liked"]
            assert rating == (LIKED_RATING if liked == 1 else DISLIKED_RATING)
            assert liked in (0, 1)  # "did not say" is never a rating
            disliked_seen += liked == 0
    assert disliked_seen > 0


def test_first_seeker_of_the_test_split() -> None:
    """Dialogue 20001: the seeker liked everything; Lethal Weapon and 48 Hrs. have no answer."""
    domain = movie_domain()
    seeker = next(s for s in redial_seekers(domain) if s.conversation_id == "20001")
    titles = {domain.items[i].title for i in seeker.ratings}
    assert "Super Troopers" in titles and "Lethal Weapon" not in titles
    assert set(seeker.ratings.values()) == {LIKED_RATING}
    # wanted = liked and not seen: the two Police Academy films the recommender suggested
    assert sorted(seeker.source_ids[i] for i in seeker.wanted) == ["151656", "94688"]
    assert domain.items[seeker.wanted[0]].display_title == "Police Academy (1984)"


def test_size_beyond_the_eligible_seekers_cycles() -> None:
    domain = movie_domain()
    eligible = sum(1 for s in redial_seekers(domain) if len(s.ratings) >= 2)
    users = build_redial_population(PopulationConfig(size=eligible + 5, allow_reuse=True), domain, seed=1)
    assert len({u.id for u in users}) == len(users) == eligible + 5
    assert sum(u.id.endswith("#2") for u in users) == 5


def test_explicit_min_ratings_is_respected() -> None:
    users = build_redial_population(PopulationConfig(size=50, min_ratings=6), movie_domain(), seed=2)
    assert all(len(u.profile.item_ratings) + len(u.need.targets) >= 6 for u in users)
    with pytest.raises(ConfigError, match="no redial seeker"):
        build_redial_population(PopulationConfig(size=5, min_ratings=50), movie_domain(), seed=2)


def test_title_match_maps_movies_without_redial_id(tmp_path: Path) -> None:
    """A domain without `redial_id`s still maps movies by title and year."""
    items = [
        Item(id="a", title="Police Academy", year=1984, genres=["comedy"]),
        Item(id="b", title="Super Troopers", year=2001, genres=["comedy"]),
        Item(id="c", title="Police Academy", year=1994, genres=["comedy"]),
    ]
    domain = Domain("tiny", ItemCollection(items, "tiny"), {"genre": "genres"}, {"genre": "genres"})
    config = PopulationConfig(size=1, constraint_slots=["genre"], preference_slots=[])
    user = build_redial_population(config, domain, seed=0, source=_one_dialogue(tmp_path))[0]
    assert user.need.targets == ["a"] and user.profile.item_ratings == {"b": LIKED_RATING}
    assert user.need.constraints == {"genre": "comedy"}


def _one_dialogue(tmp_path: Path) -> Path:
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as handle:
        first = json.loads(next(handle))
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(first) + "\n", encoding="utf-8")
    return path


def test_bad_source_record_names_the_field(tmp_path: Path) -> None:
    path = _one_dialogue(tmp_path)
    record = json.loads(path.read_text(encoding="utf-8"))
    del record["initiatorQuestions"]["111776"]["liked"]
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as info:
        redial_seekers(movie_domain(), path)
    assert info.value.record == 1 and info.value.field == "questions.111776.liked"
