"""Simulated users from ReDial seekers: what each seeker was looking for, and what they said they liked.

Recipe, one candidate user per ReDial dialogue (the package ships the test split,
`crsim/users/redial_data/test_data.jsonl.gz`, 1,342 dialogues; another ReDial file can be passed):

1. *Feedback.* For every movie of the dialogue, the seeker's own questionnaire answer
   (`initiatorQuestions`) is used, else the recommender's (`respondentQuestions`). "Liked" gives a
   known rating of 5.0, "did not like" 1.0; "did not say" is skipped.
2. *Mapping.* A ReDial movie becomes an item of the domain through the items' `extra.redial_id`,
   else through an exact (case-, punctuation- and article-insensitive) title match with the same
   year; movies without a unique match are dropped.
3. *Targets.* The liked movies the seeker had not seen (mostly the recommendations they
   welcomed) are what they were looking for; if there are none, all liked movies are. Up to
   `max_targets` are drawn, always leaving at least one known rating (`target_share` is not used:
   the dialogue says which movies were wanted).
4. *Constraints, requests, slot preferences* are derived exactly as for MovieLens users
   (`crsim.users.population`): constraints are values the targets share (targets that lack them
   go back to the known ratings), requests are random requestable slots, and liked/disliked slot
   values come from the known ratings.

A seeker is eligible with at least one liked movie in the domain and at least `min_ratings`
rated movies in the domain; since ReDial seekers rate a handful of movies, a `min_ratings` left
at its MovieLens default is replaced by 2 (a target plus one known rating). Sampling, extra
rounds when `size` exceeds the eligible seekers, and per-user seeds follow `build_population`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from crsim.datasets.base import RawRecord
from crsim.datasets.files import iter_json_lines, parsed
from crsim.datasets.redial import clean_name
from crsim.model.domain import Domain
from crsim.model.items import ItemCollection
from crsim.model.text import normalize, split_title_year, unarticle
from crsim.model.user import SimulatedUser
from crsim.users.population import PopulationConfig, Seeker, users_from_seekers

LIKED_RATING, DISLIKED_RATING = 5.0, 1.0
#: Rated movies a seeker needs when the config leaves `min_ratings` at its default.
DEFAULT_MIN_RATINGS = 2


def redial_source() -> Path:
    """The ReDial test split shipped with crsim (a gzip copy of the original `test_data.jsonl`)."""
    return Path(str(files("crsim.users") / "redial_data" / "test_data.jsonl.gz"))


def build_redial_population(
    config: PopulationConfig, domain: Domain, seed: int, source: str | Path | None = None
) -> list[SimulatedUser]:
    """`config.size` simulated users from ReDial seekers (see the module docstring for the recipe)."""
    source = None if source is None else Path(source)
    seekers = redial_seekers(domain, source)
    return users_from_seekers(
        seekers, config, domain, seed, source="redial", default_min_ratings=DEFAULT_MIN_RATINGS
    )


def redial_seekers(domain: Domain, source: str | Path | None = None) -> list[Seeker]:
    """Seekers with at least one liked movie in `domain`, in file order."""
    source = None if source is None else Path(source)
    path = source or redial_source()
    index = TitleIndex.of(domain.items)
    seekers = []
    for record in iter_json_lines(path):
        seeker = _seeker(parsed(record), index)
        if seeker is not None:
            seekers.append(seeker)
    return seekers


def _seeker(record: RawRecord, index: TitleIndex) -> Seeker | None:
    conversation = record.get("conversationId", str)
    names = record.get("movieMentions", dict)
    ratings: dict[str, float] = {}
    wanted: list[str] = []
    redial_ids: dict[str, str] = {}
    for movie, answer in _answers(record).items():
        liked = record.get("liked", int, answer, f"questions.{movie}")
        name = names.get(movie)
        item = index.find(movie, name if isinstance(name, str) else None)
        if item is None or liked not in (0, 1) or item in ratings:
            continue
        ratings[item] = LIKED_RATING if liked == 1 else DISLIKED_RATING
        redial_ids[item] = movie
        if liked == 1 and record.get("seen", int, answer, f"questions.{movie}") != 1:
            wanted.append(item)
    if not wanted:
        wanted = [item for item, rating in ratings.items() if rating == LIKED_RATING]
    return Seeker(conversation, ratings, wanted, redial_ids) if wanted else None


def _answers(record: RawRecord) -> dict[str, Any]:
    """Movie id -> the seeker's own answer, else the recommender's (an empty list means none)."""
    merged: dict[str, Any] = {}
    for key in ("respondentQuestions", "initiatorQuestions"):  # the seeker's answers overwrite
        value = record.data.get(key) if isinstance(record.data, dict) else None
        if isinstance(value, list) and not value:
            continue
        merged.update(record.get(key, dict))
    return merged


@dataclass(frozen=True)
class TitleIndex:
    """ReDial id -> item id via `extra.redial_id`, and (title, year) -> item id for the rest."""

    by_redial_id: dict[str, str]
    by_title: dict[tuple[str, int | None], str | None]

    @staticmethod
    def of(items: ItemCollection) -> TitleIndex:
        return _index(items)

    def find(self, movie: str, name: str | None) -> str | None:
        if movie in self.by_redial_id:
            return self.by_redial_id[movie]
        if not name:
            return None
        title, year = split_title_year(clean_name(name))
        return self.by_title.get((_key(title), year))


@cache
def _index(items: ItemCollection) -> TitleIndex:
    by_redial_id = {str(i.extra["redial_id"]): i.id for i in items if i.extra.get("redial_id")}
    by_title: dict[tuple[str, int | None], str | None] = {}
    for item in items:
        # a title without a year matches only if one item has it; ambiguous keys map to None
        for key in ((_key(item.title), item.year), (_key(item.title), None)):
            by_title[key] = item.id if key not in by_title else None
    return TitleIndex(by_redial_id, by_title)


def _key(title: str) -> str:
    return normalize(unarticle(title))
