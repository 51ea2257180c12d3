"""Distributions of the measures and the Jensen-Shannon distance between them; distinct-n at a fixed
budget of words (with the copies of a bootstrap resample counted as new dialogues)."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from crsim.core.seeding import derive_seed
from crsim.studies.fidelity.sides import UserSide, ngrams

#: How many random orders of the utterances distinct-n is averaged over.
DISTINCT_DRAWS = 5

#: A distribution as counts or weights per outcome.
Table = Mapping[str, float]


def binned(values: Sequence[int], bounds: Sequence[int]) -> Counter[str]:
    """Counts per bin; a bin is named by its range ("3-5", "41+")."""
    counts: Counter[str] = Counter()
    for value in values:
        low = 0
        for bound in bounds:
            if value <= bound:
                counts[str(bound) if low == bound else f"{low}-{bound}"] += 1
                break
            low = bound + 1
        else:
            counts[f"{low}+"] += 1
    return counts


def bernoulli(p: float | None) -> Table | None:
    """A proportion as a two-outcome distribution (None stays None)."""
    return None if p is None else {"yes": p, "no": 1.0 - p}


def js_distance(p: Table | None, q: Table | None) -> float | None:
    """Jensen-Shannon distance (square root of the divergence, base 2) between two count or weight
    tables; 0 for equal distributions, 1 for disjoint ones; None when either side is empty."""
    if p is None or q is None:
        return None
    p_total, q_total = sum(p.values()), sum(q.values())
    if p_total <= 0 or q_total <= 0:
        return None
    divergence = 0.0
    for key in dict.fromkeys([*p, *q]):  # the tables' own order: the same sum in every process
        a, b = p.get(key, 0) / p_total, q.get(key, 0) / q_total
        m = (a + b) / 2
        if a > 0:
            divergence += a / 2 * math.log2(a / m)
        if b > 0:
            divergence += b / 2 * math.log2(b / m)
    return math.sqrt(max(divergence, 0.0))


def share(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def tokens(side: UserSide) -> int:
    return sum(side.lengths)


def distinct(side: UserSide, n: int, budget: int, seed: int, draws: int = DISTINCT_DRAWS) -> float | None:
    """Distinct-n at a fixed budget of words: the utterances in a random order, cut after `budget`
    words; distinct n-grams (within an utterance) over all n-grams, averaged over `draws` orders.
    Comparing at one budget matters: distinct-n falls as a sample grows.

    In a bootstrap resample (`merged`) a dialogue may be there twice; a new dialogue would not repeat
    it word for word, so an n-gram found in no other dialogue of the cut sample counts once per copy,
    while an n-gram other dialogues share counts once, as it would in a sample without repeats."""
    if budget < n:
        return None
    texts = side.tokens
    repeated = any(side.copies)
    values = []
    for draw in range(draws):
        order = list(range(len(texts)))
        random.Random(derive_seed(seed, "distinct", draw)).shuffle(order)
        left = budget
        grams: list[tuple[str, ...]] = []
        owners: list[int] = []
        cached = side.ngrams.get(n)
        for index in order:
            size = len(texts[index])
            whole = cached is not None and size <= left
            found = cached[index] if cached is not None and whole else ngrams(texts[index][:left], n)
            left -= min(size, left)
            grams += found
            owners += [index] * len(found)
            if left <= 0:
                break
        if not grams:
            continue
        kept = _kept_with_copies(grams, owners, side) if repeated else len(set(grams))
        values.append(kept / len(grams))
    return mean(values)


def _kept_with_copies(grams: Sequence[tuple[str, ...]], owners: Sequence[int], side: UserSide) -> int:
    """The distinct n-grams of a resample's cut sample, an n-gram of one dialogue only counted once
    per copy of it (`distinct`); in numpy, on the n-grams' hashes (a collision of 64-bit hashes
    among a sample's n-grams is too rare to matter)."""
    owner = np.asarray(owners, dtype=np.int64)
    base = np.asarray(side.origins, dtype=np.int64)[owner]
    copy = np.asarray(side.copies, dtype=np.int64)[owner]
    ids = np.fromiter((hash(g) for g in grams), dtype=np.int64, count=len(grams))
    _, in_dialogues = np.unique(_distinct_pairs(ids, base), return_counts=True)
    _, in_copies = np.unique(_distinct_pairs(ids, copy), return_counts=True)  # the same sorted ids
    return int(np.where(in_dialogues == 1, in_copies, 1).sum())


def _distinct_pairs(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The `first` value of each distinct (first, second) pair, sorted."""
    order = np.lexsort((second, first))
    a, b = first[order], second[order]
    new = np.ones(a.size, dtype=bool)
    new[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    return a[new]
