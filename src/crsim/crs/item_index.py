"""The item index the built-in CRSs score with: read-only arrays over a domain's items (the items
holding each slot value, by popularity rank; years; numbers; popularity), built once per domain and
kept by the domain disk cache."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from crsim.language.understanding import Period, lexicon_for
from crsim.model.domain import Domain, SlotKind, per_domain

Scores = npt.NDArray[np.float64]
Ranks = npt.NDArray[np.int32]
Positions = npt.NDArray[np.intp]
_NO_RANKS = np.zeros(0, dtype=np.int32)


class ItemIndex:
    """Read-only arrays over a collection: items per slot value, years and popularity.

    Items are also numbered by rank: their order by popularity (most popular first, ties in catalogue
    order). The items holding a slot value are kept as sorted ranks (int32), so they can be walked in
    popularity order and tested for membership by binary search (`top_ranked`).
    """

    def __init__(self, domain: Domain) -> None:
        items = domain.items  # read by columns: no item objects are made
        self.ids = items.ids
        self.position = items.positions_by_id
        #: The field items are ranked by (domain `popularity`, else rating counts); None: catalogue order.
        self.ranked_by = domain.popularity or (
            "num_ratings" if any(items.extra_column("num_ratings") or ()) else None
        )
        raw = np.array(
            [_first_number(v) for v in items.values_of(self.ranked_by)]
            if self.ranked_by
            else np.zeros(len(items))
        )
        raw = np.nan_to_num(raw, nan=0.0)
        if self.ranked_by == "num_ratings":
            self.popularity = np.log1p(raw) / max(math.log1p(float(raw.max(initial=0.0))), 1.0)
        else:  # any other number, scaled into [0, 1] keeping its order
            low, high = float(raw.min(initial=0.0)), float(raw.max(initial=0.0))
            self.popularity = (raw - low) / (high - low) if high > low else np.zeros(len(raw))
        self.years = np.array([year or 0 for year in items.years], dtype=np.float64)
        #: Positions by rank (popularity descending, ties in catalogue order), and each position's rank.
        self.order = np.argsort(-self.popularity, kind="stable").astype(np.int32)
        self.rank = np.empty(len(items), dtype=np.int32)
        self.rank[self.order] = np.arange(len(items), dtype=np.int32)
        #: Per slot and lower-cased value: the ranks of the items holding it, ascending.
        self.ranked: dict[str, dict[str, Ranks]] = {}
        #: The same as bits by rank (`np.packbits`) for values at least 1 item in 128 holds (the bits
        #: take at most 4 times the room of the ranks): membership is then a lookup, not a binary search.
        self.bits: dict[tuple[str, str], npt.NDArray[np.uint8]] = {}
        period = lexicon_for(domain).period_slot
        #: Numeric slots: each item's first value as a number (NaN without one).
        self.numbers: dict[str, npt.NDArray[np.float64]] = {
            slot.name: np.array([_first_number(v) for v in items.values_of(slot.attribute)], dtype=np.float64)
            for slot in domain.informable
            if slot.kind is SlotKind.NUMERIC
        }
        for slot, attribute in domain.informable_slots.items():
            if slot == period:
                continue
            # the collection's own value index: positions of the items holding each value, unique
            self.ranked[slot] = {v: np.sort(self.rank[ks]) for v, ks in items.value_index(attribute).items()}
            for v, ranks in self.ranked[slot].items():
                if len(ranks) * 128 >= len(items):
                    held = np.zeros(len(items), dtype=np.bool_)
                    held[ranks] = True
                    self.bits[slot, v] = np.packbits(held)

    def positions(self, slot: str, value: str) -> npt.NDArray[np.intp]:
        """The items holding `value`; for a numeric slot the items whose number equals it or lies
        within its bound (">=4", "<20": `crsim.language.cues.BOUND_SIGNS`)."""
        if self._bound(slot, value) is not None:
            return np.flatnonzero(self.holds(slot, value, np.arange(len(self.ids)))).astype(np.intp)
        return np.sort(self.order[self.ranks(slot, value)]).astype(np.intp)

    def ranks(self, slot: str, value: str) -> Ranks:
        """The ranks of the items holding `value` (ascending), none for a numeric bound (">=4")."""
        return self.ranked.get(slot, {}).get(value.lower(), _NO_RANKS)

    def holds(self, slot: str, value: str, at: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
        """Whether each item at the positions `at` holds `value` (as `positions` says), without
        looking at the other items."""
        bound = self._bound(slot, value)
        if bound is None:
            ranks = self.rank[at]
            bits = self.bits.get((slot, value.lower()))
            if bits is not None:
                return np.asarray((bits[ranks >> 3] >> (7 - (ranks & 7))) & 1, dtype=np.bool_)
            listed = self.ranks(slot, value)
            if len(ranks) > 8 * len(listed):  # many items asked about: one pass beats binary searches
                held = np.zeros(len(self.ids), dtype=np.bool_)
                held[listed] = True
                return held[ranks]
            return member(listed, ranks)
        numbers = self.numbers[slot][at]
        with np.errstate(invalid="ignore"):
            return _COMPARE[bound[0]](numbers, bound[1]) & ~np.isnan(numbers)

    def _bound(self, slot: str, value: str) -> tuple[str, float] | None:
        """(sign, number) of a value of a numeric slot, compared with each item's number; else None."""
        if slot not in self.numbers:
            return None
        match = _BOUNDED.fullmatch(value.strip())
        return (match.group(1), float(match.group(2))) if match is not None else None

    def period_match(self, period: Period) -> Scores:
        """1 inside the period, fading to 0 ten years away; 0 for items without a year."""
        return period_match(self.years, period)

    def holds_by_bound(self, slot: str, value: str) -> bool:
        """Whether `value` is a bound on a numeric slot, compared item by item (no list of holders)."""
        return self._bound(slot, value) is not None


def period_match(years: Scores, period: Period) -> Scores:
    """1 for years inside the period, fading to 0 ten years away; 0 for a missing year (0)."""
    distance = np.maximum(np.maximum(period.start - years, years - period.end), 0.0)
    return np.where(years > 0, np.clip(1.0 - distance / 10.0, 0.0, 1.0), 0.0)


def member(
    ascending: npt.NDArray[np.integer[Any]], numbers: npt.NDArray[np.integer[Any]]
) -> npt.NDArray[np.bool_]:
    """Whether each of `numbers` is in `ascending` (binary search: no array of the catalogue's length,
    as `np.isin` may make)."""
    if not len(ascending):
        return np.zeros(len(numbers), dtype=np.bool_)
    found = np.minimum(np.searchsorted(ascending, numbers), len(ascending) - 1)
    return np.asarray(ascending[found] == numbers)


_BOUNDED = re.compile(r"(>=|<=|>|<|)\s*(-?\d+(?:\.\d+)?)")
_COMPARE: dict[str, Callable[[npt.NDArray[np.float64], float], npt.NDArray[np.bool_]]] = {
    "": lambda a, n: np.isclose(a, n),
    ">=": lambda a, n: a >= n,
    "<=": lambda a, n: a <= n,
    ">": lambda a, n: a > n,
    "<": lambda a, n: a < n,
}


def _first_number(values: list[str]) -> float:
    for value in values:
        try:
            return float(value)
        except ValueError:
            continue
    return math.nan


@per_domain(kept=True)
def item_index(domain: Domain) -> ItemIndex:
    """The index of a domain's items, built once per domain (its ranking field is the domain's); a
    domain cache on disk keeps it."""
    return ItemIndex(domain)
