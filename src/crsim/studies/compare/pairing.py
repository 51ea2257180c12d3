"""Pairing two CRSs' observations by user, trial and occurrence into one difference per person."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from crsim.studies.compare.columns import Column, columns_of
from crsim.studies.compare.means import pair_means
from crsim.studies.compare.observation import Observation


@dataclass
class PairedSample:
    """Two CRSs' values on the users both met (one simulator, one metric)."""

    a: np.ndarray  # per user: mean of A's values over the user's kept pairs
    b: np.ndarray
    users: list[str]
    pairs: int  # dialogue pairs kept
    not_evaluable: int  # pairs dropped because a dialogue was not evaluable
    missing: int  # pairs dropped because a value was missing (metric not applicable or failed)
    unmatched: int  # dialogues without a counterpart at the other CRS
    one_per_user: bool  # every user has exactly one kept pair
    binary: bool  # every kept value is 0 or 1

    @property
    def differences(self) -> np.ndarray:
        difference: np.ndarray = self.a - self.b
        return difference


def _as_columns(
    a: Column | Sequence[Observation], b: Column | Sequence[Observation]
) -> tuple[Column, Column]:
    if isinstance(a, Column) and isinstance(b, Column):
        return a, b
    if isinstance(a, Column) or isinstance(b, Column):
        raise TypeError("pair columns with columns and observations with observations")
    left, right = columns_of(a, b)
    return left, right


def _distinct_keys(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys in the order first seen, and the index of each one's last observation: a key
    seen twice pairs in its first place with its last value."""
    distinct, first = np.unique(key, return_index=True)
    last = key.size - 1 - np.unique(key[::-1], return_index=True)[1]
    order = np.argsort(first)
    return distinct[order], last[order]


def pair(a: Column | Sequence[Observation], b: Column | Sequence[Observation]) -> PairedSample:
    """Pair two CRSs' observations by (user, trial, occurrence); drop pairs with a non-evaluable
    dialogue or a missing value on either side; average each person's kept pairs (persons in id
    order, a person's pairs in A's reading order)."""
    left, right = _as_columns(a, b)
    keys_a, last_a = _distinct_keys(left.key)
    keys_b, last_b = _distinct_keys(right.key)
    sorter = np.argsort(keys_b)
    at = np.minimum(np.searchsorted(keys_b, keys_a, sorter=sorter), max(keys_b.size - 1, 0))
    common = keys_b[sorter[at]] == keys_a if keys_b.size else np.zeros(keys_a.size, dtype=bool)
    x, y = last_a[common], last_b[sorter[at[common]]]
    both = left.evaluable[x] & right.evaluable[y]
    kept = both & left.present[x] & right.present[y]
    x, y = x[kept], y[kept]
    who = left.person[x]
    order = np.argsort(who, kind="stable")
    persons, starts, counts = np.unique(who[order], return_index=True, return_counts=True)
    values = np.stack([left.value[x][order], right.value[y][order]], axis=1)
    means = pair_means(values, starts, counts)
    return PairedSample(
        a=np.ascontiguousarray(means[:, 0]),
        b=np.ascontiguousarray(means[:, 1]),
        users=[left.persons[p] for p in persons],
        pairs=int(counts.sum()),
        not_evaluable=int(common.sum() - both.sum()),
        missing=int(both.sum() - kept.sum()),
        unmatched=int(keys_a.size + keys_b.size - 2 * common.sum()),
        one_per_user=bool(np.all(counts == 1)),
        binary=bool(values.size) and bool(np.all((values == 0.0) | (values == 1.0))),
    )
