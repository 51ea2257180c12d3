"""Observations as arrays: a CRS's `Column` under one simulator and metric, and the `Cells` that hand
out those columns per simulator and metric, from observation objects (`ObservationList`) or from run
folders read column-wise (`ObservationColumns`, filled by `crsim.studies.compare.reader`)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from crsim.studies.compare.observation import Observation


@dataclass(frozen=True)
class Column:
    """One CRS's observations under one simulator and one metric, in reading order: for each
    dialogue what an `Observation` holds, as arrays (a few bytes per dialogue, no object)."""

    key: np.ndarray  # int64: code of (user, trial, occurrence), alike across the CRSs compared
    person: np.ndarray  # int64: code of `Observation.who`; the codes sort as the ids do
    trial: np.ndarray  # int64
    value: np.ndarray  # float64, NaN where the value is None
    present: np.ndarray  # bool: the value is not None
    evaluable: np.ndarray  # bool
    persons: Sequence[str]  # person code -> id

    def take(self, index: np.ndarray) -> Column:
        """The observations at `index`, in its order."""
        return Column(
            self.key[index],
            self.person[index],
            self.trial[index],
            self.value[index],
            self.present[index],
            self.evaluable[index],
            self.persons,
        )


def columns_of(*groups: Sequence[Observation]) -> list[Column]:
    """Lists of observation objects as columns coded alike (their keys and persons compare)."""
    codes: dict[tuple[str, tuple[int, int]], int] = {}
    persons = sorted({o.who for group in groups for o in group})
    person_code = {person: code for code, person in enumerate(persons)}
    return [
        Column(
            np.array([codes.setdefault((o.user, o.unit), len(codes)) for o in group], dtype=np.int64),
            np.array([person_code[o.who] for o in group], dtype=np.int64),
            np.array([o.unit[0] for o in group], dtype=np.int64),
            np.array([math.nan if o.value is None else o.value for o in group], dtype=np.float64),
            np.array([o.value is not None for o in group], dtype=bool),
            np.array([o.evaluable for o in group], dtype=bool),
            persons,
        )
        for group in groups
    ]


class Cells(Protocol):
    """Observations grouped for comparison: per simulator and metric, each CRS's column."""

    @property
    def metrics(self) -> list[str]:
        """Metric labels in the order they were first read."""
        ...

    @property
    def crss(self) -> set[str]: ...

    @property
    def simulators(self) -> list[str]:
        """Simulators with an observation, sorted."""
        ...

    def cell(self, simulator: str, metric: str) -> dict[str, Column]: ...


class ObservationList:
    """`Cells` of observation objects (tests, studies that build observations themselves)."""

    def __init__(self, observations: Iterable[Observation]) -> None:
        self._cells: dict[tuple[str, str], dict[str, list[Observation]]] = defaultdict(dict)
        self.crss: set[str] = set()
        metrics: dict[str, None] = {}
        for o in observations:
            self._cells[(o.simulator, o.metric)].setdefault(o.crs, []).append(o)
            self.crss.add(o.crs)
            metrics.setdefault(o.metric)
        self.metrics = list(metrics)
        self.simulators = sorted({simulator for simulator, _ in self._cells})

    def cell(self, simulator: str, metric: str) -> dict[str, Column]:
        found = self._cells.get((simulator, metric), {})
        return dict(zip(found, columns_of(*found.values()), strict=True))


@dataclass
class MetricColumn:
    """One metric's value for every dialogue of `ObservationColumns`."""

    value: np.ndarray  # float64, NaN where None or absent
    present: np.ndarray  # bool: a value that is not None
    order: np.ndarray  # int64: where the dialogue's value was first read; -1: no value read

    @classmethod
    def empty(cls, size: int) -> MetricColumn:
        return cls(np.full(size, math.nan), np.zeros(size, dtype=bool), np.full(size, -1, dtype=np.int64))


@dataclass
class ObservationColumns:
    """`Cells` of run folders, column-wise: the pairing facts of every dialogue once (integer codes),
    and per metric one value per dialogue. A dialogue costs a few dozen bytes plus 17 per metric."""

    crs_names: list[str]
    simulator_names: list[str]
    persons: list[str]  # sorted: person codes sort as the ids do
    crs: np.ndarray  # per dialogue, int32 codes
    simulator: np.ndarray
    key: np.ndarray  # int64 code of (user, trial, occurrence)
    person: np.ndarray  # int64
    trial: np.ndarray  # int64
    evaluable: np.ndarray  # bool
    values: dict[str, MetricColumn]  # in the order the metrics were first read

    @property
    def metrics(self) -> list[str]:
        return list(self.values)

    def _observed(self) -> np.ndarray:
        found = np.zeros(self.crs.size, dtype=bool)
        for column in self.values.values():
            found |= column.order >= 0
        return found

    @property
    def crss(self) -> set[str]:
        return {self.crs_names[c] for c in np.unique(self.crs[self._observed()])}

    @property
    def simulators(self) -> list[str]:
        return sorted(self.simulator_names[s] for s in np.unique(self.simulator[self._observed()]))

    def cell(self, simulator: str, metric: str) -> dict[str, Column]:
        column = self.values.get(metric)
        if column is None or simulator not in self.simulator_names:
            return {}
        seen = np.flatnonzero((column.order >= 0) & (self.simulator == self.simulator_names.index(simulator)))
        seen = seen[np.argsort(column.order[seen], kind="stable")]  # the order the values were read
        crs = self.crs[seen]
        found = {}
        for code in np.unique(crs):
            index = seen[crs == code]
            found[self.crs_names[code]] = Column(
                self.key[index],
                self.person[index],
                self.trial[index],
                column.value[index],
                column.present[index],
                self.evaluable[index],
                self.persons,
            )
        return found


def cells_of(observations: Iterable[Observation] | Cells) -> Cells:
    if isinstance(observations, ObservationColumns | ObservationList):
        return observations
    return ObservationList(observations)  # type: ignore[arg-type]
