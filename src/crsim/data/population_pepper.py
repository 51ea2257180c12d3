"""PEPPER users: each user's rated items split by rating into targets (top share) and seen items.

The top `target_share` of a user's items by rating (ties broken by the user's seed) are the
targets, the rest are *seen*: their ratings (and reviews or own tags) are what a simulator may
know about the user. Targets are never part of the profile a simulator reads. `selected_targets`
random targets are the *selected* subset (what the target-biased simulator is
told about); the others are the *residual* subset. Both go into `profile.persona["target_split"]`
so that every simulator's dialogues with the user can be scored on the same two subsets.

Sources: the domain's ratings file (`users.source: pepper`; for the movie domain the shipped
MovieLens ratings, with the user's own MovieLens tags as feedback; for another domain its `ratings:`
file, the rating scale read as the lowest and highest rating in it) or any reviews table
(`users.source: reviews`, `users.file`; see reviews.py).
Liked and disliked attribute values (`profile.preferences`) are derived from the seen ratings by
the rules of the MovieLens population; likes/dislikes from review text are the simulator's work.
"""

from __future__ import annotations

import csv
import gzip
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from statistics import fmean
from typing import Any

from crsim.data.population import PopulationConfig, _preferences, check_slots, schedule
from crsim.data.reviews import Review, read_reviews
from crsim.errors import ConfigError
from crsim.model import annotations as keys
from crsim.model.domain import Domain
from crsim.model.user import InformationNeed, SimulatedUser, SlotPreferences, UserProfile
from crsim.seeding import derive_seed
from crsim.sim.pepper.common import split_targets

#: MovieLens ratings run from 0.5 to 5 stars.
MOVIELENS_SCALE = (0.5, 5.0)
#: Reviews tables need fewer rated items than MovieLens users (PEPPER: users with >= 10 reviews).
REVIEWS_MIN_RATINGS = 10
#: Own tags of at most this many seen items go into the profile.
MAX_TAGGED_ITEMS = 50


def build_pepper_population(config: PopulationConfig, domain: Domain, seed: int) -> list[SimulatedUser]:
    """`config.size` PEPPER users from MovieLens (`source: pepper`) or a reviews table (`source: reviews`)."""
    check_slots(config, domain)
    source = pepper_source(config, domain)
    return pepper_users(
        config,
        domain,
        seed,
        source.ratings,
        source.scale,
        source.min_ratings,
        reviews=source.reviews,
        tags=source.tags,
        source=source.name,
    )


@dataclass(frozen=True)
class PepperSource:
    """All ratings (targets' included) of a PEPPER user source, with reviews or own tags."""

    name: str
    ratings: dict[str, dict[str, float]]
    scale: tuple[float, float]
    min_ratings: int
    reviews: dict[str, dict[str, str]] | None = None
    tags: dict[str, dict[str, list[str]]] | None = None


def pepper_source(config: PopulationConfig, domain: Domain) -> PepperSource:
    """The ratings a PEPPER population is drawn from (and, for studies, the targets' true ratings)."""
    if config.source == "reviews":
        if config.file is None:
            raise ConfigError("users.file: source 'reviews' needs a reviews table (CSV or JSON Lines)")
        reviews = read_reviews(config.file)
        ratings: dict[str, dict[str, float]] = {}
        texts: dict[str, dict[str, str]] = {}
        for review in reviews:
            if review.item_id in domain.items:
                ratings.setdefault(review.user_id, {})[review.item_id] = review.rating
                if review.text:
                    texts.setdefault(review.user_id, {})[review.item_id] = review.text
        minimum = config.min_ratings if "min_ratings" in config.model_fields_set else REVIEWS_MIN_RATINGS
        return PepperSource("reviews", ratings, rating_scale(reviews), minimum, reviews=texts)
    if config.source != "pepper":
        raise ConfigError(
            f"users.source: {config.source!r} is not a PEPPER source; expected 'pepper' or 'reviews'"
        )
    if config.file is not None:
        raise ConfigError("users.file: not supported for source 'pepper' (the domain's ratings file is used)")
    return domain_ratings_source(config, domain)


def domain_ratings_source(config: PopulationConfig, domain: Domain) -> PepperSource:
    """`source: pepper`: the domain's ratings file; the shipped MovieLens ratings (the movie domain's,
    and those of movies over another collection) come with MovieLens's scale and the users' own tags."""
    from crsim.data.domains import read_ratings
    from crsim.data.movies import _resource, movie_ratings

    if domain.ratings is None:
        raise ConfigError(
            f"users.source: 'pepper' needs ratings, and domain {domain.name!r} has no ratings file; "
            "add `ratings:` to the domain file or use source 'reviews' with users.file"
        )
    if domain.ratings.path.resolve() == _resource("ratings.csv.gz").resolve():
        ratings = {u: dict(r) for u, r in movie_ratings().items()}
        return PepperSource("movielens", ratings, MOVIELENS_SCALE, config.min_ratings, tags=movie_tags())
    ratings = read_ratings(domain.ratings)
    values = [r for rated in ratings.values() for r in rated.values()]
    if not values:
        raise ConfigError(
            f"users.source: the ratings file {domain.ratings.path} of domain {domain.name!r} is empty"
        )
    return PepperSource(domain.ratings.name, ratings, (min(values), max(values)), config.min_ratings)


def rating_scale(reviews: list[Review]) -> tuple[float, float]:
    """The lowest and highest rating in the table, read as its rating scale."""
    values = [r.rating for r in reviews]
    return min(values), max(values)


