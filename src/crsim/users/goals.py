"""Simulated users without ratings: goals sampled from the items, the way MultiWOZ made its goals.

Each user starts from one real item drawn at random (the *anchor*). A few informable slots are
drawn and given the anchor's values for them, so at least one item (the anchor) satisfies every
constraint; the items that satisfy them all are the matches (any of them fulfils the goal); the
requests are drawn from the requestable slots the constraints leave open (a user who wants Italian
food does not ask what food a place serves). Every match is a target up to `users.max_goal_targets`;
beyond that the targets are the anchor and a uniform sample of the other matches (in catalogue
order), and the persona's `goal_matches` counts all matches. Everything is drawn from `random.Random` seeded
by the population seed and the user's id, so one config and seed always give the same users.

Building a population costs one pass over the catalogue (an order of the ids and the attribute
indexes, shared by all users) plus, per user, the intersection of the constraints' index entries:
no per-user structure grows beyond its matches, and what a user keeps is at most the cap.

Which slots constraints use: `users.constraint_slots` when the config sets it, else every
informable slot of kind categorical, multi or ordinal, and numeric slots with few distinct values
(at most `FEW_NUMERIC_VALUES`, e.g. hotel stars) stated as an exact value. Free-text slots are
never constraints.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from functools import reduce
from typing import TYPE_CHECKING

import numpy as np

from crsim.core.errors import ConfigError
from crsim.core.seeding import derive_seed
from crsim.model.annotations import GOAL_MATCHES
from crsim.model.domain import Domain, Slot, SlotKind
from crsim.model.user import InformationNeed, SimulatedUser, UserProfile
from crsim.users.population import PopulationConfig

if TYPE_CHECKING:
    from crsim.model.items import Positions

#: A numeric slot with at most this many distinct values is a goal constraint (stars, yes; pages, no).
FEW_NUMERIC_VALUES = 10
_MATCHED_KINDS = (SlotKind.CATEGORICAL, SlotKind.MULTI, SlotKind.ORDINAL)


def build_goal_population(config: PopulationConfig, domain: Domain, seed: int) -> list[SimulatedUser]:
    """`config.size` users with goals drawn from `domain`'s items (ids `goal-1`, `goal-2`, ...)."""
    slots = goal_slots(config, domain)
    effective_seed = config.seed if config.seed is not None else seed
    catalogue = domain.items.ids
    order = domain.items.positions_by_id
    ids = sorted(catalogue)
    ids.sort(key=len)  # by (length, id): stable, and quicker than a tuple key for a million ids
    users = []
    for number in range(1, config.size + 1):
        label = f"goal-{number}"
        rng = random.Random(derive_seed(effective_seed, label))
        users.append(_goal_user(label, rng.choice(ids), slots, config, domain, (catalogue, order), rng))
    return users


def goal_slots(config: PopulationConfig, domain: Domain) -> list[Slot]:
    """The slots goal constraints may use (see the module docstring); ConfigError for an unknown one."""
    if "constraint_slots" in config.model_fields_set:
        unknown = [s for s in config.constraint_slots if s not in domain.informable_slots]
        if unknown:
            known = ", ".join(domain.informable_slots)
            raise ConfigError(
                f"users.constraint_slots: unknown slot(s) {', '.join(unknown)}; expected some of: {known}"
            )
        return [domain.slot(s) for s in config.constraint_slots]
    slots = [s for s in domain.informable if _usable(s, domain)]
    if not slots:
        raise ConfigError(
            f"users: domain {domain.name!r} has no informable slot a goal can constrain "
            "(categorical, multi, ordinal, or numeric with few values)"
        )
    return slots


def _usable(slot: Slot, domain: Domain) -> bool:
    if slot.kind in _MATCHED_KINDS:
        return True
    return slot.kind is SlotKind.NUMERIC and 0 < len(domain.values(slot.name)) <= FEW_NUMERIC_VALUES


def _goal_user(
    label: str,
    anchor: str,
    slots: list[Slot],
    config: PopulationConfig,
    domain: Domain,
    catalogue: tuple[Sequence[str], Mapping[str, int]],
    rng: random.Random,
) -> SimulatedUser:
    """One user: constraints from the anchor's values, the matching items as targets (at most
    `config.max_goal_targets`, the anchor always among them), sampled requests."""
    item = domain.items[anchor]
    held = [s for s in slots if item.values(s.attribute)]
    low, high = config.num_constraints
    chosen = rng.sample(held, min(rng.randint(low, high), len(held)))
    constraints = {s.name: rng.choice(sorted(v.lower() for v in item.values(s.attribute))) for s in chosen}
    matches = (
        _matching(domain, constraints) if constraints else np.array([catalogue[1][anchor]], dtype=np.intp)
    )
    constrained = {domain.attribute(slot) for slot in constraints}
    requestable = [s.name for s in domain.requestable if s.attribute not in constrained]
    low, high = config.num_requests
    requests = rng.sample(requestable, min(rng.randint(low, high), len(requestable)))
    targets = _targets(anchor, matches, config.max_goal_targets, catalogue, rng)
    need = InformationNeed(constraints=dict(constraints), requests=requests, targets=targets)
    persona = {"source": "goals", **GOAL_MATCHES.entry(len(matches))}
    return SimulatedUser(id=label, profile=UserProfile(persona=persona), need=need)


def _matching(domain: Domain, constraints: dict[str, str]) -> Positions:
    """Catalogue positions (ascending) of the items whose values satisfy every constraint: the
    intersection of the attribute index's entries, smallest first (no pass over the catalogue per
    user)."""
    entries = sorted(
        (domain.items.positions(domain.attribute(slot), value) for slot, value in constraints.items()),
        key=len,
    )
    return reduce(lambda a, b: np.intersect1d(a, b, assume_unique=True), entries[1:], entries[0])


def _targets(
    anchor: str,
    matches: Positions,
    cap: int,
    catalogue: tuple[Sequence[str], Mapping[str, int]],
    rng: random.Random,
) -> list[str]:
    """Every match in catalogue order when there are at most `cap`; else the anchor and `cap - 1`
    other matches drawn uniformly by `rng`, in catalogue order.

    The draw picks catalogue positions at random and keeps those of matches (uniform over the
    matches, and repeatable: it never depends on the set's order) when that takes fewer draws than
    there are matches; otherwise it samples the matches' sorted positions."""
    ids, order = catalogue
    if len(matches) <= cap:
        return [ids[p] for p in matches.tolist()]
    anchor_at, wanted = order[anchor], cap - 1
    if wanted * len(ids) <= len(matches) * len(matches):  # expected draws <= matches
        chosen = {anchor_at}
        while len(chosen) <= wanted:
            position = rng.randrange(len(ids))
            at = int(np.searchsorted(matches, position))
            if at < len(matches) and matches[at] == position:
                chosen.add(position)
        return [ids[p] for p in sorted(chosen)]
    others = [p for p in matches.tolist() if p != anchor_at]
    return [ids[p] for p in sorted([*rng.sample(others, wanted), anchor_at])]
