"""Per-turn curves: the population mean of a per-turn metric at turns 1..horizon, per CRS × simulator.

`turn_curves` averages a list of dialogues at once; `CurveBuilder` builds the same curves batch by
batch from running sums (what `crsim evaluate` writes into `summary.json`), never holding the
dialogues.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
from pydantic import BaseModel

from crsim.core.errors import ConfigError
from crsim.eval.metrics.base import Evaluator, Metric, PerTurnMetric
from crsim.eval.scores import GroupKey
from crsim.model.dialogue import Dialogue
from crsim.model.run_folder.summary import GroupCurve

__all__ = ["CurveBuilder", "TurnCurve", "turn_curves"]


class TurnCurve(BaseModel):
    """A per-turn metric averaged over a population: `mean[t-1]` over the `n[t-1]` defined values."""

    metric: str
    mean: list[float | None]
    n: list[int]


def turn_curves(dialogues: Iterable[Dialogue], metric: Metric, max_turns: int) -> TurnCurve:
    """Population mean of a per-turn metric at turns 1..max_turns (e.g. PEPPER's PC_t curve), over
    the evaluable dialogues (those the simulator or the infrastructure broke are left out)."""
    if not isinstance(metric, PerTurnMetric):
        raise ConfigError(f"metric {metric.label!r} has no per-turn values; use recall, pc, pcir or jaccard")
    rows = [metric.per_turn(d, max_turns) for d in dialogues if d.evaluable]
    table = np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=float)
    table = table.reshape(len(rows), max_turns)
    defined = ~np.isnan(table)
    counts = defined.sum(axis=0)
    sums = np.where(defined, table, 0.0).sum(axis=0)
    means = [float(s / c) if c else None for s, c in zip(sums, counts, strict=True)]
    return TurnCurve(metric=metric.label, mean=means, n=[int(c) for c in counts])


#: Rows of per-turn values a `CurveBuilder` keeps per curve before adding them to its sums.
_CURVE_BLOCK = 500


class CurveBuilder:
    """Per-turn curves (turns 1..horizon) of the per-turn metrics per CRS × simulator, built batch by
    batch over the evaluable dialogues: running sums and counts, never the dialogues themselves."""

    def __init__(self, metrics: Sequence[Metric | Evaluator], horizon: int) -> None:
        self.metrics = [m for m in metrics if isinstance(m, PerTurnMetric)]
        self.horizon = horizon
        #: (group, label) -> per-turn rows without a None, not yet added to the sums (`_flush`).
        self._rows: dict[tuple[GroupKey, str], list[list[float | None]]] = {}
        #: (group, label) -> per turn: sum of the values, sum of their squares, how many there are.
        self._sums: dict[tuple[GroupKey, str], list[float]] = {}
        self._counts: dict[tuple[GroupKey, str], list[int]] = {}
        self._squares: dict[tuple[GroupKey, str], list[float]] = {}

    def add(self, dialogues: Iterable[Dialogue]) -> None:
        for dialogue in dialogues:
            self.add_one(dialogue)

    def add_one(self, dialogue: Dialogue) -> None:
        if not dialogue.evaluable:  # broken by the simulator or the infrastructure
            return
        group = (dialogue.crs_id, dialogue.simulator_id)
        horizon = self.horizon
        for metric in self.metrics:
            key = (group, metric.label)
            if key not in self._sums:
                self._sums[key] = [0.0] * horizon
                self._counts[key] = [0] * horizon
                self._squares[key] = [0.0] * horizon
                self._rows[key] = []
            row = metric.per_turn(dialogue, horizon)
            if len(row) == horizon and None not in row:  # the common case: summed a block at a time
                rows = self._rows[key]
                rows.append(row)
                if len(rows) >= _CURVE_BLOCK:
                    self._flush(key)
                continue
            self._flush(key)  # the values before this row are summed first, in order
            sums, squares, counts = self._sums[key], self._squares[key], self._counts[key]
            for index, value in enumerate(row):
                if value is not None:
                    sums[index] += value
                    squares[index] += value * value
                    counts[index] += 1

    def _flush(self, key: tuple[GroupKey, str]) -> None:
        """Add the rows kept for `key` to its sums: running sums down each turn's column
        (`numpy.cumsum`), the same additions in the same order as one row at a time."""
        rows = self._rows[key]
        if not rows:
            return
        block = np.array(rows, dtype=float)
        for totals, values in ((self._sums[key], block), (self._squares[key], block * block)):
            totals[:] = np.cumsum(np.vstack([np.array(totals, dtype=float), values]), axis=0)[-1].tolist()
        self._counts[key] = [count + len(rows) for count in self._counts[key]]
        rows.clear()

    def curves(self) -> list[GroupCurve]:
        for key in self._rows:
            self._flush(key)
        found = []
        for (group, label), sums in self._sums.items():
            counts = self._counts[(group, label)]
            squares = self._squares[(group, label)]
            found.append(
                GroupCurve(
                    crs_id=group[0],
                    simulator_id=group[1],
                    metric=label,
                    mean=[float(s / c) if c else None for s, c in zip(sums, counts, strict=True)],
                    n=[int(c) for c in counts],
                    sd=[_sample_sd(s, q, int(c)) for s, q, c in zip(sums, squares, counts, strict=True)],
                )
            )
        return sorted(found, key=lambda c: (c.crs_id or "", c.simulator_id or "", c.metric))


def _sample_sd(total: float, squares: float, count: int) -> float | None:
    """The sample SD (ddof=1) of `count` values from their sum and sum of squares; None below two."""
    if count < 2:
        return None
    mean = total / count
    return math.sqrt(max(0.0, (squares - count * mean * mean) / (count - 1)))