@cache
def movie_tags() -> dict[str, dict[str, list[str]]]:
    """The MovieLens users' own tags of the shipped movies: user id -> item id -> tags."""
    from crsim.data.movies import _resource

    tags: dict[str, dict[str, list[str]]] = {}
    with gzip.open(_resource("tags.csv.gz"), "rt", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            tags.setdefault(row["user_id"], {}).setdefault(row["item_id"], []).append(row["tag"])
    return tags


def pepper_users(
    config: PopulationConfig,
    domain: Domain,
    seed: int,
    ratings: Mapping[str, Mapping[str, float]],
    scale: tuple[float, float],
    min_ratings: int,
    *,
    reviews: Mapping[str, Mapping[str, str]] | None = None,
    tags: Mapping[str, Mapping[str, list[str]]] | None = None,
    source: str,
) -> list[SimulatedUser]:
    """Sample users with at least `min_ratings` rated catalogue items and split each one."""
    effective_seed = config.seed if config.seed is not None else seed
    known = {u: {i: r for i, r in rated.items() if i in domain.items} for u, rated in ratings.items()}
    eligible = sorted(
        (u for u, rated in known.items() if len(rated) >= max(2, min_ratings)), key=lambda u: (len(u), u)
    )
    if not eligible:
        raise ConfigError(
            f"users: no {source} user has at least {min_ratings} rated items in domain {domain.name!r}"
        )
    cap = config.max_targets if "max_targets" in config.model_fields_set else None
    users = []
    prefix = "rv" if source == "reviews" else "pepper"
    for user_id, round_number in schedule(eligible, config, random.Random(effective_seed), source=source):
        label = f"{prefix}-{user_id}" if round_number == 1 else f"{prefix}-{user_id}#{round_number}"
        rng = random.Random(derive_seed(effective_seed, label))
        targets, seen = split_by_rating(known[user_id], config.target_share, rng, cap)
        selected, residual = split_targets(targets, config.selected_targets, rng)
        persona: dict[str, Any] = {
            "source": source,
            **keys.SOURCE_USER_ID.entry(user_id),
            **keys.RATING_SCALE.entry(list(scale)),
            **keys.PERSONA_TARGET_SPLIT.entry({"selected": selected, "residual": residual}),
        }
        if reviews and reviews.get(user_id):
            keys.REVIEWS.put(persona, {i: t for i, t in reviews[user_id].items() if i in seen})
        if tags and tags.get(user_id):
            tagged = sorted((i for i in tags[user_id] if i in seen), key=lambda i: (-seen[i], i))
            keys.TAGS.put(persona, {i: list(tags[user_id][i]) for i in tagged[:MAX_TAGGED_ITEMS]})
        users.append(pepper_user(label, seen, targets, config, domain, persona))
    return users


def split_by_rating(
    ratings: Mapping[str, float], share: float, rng: random.Random, cap: int | None = None
) -> tuple[list[str], dict[str, float]]:
    """(targets, seen ratings): the top `share` of the items by rating (at least one, and at least
    one item left seen; at most `cap`), rating ties ordered by `rng`."""
    order = sorted(ratings)
    rng.shuffle(order)
    order.sort(key=lambda item: -ratings[item])
    count = min(max(1, math.ceil(share * len(order))), len(order) - 1)
    if cap is not None:
        count = min(count, cap)
    targets = order[:count]
    return targets, {i: ratings[i] for i in sorted(order[count:])}


def pepper_user(
    label: str,
    seen: dict[str, float],
    targets: list[str],
    config: PopulationConfig,
    domain: Domain,
    persona: dict[str, Any],
) -> SimulatedUser:
    """A target-free user: the seen ratings as known preferences, the targets only in the need."""
    mean_rating = fmean(seen.values())
    preferences = _preferences(seen, mean_rating, config, domain)
    own_tags = keys.user_persona(keys.TAGS, label, persona)
    if own_tags:  # own tags count as keyword preferences
        tagged = tag_preferences(own_tags, seen, mean_rating, config)
        given = preferences.get("keyword", SlotPreferences())
        preferences["keyword"] = SlotPreferences(
            likes=list(dict.fromkeys([*given.likes, *tagged.likes])),
            dislikes=list(dict.fromkeys([*given.dislikes, *tagged.dislikes])),
        )
    profile = UserProfile(
        item_ratings=seen,
        preferences={s: p for s, p in preferences.items() if p.likes or p.dislikes},
        persona={**persona, "mean_rating": round(mean_rating, 3), "num_ratings": len(seen)},
    )
    return SimulatedUser(id=label, profile=profile, need=InformationNeed(targets=targets))


def tag_preferences(
    tags: Mapping[str, list[str]], seen: Mapping[str, float], mean_rating: float, config: PopulationConfig
) -> SlotPreferences:
    """The user's own tags on seen items rated clearly above (likes) or below (dislikes) their mean."""
    likes: list[str] = []
    dislikes: list[str] = []
    for item in sorted(tags, key=lambda i: (-abs(seen[i] - mean_rating), i)):
        gap = seen[item] - mean_rating
        bucket = (
            likes
            if gap >= config.preference_margin
            else dislikes
            if gap <= -config.preference_margin
            else None
        )
        if bucket is None:
            continue
        for tag in tags[item]:
            if tag.lower() not in {t.lower() for t in bucket}:
                bucket.append(tag)
    return SlotPreferences(likes=likes[: config.max_preferences], dislikes=dislikes[: config.max_preferences])
