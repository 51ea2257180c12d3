"""Simulated users without ratings: goals sampled from the items, the way MultiWOZ made its goals.

Each user starts from one real item drawn at random (the *anchor*). A few informable slots are
drawn and given the anchor's values for them, so at least one item (the anchor) satisfies every
constraint; every item that satisfies them all is a target (any of them fulfils the goal); the
requests are drawn from the requestable slots the constraints leave open (a user who wants Italian
food does not ask what food a place serves). Everything is drawn from `random.Random` seeded by
the population seed and the user's id, so one config and seed always give the same users.

Which slots constraints use: `users.constraint_slots` when the config sets it, else every
informable slot of kind categorical, multi or ordinal, and numeric slots with few distinct values
(at most `FEW_NUMERIC_VALUES`, e.g. hotel stars) stated as an exact value. Free-text slots are
never constraints.
"""

from __future__ import annotations

import random

from crsim.data.population import PopulationConfig
from crsim.errors import ConfigError
from crsim.model.domain import Domain, Slot, SlotKind
from crsim.model.user import InformationNeed, SimulatedUser, UserProfile
from crsim.seeding import derive_seed

#: A numeric slot with at most this many distinct values is a goal constraint (stars, yes; pages, no).
FEW_NUMERIC_VALUES = 10
_MATCHED_KINDS = (SlotKind.CATEGORICAL, SlotKind.MULTI, SlotKind.ORDINAL)


def build_goal_population(config: PopulationConfig, domain: Domain, seed: int) -> list[SimulatedUser]:
    """`config.size` users with goals drawn from `domain`'s items (ids `goal-1`, `goal-2`, ...)."""
    slots = goal_slots(config, domain)
    effective_seed = config.seed if config.seed is not None else seed
    ids = sorted(domain.items.ids, key=lambda i: (len(i), i))
    users = []
    for number in range(1, config.size + 1):
        label = f"goal-{number}"
        rng = random.Random(derive_seed(effective_seed, label))
        users.append(_goal_user(label, rng.choice(ids), slots, config, domain, rng))
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
    label: str, anchor: str, slots: list[Slot], config: PopulationConfig, domain: Domain, rng: random.Random
) -> SimulatedUser:
    """One user: constraints from the anchor's values, every matching item a target, sampled requests."""
    item = domain.items[anchor]
    held = [s for s in slots if item.values(s.attribute)]
    low, high = config.num_constraints
    chosen = rng.sample(held, min(rng.randint(low, high), len(held)))
    constraints = {s.name: rng.choice(sorted(v.lower() for v in item.values(s.attribute))) for s in chosen}
    targets = _matching(domain, constraints) if constraints else [anchor]
    constrained = {domain.attribute(slot) for slot in constraints}
    requestable = [s.name for s in domain.requestable if s.attribute not in constrained]
    low, high = config.num_requests
    requests = rng.sample(requestable, min(rng.randint(low, high), len(requestable)))
    need = InformationNeed(constraints=dict(constraints), requests=requests, targets=targets)
    return SimulatedUser(id=label, profile=UserProfile(persona={"source": "goals"}), need=need)


def _matching(domain: Domain, constraints: dict[str, str]) -> list[str]:
    """Ids of the items whose values satisfy every constraint, in catalogue order."""
    matching: set[str] | None = None
    for slot, value in constraints.items():
        ids = domain.items.with_value(domain.attribute(slot), value)
        matching = set(ids) if matching is None else matching & ids
    return [i for i in domain.items.ids if i in (matching or set())]
