"""Means of groups of values, bit for bit what `np.mean` gives for each group alone, computed for
all groups at once (the column-wise reader and the object path must agree to the last bit)."""

from __future__ import annotations

import numpy as np


def group_means(values: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The mean of each group `values[start : start + count]`, bit for bit what `np.mean` gives for
    the group alone (its pairwise summation): groups of one size are taken as the rows of a matrix."""
    means = np.empty(counts.size)
    for size in np.unique(counts):
        rows = np.flatnonzero(counts == size)
        if size > 1024:  # long groups one at a time, as np.mean sums them
            for row in rows:
                means[row] = np.mean(values[starts[row] : starts[row] + size])
        else:
            means[rows] = np.mean(values[starts[rows, None] + np.arange(size)], axis=1)
    return means


def pair_means(values: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per group of rows of the (n, 2) `values`, the column means bit for bit as `np.mean(rows,
    axis=0)` gives them: the rows summed one after the other, then divided by their count."""
    means = np.empty((counts.size, 2))
    for size in np.unique(counts):
        rows = np.flatnonzero(counts == size)
        first = starts[rows]
        total = values[first].copy()
        for offset in range(1, int(size)):
            total += values[first + offset]
        means[rows] = total / size
    return means
