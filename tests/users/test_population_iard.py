"""Simulated users from IARD seekers: shipped data, determinism, accepted movies as targets, feedback as
ratings, the `users.source: iard` dispatch and another source file."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from crsim.core.errors import ConfigError
from crsim.domains.movielens import movie_domain
from crsim.model.domain import Domain
from crsim.model.user import SimulatedUser
from crsim.users.iard import (
    DISLIKED_RATING,
    LIKED_RATING,
    build_iard_population,
    iard_seekers,
    iard_source,
)
from crsim.users.population import PopulationConfig
from crsim.users.sources import build_users

FIXTURE = Path(__file__).parents[1] / "fixtures" / "iard" / "umap2020_IARD_Cai.json.gz"
ELIGIBLE = 216  # seekers with an accepted movie in the domain and a second rated movie
_MENTION = re.compile(r"@(\d+)")


def _raw() -> dict[str, Any]:
    with gzip.open(iard_source(), "rt", encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def _turns(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(conversation["dialogue_info"].values(), key=lambda u: u["utterance_pos"])


def _recommended_before_accepts(conversation: dict[str, Any]) -> set[str]:
    """ReDial ids in recommender utterances before an accepting seeker utterance (a superset of targets)."""
    accepted = set(conversation["accepted_recommendation"])
    found: set[str] = set()
    seen: set[str] = set()
    for turn in _turns(conversation):
        if turn["role"] == "recommender":
            seen.update(_MENTION.findall(turn["utterance_text"]))
        elif turn["utterance_pos"] in accepted:
            found |= seen
    return found


@pytest.fixture(scope="module")
def users() -> list[SimulatedUser]:
    return build_iard_population(PopulationConfig(size=ELIGIBLE), movie_domain(), seed=5)


def test_shipped_source_is_the_original_release() -> None:
    assert gzip.decompress(iard_source().read_bytes()) == gzip.decompress(FIXTURE.read_bytes())
    readme = (iard_source().parent / "README.md").read_text(encoding="utf-8")
    assert "MIT" in readme and "wanlingcai1997/umap_2020_IARD" in readme


def test_every_eligible_seeker_once_then_a_second_round(users: list[SimulatedUser]) -> None:
    assert len({u.id for u in users}) == ELIGIBLE and all("#" not in u.id for u in users)
    more = build_iard_population(
        PopulationConfig(size=ELIGIBLE + 3, allow_reuse=True), movie_domain(), seed=5
    )
    assert sum("#2" in u.id for u in more) == 3


def test_deterministic(users: list[SimulatedUser]) -> None:
    again = build_iard_population(PopulationConfig(size=ELIGIBLE), movie_domain(), seed=5)
    assert [u.model_dump() for u in again] == [u.model_dump() for u in users]
    other = build_iard_population(PopulationConfig(size=30), movie_domain(), seed=6)
    assert [u.id for u in other] != [u.id for u in users[:30]]


def test_targets_are_accepted_recommendations(users: list[SimulatedUser]) -> None:
    domain, raw = movie_domain(), _raw()
    for user in users:
        conversation = raw[user.profile.persona["conversation_id"]]
        assert conversation["accepted_recommendation"], user.id
        redial_ids = user.profile.persona["source_ids"]
        assert user.need.targets and set(user.need.targets) <= set(domain.items.ids)
        assert {redial_ids[t] for t in user.need.targets} <= _recommended_before_accepts(conversation)
        assert not set(user.need.targets) & set(user.profile.item_ratings)


def test_known_ratings_come_from_feedback_on_mentioned_movies(users: list[SimulatedUser]) -> None:
    raw = _raw()
    ratings = [r for u in users for r in u.profile.item_ratings.values()]
    assert set(ratings) == {LIKED_RATING, DISLIKED_RATING}
    for user in users:
        assert user.profile.item_ratings, user.id
        conversation = raw[user.profile.persona["conversation_id"]]
        recommended = {
            m
            for t in _turns(conversation)
            if t["role"] == "recommender"
            for m in _MENTION.findall(t["utterance_text"])
        }
        mentioned = {m for t in _turns(conversation) for m in _MENTION.findall(t["utterance_text"])}
        redial_ids = user.profile.persona["source_ids"]
        for item, rating in user.profile.item_ratings.items():
            assert redial_ids[item] in mentioned
            if rating == DISLIKED_RATING:  # only rejections of recommendations give a dislike
                assert redial_ids[item] in recommended


def test_constraints_hold_for_every_target(users: list[SimulatedUser]) -> None:
    domain = movie_domain()
    for user in users:
        for slot in user.need.constraints:
            attribute = domain.informable_slots[slot]
            for target in user.need.targets:
                values = [v.lower() for v in domain.items[target].values(attribute)]
                assert all(v.lower() in values for v in user.need.constraint_values(slot)), user.id


def test_build_users_dispatches_iard(domain: Domain) -> None:
    users = build_users(PopulationConfig(source="iard", size=5), domain, seed=1)
    assert len(users) == 5 and all(u.id.startswith("iard-") for u in users)
    assert all(u.profile.persona["source"] == "iard" for u in users)


def test_another_source_file(tmp_path: Path, domain: Domain) -> None:
    raw = _raw()
    keep = ["474", *[k for k, v in raw.items() if not v["accepted_recommendation"]][:3]]
    path = tmp_path / "iard.json"
    path.write_text(json.dumps({k: raw[k] for k in keep}), encoding="utf-8")
    assert [s.conversation_id for s in iard_seekers(domain, path)] == ["474"]
    users = build_users(PopulationConfig(source="iard", file=path, size=2, allow_reuse=True), domain, seed=1)
    assert [u.id for u in users] == ["iard-474", "iard-474#2"]
    conjuring = domain.items[users[0].need.targets[0]]
    assert conjuring.title == "The Conjuring"
    unsatisfied = tmp_path / "none.json"
    unsatisfied.write_text(json.dumps({k: raw[k] for k in keep[1:]}), encoding="utf-8")
    with pytest.raises(ConfigError, match="no iard seeker"):
        build_users(PopulationConfig(source="iard", file=unsatisfied, size=2), domain, seed=1)
