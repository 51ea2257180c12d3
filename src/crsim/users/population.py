"""Simulated-user populations built from real rating histories (MovieLens).

Each simulated user is one MovieLens user: a few of their highest-rated items are held out as
*targets* (what they are looking for, never shown to the CRS); *constraints* are attribute
values those targets share (a genre, sometimes a decade, director or actor); *requests* are
slots they will ask about once something is recommended; and the ratings that were not held
out are their known preferences. Everything is drawn from seeded `random.Random` instances, so
the same config and seed always give the same population.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from crsim.core.errors import ConfigError
from crsim.core.plugins import Registry
from crsim.core.seeding import derive_seed
from crsim.model.domain import Domain
from crsim.model.items import ItemCollection
from crsim.model.user import InformationNeed, SimulatedUser, SlotPreferences, UserProfile

Ratings = Mapping[str, Mapping[str, float]]


#: The population sources by name: the `crsim.population_source` entry points (the built-ins
#: movielens, redial, iard, pepper, reviews in pyproject.toml name functions of crsim.users.sources).
source_catalogue: Registry[Any] = Registry("population_source")


def _known_source(name: str) -> str:
    if name not in source_catalogue:
        known = ", ".join(source_catalogue.names())
        raise ValueError(f"unknown population source {name!r}; expected one of: {known}")
    return name


class PopulationConfig(BaseModel):
    """How to turn rating histories into simulated users."""

    model_config = ConfigDict(extra="forbid")

    source: Annotated[str, AfterValidator(_known_source)] = Field(
        "movielens",
        description="Where users come from: rating histories of the domain's ratings file ('ratings'; "
        "'movielens' is its older name, the MovieLens ratings of the movie domain), goals sampled from "
        "the items' attribute values ('goals', for domains without ratings; the default there), "
        "ReDial seekers' movie feedback, "
        "IARD seekers' accepted recommendations and feedback, or PEPPER users (all top-rated items "
        "as targets, the rest seen) from MovieLens ('pepper') or a reviews table ('reviews'); or a "
        "source a plug-in declares (entry point group crsim.population_source).",
    )
    file: Path | None = Field(
        None,
        description="Source file instead of the shipped one (ReDial: a dialogues .jsonl[.gz] file; "
        "IARD: the original umap2020_IARD_Cai.json[.gz]; reviews: a CSV or JSONL reviews table).",
    )
    size: int = Field(100, ge=1, description="Number of simulated users.")
    allow_reuse: bool = Field(
        False,
        description="Allow `size` to exceed the eligible users: each is then simulated again, with "
        "fresh targets, in further rounds (ids like 'ml-123#2'); intervals resample users.",
    )
    target_share: float = Field(
        0.2, gt=0, le=1, description="Share of a user's highest-rated items from which targets are held out."
    )
    max_targets: int = Field(
        5, ge=1, description="At most this many target items per user (goals: `max_goal_targets`)."
    )
    max_goal_targets: int = Field(
        100,
        ge=1,
        description="Goals source: at most this many of the items matching a goal are its targets (the "
        "anchor item and a seeded uniform sample of the others); the persona's goal_matches counts all.",
    )
    min_ratings: int = Field(
        20, ge=2, description="Users with fewer ratings (of catalogue items) are not used."
    )
    num_constraints: tuple[int, int] = Field(
        (1, 2), description="Inclusive range of constraints per user (fewer if the targets share too little)."
    )
    num_requests: tuple[int, int] = Field((1, 2), description="Inclusive range of requested slots per user.")
    constraint_slots: list[str] = Field(
        default_factory=lambda: ["genre", "decade", "director", "actor"],
        min_length=1,
        description="Informable slots constraints may use; the first one is always tried first.",
    )
    preference_slots: list[str] = Field(
        default_factory=lambda: ["genre", "actor", "director"],
        description="Informable slots for which liked/disliked values are derived from the known ratings.",
    )
    preference_min_support: int = Field(
        3, ge=1, description="Known ratings a value needs to become a like/dislike."
    )
    preference_margin: float = Field(
        0.5, gt=0, description="How far a value's mean rating must lie above/below the user's mean rating."
    )
    max_preferences: int = Field(5, ge=0, description="At most this many likes (and dislikes) per slot.")
    selected_targets: int = Field(
        3,
        ge=1,
        description="PEPPER sources: targets drawn at random into the 'selected' subset (told to the "
        "target-biased simulator; at most all but one); the rest is the 'residual' subset.",
    )
    seed: int | None = Field(None, description="Population seed; when unset, the experiment seed is used.")

    @field_validator("num_constraints", "num_requests")
    @classmethod
    def _range(cls, value: tuple[int, int]) -> tuple[int, int]:
        low, high = value
        if low < 0 or high < low:
            raise ValueError(f"expected a range [low, high] with 0 <= low <= high, got [{low}, {high}]")
        return value


def build_population(
    config: PopulationConfig,
    domain: Domain,
    ratings: Ratings,
    seed: int,
    *,
    label: str = "ml",
    source: str = "MovieLens",
) -> list[SimulatedUser]:
    """`config.size` simulated users from `ratings` (user -> item -> rating) on `domain`.

    Ratings of items outside the domain's catalogue are ignored. Users with at least
    `config.min_ratings` remaining ratings are eligible; `size` of them are sampled without
    replacement. `size` above the number of eligible users is a ConfigError unless
    `config.allow_reuse`: then every eligible user is used and the population cycles through them
    again in a new order, with fresh target draws and ids like "ml-123#2", "ml-123#3" (one user,
    see `crsim.model.user.source_user_id`). `config.seed` wins over `seed` when set. `label` prefixes
    the users' ids and `source` names the ratings in messages (a domain's ratings file says both).
    """
    check_slots(config, domain)
    effective_seed = config.seed if config.seed is not None else seed
    eligible = _eligible_users(config, domain.items, ratings)
    if not eligible:
        raise ConfigError(
            f"users: no user has at least {config.min_ratings} ratings of items in domain {domain.name!r}"
        )
    users = []
    rounds = schedule(eligible, config, random.Random(effective_seed), source=source)
    for user_id, round_number in rounds:
        name = f"{label}-{user_id}" if round_number == 1 else f"{label}-{user_id}#{round_number}"
        rng = random.Random(derive_seed(effective_seed, name))
        known = {item: r for item, r in ratings[user_id].items() if item in domain.items}
        users.append(_make_user(name, known, config, domain, rng))
    return users


@dataclass(frozen=True)
class Seeker:
    """A seeker of a dialogue dataset: item feedback as ratings, and the items they wanted."""

    conversation_id: str
    ratings: dict[str, float]
    wanted: list[str]
    #: Item id -> the dataset's own id of that movie.
    source_ids: dict[str, str]


def users_from_seekers(
    seekers: list[Seeker],
    config: PopulationConfig,
    domain: Domain,
    seed: int,
    *,
    source: str,
    default_min_ratings: int,
) -> list[SimulatedUser]:
    """`config.size` users from dataset seekers: targets drawn from what each seeker wanted, the
    rest of their feedback as known ratings. `min_ratings` falls back to `default_min_ratings`
    unless the config sets it (dialogue datasets rate far fewer items than MovieLens users)."""
    check_slots(config, domain)
    effective_seed = config.seed if config.seed is not None else seed
    minimum = config.min_ratings if "min_ratings" in config.model_fields_set else default_min_ratings
    eligible = {s.conversation_id: s for s in seekers if s.wanted and len(s.ratings) >= minimum}
    if not eligible:
        raise ConfigError(
            f"users: no {source} seeker has a wanted movie and {minimum} rated movies "
            f"in domain {domain.name!r}"
        )
    users = []
    order = sorted(eligible, key=lambda c: (len(c), c))
    for conversation, round_number in schedule(order, config, random.Random(effective_seed), source=source):
        label = f"{source}-{conversation}" if round_number == 1 else f"{source}-{conversation}#{round_number}"
        rng = random.Random(derive_seed(effective_seed, label))
        seeker = eligible[conversation]
        count = min(config.max_targets, len(seeker.wanted), len(seeker.ratings) - 1)
        targets = rng.sample(seeker.wanted, count)
        persona = {"source": source, "conversation_id": conversation, "source_ids": dict(seeker.source_ids)}
        users.append(user_from_targets(label, dict(seeker.ratings), targets, config, domain, rng, persona))
    return users


def default_population(size: int = 100, seed: int = 0) -> list[SimulatedUser]:
    """A population on the shipped movie domain and its MovieLens ratings."""
    from crsim.domains.movielens import movie_domain, movie_ratings

    return build_population(PopulationConfig(size=size), movie_domain(), movie_ratings(), seed)


# --- user selection ------------------------------------------------------------------------------


def check_slots(config: PopulationConfig, domain: Domain) -> None:
    for field in ("constraint_slots", "preference_slots"):
        unknown = [s for s in getattr(config, field) if s not in domain.informable_slots]
        if unknown:
            known = ", ".join(sorted(domain.informable_slots))
            raise ConfigError(
                f"users.{field}: unknown slot(s) {', '.join(unknown)}; expected some of: {known}"
            )


def _eligible_users(config: PopulationConfig, items: ItemCollection, ratings: Ratings) -> list[str]:
    """Users with enough ratings of catalogue items, in a fixed (natural) order."""
    eligible = [u for u, rated in ratings.items() if sum(i in items for i in rated) >= config.min_ratings]
    return sorted(eligible, key=lambda u: (len(u), u))


def schedule(
    eligible: list[str], config: PopulationConfig, rng: random.Random, *, source: str
) -> Iterator[tuple[str, int]]:
    """(user id, round) pairs: a sample without replacement, then more rounds if `config.size` needs
    them and `config.allow_reuse` allows it (a ConfigError naming the population size otherwise:
    repeated users are not independent observations)."""
    check_reuse(config, len(eligible), source)
    round_number = 0
    remaining = config.size
    while remaining > 0:
        round_number += 1
        take = min(remaining, len(eligible))
        for user_id in rng.sample(eligible, take):
            yield user_id, round_number
        remaining -= take


def check_reuse(config: PopulationConfig, eligible: int, source: str) -> None:
    """Refuse more users than the population holds unless reuse was asked for."""
    if config.size > eligible and not config.allow_reuse:
        raise ConfigError(
            f"users.size: {config.size} users asked for, but the {source} population holds {eligible} "
            f"eligible users; ask for at most {eligible}, or set users.allow_reuse: true (--allow-reuse) "
            "to simulate users more than once"
        )


# --- one user ------------------------------------------------------------------------------------


def _make_user(
    label: str, ratings: dict[str, float], config: PopulationConfig, domain: Domain, rng: random.Random
) -> SimulatedUser:
    return user_from_targets(label, ratings, _draw_targets(ratings, config, rng), config, domain, rng)


def user_from_targets(
    label: str,
    ratings: dict[str, float],
    targets: list[str],
    config: PopulationConfig,
    domain: Domain,
    rng: random.Random,
    persona: dict[str, Any] | None = None,
) -> SimulatedUser:
    """A user whose need is built around `targets` (constraints they share, sampled requests) and
    whose known preferences are the other `ratings`. Shared by every rating-based population."""
    constraints, targets = _derive_constraints(targets, config, domain, rng)
    known = {item: r for item, r in ratings.items() if item not in targets}
    slots = sorted(domain.requestable_slots)
    low, high = config.num_requests
    requests = rng.sample(slots, min(rng.randint(low, high), len(slots)))
    mean_rating = fmean(known.values())
    profile = UserProfile(
        item_ratings=known,
        preferences=_preferences(known, mean_rating, config, domain),
        persona={**(persona or {}), "mean_rating": round(mean_rating, 3), "num_ratings": len(known)},
    )
    need = InformationNeed(constraints=constraints, requests=requests, targets=targets)
    return SimulatedUser(id=label, profile=profile, need=need)


def _draw_targets(ratings: dict[str, float], config: PopulationConfig, rng: random.Random) -> list[str]:
    """A random subset of the user's top `target_share` items (rating ties ordered by `rng`).

    At most `max_targets`, and always at least one item is left as a known rating.
    """
    order = sorted(ratings)
    rng.shuffle(order)
    order.sort(key=lambda item: -ratings[item])
    pool = order[: max(1, math.ceil(config.target_share * len(order)))]
    count = min(config.max_targets, len(pool), len(order) - 1)
    return rng.sample(pool, count)


def _derive_constraints(
    targets: list[str], config: PopulationConfig, domain: Domain, rng: random.Random
) -> tuple[dict[str, str], list[str]]:
    """Constraints every remaining target satisfies, and those targets.

    The first constraint slot (the genre) gets the value most targets share; targets without it
    are handed back to the known ratings, so at least one target (a most common value's holder)
    always remains. Further constraints come from a randomly chosen other slot whose value is
    shared by two or more remaining targets (or by the only one), again dropping targets that
    lack it. When the targets share nothing more, the user gets fewer constraints than drawn;
    a constraint the targets do not satisfy is never invented.
    """
    low, high = config.num_constraints
    wanted = rng.randint(low, high)
    primary, *others = config.constraint_slots
    constraints: dict[str, str] = {}
    value = _most_common(targets, primary, domain, rng, 1) if wanted else None
    if value is not None:
        constraints[primary] = value
        targets = [t for t in targets if value in _values(t, primary, domain)]
    while len(constraints) < wanted:
        candidates = {
            slot: value
            for slot in others
            if slot not in constraints and (value := _most_common(targets, slot, domain, rng, 2)) is not None
        }
        if not candidates:
            break
        slot = rng.choice(sorted(candidates))
        constraints[slot] = candidates[slot]
        targets = [t for t in targets if candidates[slot] in _values(t, slot, domain)]
    return constraints, targets


def _values(item_id: str, slot: str, domain: Domain) -> list[str]:
    return domain.items[item_id].values(domain.informable_slots[slot])


def _counts(targets: list[str], slot: str, domain: Domain) -> Counter[str]:
    return Counter(v for t in targets for v in set(_values(t, slot, domain)))


def _most_common(
    targets: list[str], slot: str, domain: Domain, rng: random.Random, minimum: int
) -> str | None:
    """The value of `slot` held by most targets (ties drawn by `rng`), if held by enough of them."""
    counts = _counts(targets, slot, domain)
    if not counts:
        return None
    top = max(counts.values())
    if top < min(minimum, len(targets)):
        return None
    return rng.choice(sorted(v for v, c in counts.items() if c == top))


def _preferences(
    known: dict[str, float], mean_rating: float, config: PopulationConfig, domain: Domain
) -> dict[str, SlotPreferences]:
    """Liked/disliked values per slot: mean rating of the value's items vs. the user's mean."""
    preferences: dict[str, SlotPreferences] = {}
    for slot in config.preference_slots:
        by_value: dict[str, list[float]] = {}
        for item_id, rating in known.items():
            for value in set(_values(item_id, slot, domain)):
                by_value.setdefault(value, []).append(rating)
        scored = [
            (fmean(rs) - mean_rating, len(rs), value)
            for value, rs in by_value.items()
            if len(rs) >= config.preference_min_support
        ]
        likes = sorted(
            (s for s in scored if s[0] >= config.preference_margin), key=lambda s: (-s[0], -s[1], s[2])
        )
        dislikes = sorted(
            (s for s in scored if s[0] <= -config.preference_margin), key=lambda s: (s[0], -s[1], s[2])
        )
        if likes or dislikes:
            preferences[slot] = SlotPreferences(
                likes=[v for *_, v in likes[: config.max_preferences]],
                dislikes=[v for *_, v in dislikes[: config.max_preferences]],
            )
    return preferences
