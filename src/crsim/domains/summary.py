"""What a domain holds, slot by slot: the figures `crsim domain check` prints (docs/domains.md)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crsim.model.domain import Domain, SlotKind


@dataclass(frozen=True)
class SlotSummary:
    """One slot: its attribute and kind, what users do with it, its values and how many items have one."""

    name: str
    attribute: str
    kind: SlotKind
    informable: bool
    requestable: bool
    #: Distinct (lower-cased) values over the items.
    values: int
    #: Items holding at least one value, and their share of all items.
    covered: int
    coverage: float
    #: A few values, the most frequent first (ties alphabetical); empty for text slots.
    examples: tuple[str, ...]


@dataclass(frozen=True)
class DomainSummary:
    """A domain's name, noun, item count, slots and the side data it names."""

    name: str
    item_noun: str
    items: int
    slots: tuple[SlotSummary, ...]
    ratings: str | None
    profiles: str | None


def summarize(domain: Domain, examples: int = 4) -> DomainSummary:
    """Figures of every slot of `domain`: distinct values and coverage are counted over all items."""
    total = len(domain.items)
    rows = []
    for slot in domain.slots.values():
        if slot.kind is SlotKind.TEXT:  # distinct texts counted without indexing them (never looked up)
            distinct = {v.lower() for values in domain.items.values_of(slot.attribute) for v in values}
            counts, top = dict.fromkeys(distinct, 0), []
            covered = sum(1 for values in domain.items.values_of(slot.attribute) if values)
        else:
            counts = domain.items.value_counts(slot.attribute)
            top = sorted(counts, key=lambda v: (-counts[v], v))[:examples]
            holding = np.zeros(total, dtype=bool)
            for positions in domain.items.value_index(slot.attribute).values():
                holding[positions] = True
            covered = int(holding.sum())
        rows.append(
            SlotSummary(
                name=slot.name,
                attribute=slot.attribute,
                kind=slot.kind,
                informable=slot.informable,
                requestable=slot.requestable,
                values=len(counts),
                covered=covered,
                coverage=covered / total if total else 0.0,
                examples=tuple(top),
            )
        )
    ratings = domain.ratings.path.name if domain.ratings else None
    profiles = domain.profiles.rsplit("/", 1)[-1] if domain.profiles else None
    return DomainSummary(domain.name, domain.item_noun, total, tuple(rows), ratings, profiles)
