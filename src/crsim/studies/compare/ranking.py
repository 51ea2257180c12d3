"""Ranking CRSs under one simulator and metric: each CRS's mean over its users, the spread over trials,
and the significance groups (compact letter display)."""

from __future__ import annotations

import math
import string
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from crsim.model.run_folder.summary import Direction
from crsim.studies.compare.columns import Column, columns_of
from crsim.studies.compare.means import group_means
from crsim.studies.compare.observation import Observation
from crsim.studies.compare.results import PairResult, RankEntry


def _in_first_seen_order(codes: np.ndarray) -> np.ndarray:
    """Per entry, the rank of its code among the distinct codes in the order first seen."""
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    found: np.ndarray = rank[inverse.reshape(-1)]
    return found


def user_means(column: Column) -> tuple[float | None, int]:
    """The mean over persons (in the order first seen) of each one's mean evaluable value, and
    the number of persons."""
    kept = column.evaluable & column.present
    if not kept.any():
        return None, 0
    group = _in_first_seen_order(column.person[kept])
    order = np.argsort(group, kind="stable")
    counts = np.bincount(group)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    means = group_means(column.value[kept][order], starts, counts)
    return float(np.mean(means)), int(means.size)


def trial_spread(observations: Column | Sequence[Observation]) -> tuple[int, float | None]:
    """The trials of a CRS's observations and the SD over trials of its mean (each trial's mean taken
    as the CRS's mean is, over its users); None below two trials."""
    column = observations if isinstance(observations, Column) else columns_of(observations)[0]
    trial = _in_first_seen_order(column.trial) if column.trial.size else column.trial
    trials = int(trial.max()) + 1 if trial.size else 0
    found = (user_means(column.take(np.flatnonzero(trial == t)))[0] for t in range(trials))
    means = [m for m in found if m is not None]
    return trials, (float(np.std(means, ddof=1)) if len(means) >= 2 else None)


def letter_groups(order: Sequence[str], different: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Compact letter display: CRSs that share a letter are not significantly different.

    `order` lists the CRSs best first; `different` holds the significantly different pairs. Groups
    start as one set of all CRSs; each significant pair splits every group holding both into the
    group without one and the group without the other, and groups inside another are dropped
    (Piepho's insert-and-absorb). Letters go to groups in the order of their best member."""
    groups: list[set[str]] = [set(order)] if order else []
    for x, y in different:
        split: list[set[str]] = []
        for group in groups:
            if x in group and y in group:
                split.extend([group - {x}, group - {y}])
            else:
                split.append(group)
        groups = [g for g in split if g and not any(g < other for other in split)]
        groups = [g for i, g in enumerate(groups) if g not in groups[:i]]
    rank = {name: i for i, name in enumerate(order)}
    groups.sort(key=lambda g: sorted(rank[m] for m in g))
    letters = _letters(len(groups))
    return {name: "".join(letters[i] for i, g in enumerate(groups) if name in g) for name in order}


def _letters(count: int) -> list[str]:
    alphabet = string.ascii_lowercase
    return [alphabet[i] if i < 26 else f"{alphabet[i // 26 - 1]}{alphabet[i % 26]}" for i in range(count)]


def rank(
    by_crs: Mapping[str, Column], results: Sequence[PairResult], direction: Direction, *, letters: bool
) -> list[RankEntry]:
    """The CRSs best first by their mean over users in the metric's direction ("none": highest first;
    equal means share a place), with the letter groups of the significant `results` when `letters`."""
    names = sorted(by_crs)
    means = {name: user_means(by_crs[name]) for name in names}
    sign = 1.0 if direction == "lower" else -1.0  # "none" is ordered by value, highest first

    def score(name: str) -> float:
        mean = means[name][0]
        return math.inf if mean is None else sign * mean

    order = sorted(names, key=lambda n: (score(n), n))
    different = [(r.crs_a, r.crs_b) for r in results if r.significant]
    groups = letter_groups(order, different) if letters else {}
    ranking = []
    for name in order:
        mean, n = means[name]
        place = 1 + sum(1 for other in names if score(other) < score(name))
        trials, spread = trial_spread(by_crs[name])
        ranking.append(
            RankEntry(
                crs=name,
                mean=mean,
                n_users=n,
                rank=place,
                group=groups.get(name, ""),
                trials=trials,
                trial_sd=spread,
            )
        )
    return ranking
