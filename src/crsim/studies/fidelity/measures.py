"""The measures of a fidelity table: one row per measure with its value on the simulated users, the
human corpus and its two halves, the distances between them, and their bootstrap intervals."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from crsim.core.seeding import derive_seed
from crsim.studies.fidelity.distances import (
    DISTINCT_DRAWS,
    Table,
    bernoulli,
    binned,
    distinct,
    js_distance,
    mean,
    share,
    tokens,
)
from crsim.studies.fidelity.intervals import Interval, percentile_interval
from crsim.studies.fidelity.report import MeasureRow
from crsim.studies.fidelity.sides import ACCEPTED, REJECTED, UserSide, merged

#: Words per user utterance: the upper bound of each bin (the last bin is open).
LENGTH_BINS = (0, 2, 5, 10, 20, 40)
#: User turns per dialogue: the upper bound of each bin (the last bin is open).
TURN_BINS = (1, 2, 3, 5, 8, 12, 20)

#: The sides every measure is taken on: simulated, human, half A, half B.
Sides = tuple[UserSide, UserSide, UserSide, UserSide]


def measure_rows(
    sim: UserSide,
    human: UserSide,
    half_a: UserSide,
    half_b: UserSide,
    seed: int,
    *,
    budget: int | None = None,
    draws: int = DISTINCT_DRAWS,
) -> list[MeasureRow]:
    """The rows of every measure but the classifier, in the order the table shows them. Distinct-n
    is taken at `budget` words (default: the smallest side's), averaged over `draws` orders."""
    sides = (sim, human, half_a, half_b)
    budget = min(tokens(s) for s in sides) if budget is None else budget
    return [
        *_utterance_rows(sides),
        *_round_rows(sides),
        _acts_row(sides),
        *_distinct_rows(sides, budget, seed, draws),
        _turns_row(sides),
    ]


def _row(
    name: str,
    unit: str,
    values: Sequence[float | None],
    tables: Sequence[Table | None],
    counts: tuple[int, int],
    keep: bool = False,
) -> MeasureRow:
    """One measure: its `values` on the four sides and the distances between their distributions
    (`tables`), simulated-vs-human and half-vs-half; with the two distributions when `keep`."""
    return MeasureRow(
        measure=name,
        unit=unit,
        simulated=values[0],
        human=values[1],
        half_a=values[2],
        half_b=values[3],
        distance=js_distance(tables[0], tables[1]),
        control_distance=js_distance(tables[2], tables[3]),
        n_simulated=counts[0],
        n_human=counts[1],
        simulated_distribution=_distribution(tables[0]) if keep else None,
        human_distribution=_distribution(tables[1]) if keep else None,
    )


def _distribution(counts: Table | None) -> dict[str, float] | None:
    if not counts:
        return None
    total = sum(counts.values())
    return {k: round(v / total, 4) for k, v in sorted(counts.items(), key=lambda kv: -kv[1])}


def _utterance_rows(sides: Sides) -> list[MeasureRow]:
    """Words per utterance (binned) and the share of utterances that ask something."""
    counts = (len(sides[0].lengths), len(sides[1].lengths))
    lengths = [mean(s.lengths) for s in sides]
    bins = [binned(s.lengths, LENGTH_BINS) or None for s in sides]
    questions = [share(s.questions) for s in sides]
    return [
        _row("words_per_utterance", "utterance", lengths, bins, counts, keep=True),
        _row("question_share", "utterance", questions, [bernoulli(p) for p in questions], counts),
    ]


def _round_rows(sides: Sides) -> list[MeasureRow]:
    """The shares of recommendation rounds that the user accepted, and that the user rejected."""
    counts = (len(sides[0].reactions), len(sides[1].reactions))
    rows = []
    for name, outcome in (("acceptance_rate", ACCEPTED), ("rejection_rate", REJECTED)):
        rates = [share([r == outcome for r in s.reactions]) for s in sides]
        rows.append(_row(name, "recommendation", rates, [bernoulli(p) for p in rates], counts))
    return rows


def _acts_row(sides: Sides) -> MeasureRow:
    """The distribution of the users' dialogue acts (a distribution without a single value)."""
    counts = (sum(sides[0].intents.values()), sum(sides[1].intents.values()))
    intents = [Counter(s.intents) or None for s in sides]
    return _row("dialogue_acts", "act", [None] * 4, intents, counts, keep=True)


def _distinct_rows(sides: Sides, budget: int, seed: int, draws: int) -> list[MeasureRow]:
    """Distinct-1 and distinct-2 of every side at one budget of words."""
    rows = []
    for n in (1, 2):
        values = [distinct(s, n, budget, derive_seed(seed, i), draws) for i, s in enumerate(sides)]
        tables = [bernoulli(p) for p in values]
        rows.append(_row(f"distinct_{n}", f"{n}-gram in {budget} words", values, tables, (budget, budget)))
    return rows


def _turns_row(sides: Sides) -> MeasureRow:
    """User turns per dialogue (binned)."""
    counts = (len(sides[0].turns), len(sides[1].turns))
    turns = [mean(s.turns) for s in sides]
    bins = [binned(s.turns, TURN_BINS) or None for s in sides]
    return _row("turns_per_dialogue", "dialogue", turns, bins, counts, keep=True)


def summary(distances: Iterable[float | None]) -> float | None:
    """The mean of the distances that are defined."""
    known = [d for d in distances if d is not None]
    return sum(known) / len(known) if known else None


def bootstrap_rows(
    rows: list[MeasureRow],
    sides: Sides,
    name: str,
    seed: int,
    resamples: int,
) -> tuple[list[MeasureRow], Interval | None, Interval | None]:
    """`rows` with their intervals, and the intervals of the summary and control summary distances:
    `resamples` replicates, each resampling the dialogues of every side (`merged`) and recomputing
    the rows at the point estimate's word budget (distinct-n on one random order per replicate). The
    human sides are drawn from a seed of their own, so every simulator sees the same human replicates
    (except for distinct-n, whose budget is the simulator's)."""
    replicates = _replicates(sides, name, seed, resamples)
    found = [_with_intervals(row, [rep[i] for rep in replicates]) for i, row in enumerate(rows)]
    summaries = percentile_interval([summary(c.distance for c in rep) for rep in replicates])
    controls = percentile_interval([summary(c.control_distance for c in rep) for rep in replicates])
    return found, summaries, controls


def _replicates(sides: Sides, name: str, seed: int, resamples: int) -> list[list[MeasureRow]]:
    """The rows of `resamples` bootstrap replicates of the four sides (`bootstrap_rows`)."""
    budget = min(tokens(s) for s in sides)
    rngs = [
        np.random.default_rng(derive_seed(seed, "bootstrap", who))
        for who in (f"simulator {name}", "human", "half A", "half B")
    ]
    replicates: list[list[MeasureRow]] = []
    for r in range(resamples):
        drawn = [
            merged(side.parts, rng.integers(0, len(side.parts), size=len(side.parts)))
            for side, rng in zip(sides, rngs, strict=True)
        ]
        replicates.append(
            measure_rows(
                drawn[0],
                drawn[1],
                drawn[2],
                drawn[3],
                derive_seed(seed, name, "replicate", r),
                budget=budget,
                draws=1,
            )
        )
    return replicates


def _with_intervals(row: MeasureRow, column: Sequence[MeasureRow]) -> MeasureRow:
    """`row` with the percentile intervals of its values over the replicates' rows of its measure."""
    return row.model_copy(
        update={
            "simulated_ci": percentile_interval([c.simulated for c in column]),
            "human_ci": percentile_interval([c.human for c in column]),
            "distance_ci": percentile_interval([c.distance for c in column]),
            "control_distance_ci": percentile_interval([c.control_distance for c in column]),
        }
    )
