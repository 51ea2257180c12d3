"""Paired comparisons between CRSs: every CRS of a run meets the same simulated users.

For one simulator and one metric, two CRSs A and B are compared on the users both met. A dialogue
is paired with the other CRS's dialogue of the same user, trial and occurrence (a user reused in a
run appears once per occurrence); a pair is dropped when either dialogue is not evaluable (broken by
the simulator or the infrastructure, `Dialogue.evaluable`) or has no value of the metric. A user's
kept pairs give one difference, the mean of their A − B differences, so users with several trials
do not count as several independent observations. Over those per-user differences:

- the difference: their mean, with a percentile-bootstrap interval that resamples users
  (`crsim.eval.stats.aggregate`);
- a paired test: for a 0/1 metric with one pair per user, the exact McNemar test (a binomial test
  on the discordant users, `scipy.stats.binomtest`); otherwise, up to 1,000 users, a sign-flip
  permutation test of the mean difference (`scipy.stats.permutation_test`, exact for up to 13 users),
  and above, where the permutation test costs seconds per pair and the central limit theorem holds,
  the paired t-test (`scipy.stats.ttest_1samp` on the differences);
- p-values corrected with Holm's method over the pairs of one simulator and metric
  (`statsmodels.stats.multitest.multipletests`);
- the smallest difference the run could detect with 80% power at alpha 0.05 (two-sided): the
  one-sample t-test effect size solved for n users (`statsmodels` `TTestPower`) times the standard
  deviation of the differences; and the users needed for a chosen difference;
- a ranking by mean in the metric's direction (higher or lower better, `Metric.direction`, as the
  run's summary.json records it) with significance groups (compact letter display: CRSs that share a
  letter are not significantly different after correction); a significant difference is a win for
  the CRS that is better by that direction, and a metric whose direction is "none" has no winner;
- per simulator and pair of CRSs, a verdict across metrics: wins, ties and losses, each resting on
  the Holm-corrected test of that metric.
- the run-to-run spread where the run has `--trials`: per CRS, the SD over trials of its mean.

Run folders are read column-wise (`read_columns`: integer codes per dialogue and a float per
dialogue and metric, never an object per dialogue, so a million dialogues fit in a few hundred MB);
`Observation` objects are for small collections built by hand. Both give the same numbers, bit for
bit (tests/studies/test_compare_columns.py).

docs/compare.md states the definitions and the validation (false-positive rate and power on
synthetic data, tests/studies/test_compare.py).
"""

from __future__ import annotations

import math
import string
import warnings
from array import array
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
from pydantic import BaseModel, Field

from crsim.core.errors import ConfigError
from crsim.eval.scores import ScoreRecord, iter_scores
from crsim.eval.stats import aggregate
from crsim.model import annotations as keys
from crsim.model.dialogue import Dialogue
from crsim.model.io import iter_dialogues
from crsim.model.run_folder.summary import Direction
from crsim.model.user import source_user_id

ALPHA = 0.05
POWER = 0.8
#: Sign flips drawn by the permutation test (all 2**n of them when that is fewer).
PERMUTATIONS = 9999

#: Users a pair needs before it is tested (with one, every test says p = 1).
MIN_USERS = 2

#: Above this many users, the paired t-test replaces the permutation test (see the module docstring).
PERMUTATION_MAX_USERS = 1000

TestName = Literal["mcnemar", "permutation", "t"]


# ---------------------------------------------------------------------------------------------
# Observations: one value per dialogue, with what pairs it


@dataclass(frozen=True)
class Observation:
    """One dialogue's value of one metric and what pairs it with other CRSs' dialogues."""

    crs: str
    simulator: str
    metric: str
    user: str
    unit: tuple[int, int]  # (trial, occurrence of this user and trial for this CRS × simulator)
    value: float | None
    evaluable: bool
    person: str | None = None  # whom the per-user difference belongs to; None: `user`

    @property
    def who(self) -> str:
        return self.person if self.person is not None else self.user


def person_of(user_id: str) -> str:
    """The person behind a simulated user id, the unit that differences are averaged over and the
    bootstrap resamples: a user reused under several ids (`--allow-reuse`) is one person, so
    `ml-7#2` is `ml-7` (`crsim.model.user.source_user_id`)."""
    return source_user_id(user_id)


@dataclass
class _DialogueInfo:
    crs: str
    simulator: str
    user: str | None
    unit: tuple[int, int]
    evaluable: bool


def _dialogue_infos(dialogues: Iterable[Dialogue], crs_suffix: str) -> dict[str, _DialogueInfo]:
    """Dialogue id -> how it pairs; occurrences counted per CRS × simulator × user × trial."""
    seen: dict[tuple[str, str, str, int], int] = defaultdict(int)
    infos: dict[str, _DialogueInfo] = {}
    for dialogue in dialogues:
        crs = (dialogue.crs_id or "") + crs_suffix
        simulator = dialogue.simulator_id or ""
        trial = keys.metadata(keys.TRIAL, dialogue) or 0
        user = dialogue.user_id
        occurrence = 0
        if user is not None:
            key = (crs, simulator, user, trial)
            occurrence = seen[key]
            seen[key] += 1
        infos[dialogue.id] = _DialogueInfo(crs, simulator, user, (trial, occurrence), dialogue.evaluable)
    return infos


def observations(
    dialogues: Iterable[Dialogue], scores: Iterable[ScoreRecord], *, crs_suffix: str = ""
) -> Iterator[Observation]:
    """One observation object per dialogue and metric label (turn-level values averaged per dialogue,
    as in the summaries); `crs_suffix` is added to CRS ids (e.g. " [run]" to tell runs apart).
    Dialogues without a user id cannot be paired and are left out; scores of unknown dialogues too.
    For small collections; a run folder of any size is read column-wise by `read_columns`."""
    infos = _dialogue_infos(dialogues, crs_suffix)
    values: dict[tuple[str, str], float | None] = {}
    turns: dict[tuple[str, str], list[float]] = {}
    for record in scores:  # one value kept per dialogue and metric, not the records
        info = infos.get(record.dialogue_id)
        if info is None or info.user is None:
            continue
        key = (record.dialogue_id, record.metric)
        if record.turn is None:
            values[key] = record.value
        else:
            turns.setdefault(key, [])
            if record.value is not None:
                turns[key].append(record.value)
    for key, present in turns.items():  # turn-level values: their mean, as `dialogue_value` does
        values[key] = float(np.mean(present)) if present else None
    for (dialogue_id, metric), value in values.items():
        info = infos[dialogue_id]
        if info.user is not None:  # always: others were left out above
            yield Observation(
                info.crs,
                info.simulator,
                metric,
                info.user,
                info.unit,
                value,
                info.evaluable,
                person_of(info.user),
            )


def read_observations(dialogues_path: Path, scores_path: Path, *, crs_suffix: str = "") -> list[Observation]:
    """Observation objects from a run's `dialogues.jsonl` and `scores.jsonl` (a Python object per
    dialogue and metric: for small runs; `read_columns` reads any run). Bad lines are DataErrors
    naming the file, the record and the field."""
    return list(observations(iter_dialogues(dialogues_path), iter_scores(scores_path), crs_suffix=crs_suffix))


# ---------------------------------------------------------------------------------------------
# Columns: the observations of one CRS under one simulator and metric as arrays


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


# ---------------------------------------------------------------------------------------------
# Reading run folders column-wise

#: Score records looked up together (their dialogue ids' hashes resolved in one vectorised step).
SCORE_BATCH = 65_536
#: Reading positions: runs apart, and within a run turn-level values after the dialogue-level ones.
_RUN_SHIFT, _TURN_SHIFT = 42, 41


class _HashedIds:
    """Dialogue id -> its position in the file, by the ids' hashes: an int64 per dialogue, no object.
    Only used when the hashes are distinct (`distinct`); an id not in the file resolves to -1."""

    def __init__(self, hashes: np.ndarray) -> None:
        self.order = np.argsort(hashes, kind="stable")
        self.sorted = hashes[self.order]
        self.distinct = not bool(np.any(self.sorted[1:] == self.sorted[:-1]))

    def resolve(self, hashes: np.ndarray) -> np.ndarray:
        if self.sorted.size == 0:
            return np.full(hashes.size, -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.sorted, hashes), self.sorted.size - 1)
        return np.where(self.sorted[at] == hashes, self.order[at], -1)


class _ColumnReader:
    """Reads run folders into `ObservationColumns`: one pass over `dialogues.jsonl` keeping integer
    codes, one over `scores.jsonl` keeping a float per dialogue and metric (`observations` semantics:
    the last dialogue-level value, the mean of the turn-level values, in the place first read)."""

    def __init__(self) -> None:
        self.names: dict[str, dict[str, int]] = {"crs": {}, "simulator": {}, "user": {}, "metric": {}}
        self.crs, self.simulator, self.user = array("i"), array("i"), array("q")
        self.trial, self.evaluable = array("q"), array("b")
        self.segments: dict[int, list[tuple[int, MetricColumn]]] = defaultdict(list)
        self.runs = 0

    def _code(self, kind: str, name: str) -> int:
        codes = self.names[kind]
        return codes.setdefault(name, len(codes))

    def add(self, dialogues_path: Path, scores_path: Path, crs_suffix: str) -> None:
        start = len(self.crs)
        hashes = array("q")
        for dialogue in iter_dialogues(dialogues_path):
            self.crs.append(self._code("crs", (dialogue.crs_id or "") + crs_suffix))
            self.simulator.append(self._code("simulator", dialogue.simulator_id or ""))
            user = dialogue.user_id
            self.user.append(-1 if user is None else self._code("user", user))
            self.trial.append(keys.metadata(keys.TRIAL, dialogue) or 0)
            self.evaluable.append(dialogue.evaluable)
            hashes.append(hash(dialogue.id))
        size = len(self.crs) - start
        ids = _HashedIds(_numbers(hashes, np.int64))
        by_id: dict[str, int] | None = None
        if not ids.distinct:  # a repeated id (or, rarely, a shared hash): a dict, the last one wins
            by_id = {dialogue.id: i for i, dialogue in enumerate(iter_dialogues(dialogues_path))}
        users = _numbers(self.user, np.int64)[start:]
        columns: dict[int, MetricColumn] = {}
        turns = _TurnValues()
        base = self.runs << _RUN_SHIFT
        batch = _ScoreBatch()
        line = 0
        for record in iter_scores(scores_path):
            ident = hash(record.dialogue_id) if by_id is None else by_id.get(record.dialogue_id, -1)
            batch.add(ident, self._code("metric", record.metric), record.value, record.turn is not None)
            if len(batch) >= SCORE_BATCH:
                line += batch.flush(ids if by_id is None else None, users, columns, turns, base + line, size)
                batch = _ScoreBatch()
        batch.flush(ids if by_id is None else None, users, columns, turns, base + line, size)
        turns.finish(columns, base + (1 << _TURN_SHIFT), size)
        for metric, column in columns.items():
            self.segments[metric].append((start, column))
        self.runs += 1

    def finish(self) -> ObservationColumns:
        size = len(self.crs)
        crs, simulator = _numbers(self.crs, np.int32), _numbers(self.simulator, np.int32)
        user, trial = _numbers(self.user, np.int64), _numbers(self.trial, np.int64)
        evaluable = _numbers(self.evaluable, np.int8).astype(bool)
        occurrence = _occurrences(crs, simulator, user, trial)
        key = np.zeros(0, dtype=np.int64)
        if size:
            key = np.unique(np.stack([user, trial, occurrence], axis=1), axis=0, return_inverse=True)[1]
        users = list(self.names["user"])
        persons = sorted({person_of(u) for u in users})
        person_code = {person: code for code, person in enumerate(persons)}
        of_user = np.array([person_code[person_of(u)] for u in users] + [-1], dtype=np.int64)
        values: dict[str, MetricColumn] = {}
        metric_names = list(self.names["metric"])
        firsts = []
        for metric, segments in self.segments.items():
            column = segments[0][1] if len(segments) == 1 and segments[0][1].order.size == size else None
            if column is None:
                column = MetricColumn.empty(size)
                for start, part in segments:
                    end = start + part.order.size
                    column.value[start:end], column.present[start:end] = part.value, part.present
                    column.order[start:end] = part.order
            seen = column.order[column.order >= 0]
            if seen.size:
                firsts.append((int(seen.min()), metric_names[metric], column))
        for _, name, column in sorted(firsts, key=lambda found: found[0]):
            values[name] = column
        return ObservationColumns(
            crs_names=list(self.names["crs"]),
            simulator_names=list(self.names["simulator"]),
            persons=persons,
            crs=crs,
            simulator=simulator,
            key=key.reshape(-1).astype(np.int64),
            person=of_user[user],  # -1 (the last entry) for dialogues without a user
            trial=trial,
            evaluable=evaluable,
            values=values,
        )


def _numbers(values: array[Any], dtype: type[np.generic]) -> np.ndarray:
    """A typed array as a numpy array (a view, no copy)."""
    return np.frombuffer(values, dtype=dtype) if len(values) else np.zeros(0, dtype=dtype)


def _occurrences(crs: np.ndarray, simulator: np.ndarray, user: np.ndarray, trial: np.ndarray) -> np.ndarray:
    """Per dialogue, how many dialogues before it in reading order share its CRS, simulator, user and
    trial (what pairs the n-th meeting of a user with one CRS with the n-th with another)."""
    order = np.lexsort((np.arange(crs.size), trial, user, simulator, crs))
    same = np.ones(max(crs.size - 1, 0), dtype=bool)
    for field_ in (crs, simulator, user, trial):
        ordered = field_[order]
        same &= ordered[1:] == ordered[:-1]
    new = np.r_[True, ~same] if crs.size else np.zeros(0, dtype=bool)
    starts = np.flatnonzero(new)
    sizes = np.diff(np.append(starts, crs.size))
    ranks = np.arange(crs.size) - np.repeat(starts, sizes)
    occurrence = np.empty(crs.size, dtype=np.int64)
    occurrence[order] = ranks
    return occurrence


class _ScoreBatch:
    """Score records awaiting their dialogues: an id hash (or position), metric code, value and flags."""

    def __init__(self) -> None:
        self.ident, self.metric, self.value, self.flags = array("q"), array("i"), array("d"), array("b")

    def __len__(self) -> int:
        return len(self.ident)

    def add(self, ident: int, metric: int, value: float | None, turn: bool) -> None:
        self.ident.append(ident)
        self.metric.append(metric)
        self.value.append(math.nan if value is None else value)
        self.flags.append((value is not None) | (turn << 1))

    def flush(
        self,
        ids: _HashedIds | None,
        users: np.ndarray,
        columns: dict[int, MetricColumn],
        turns: _TurnValues,
        first: int,
        size: int,
    ) -> int:
        """Put the batch's values into `columns` (the turn-level ones into `turns`), the batch's
        first record at reading position `first`; returns the records flushed."""
        count = len(self.ident)
        if not count:
            return 0
        ident = np.frombuffer(self.ident, dtype=np.int64)
        code = ident if ids is None else ids.resolve(ident)
        metric = np.frombuffer(self.metric, dtype=np.int32)
        value = np.frombuffer(self.value, dtype=np.float64)
        flags = np.frombuffer(self.flags, dtype=np.int8)
        known = code >= 0
        known[known] = users[code[known]] >= 0  # a dialogue without a user cannot be paired
        turn = (flags & 2) != 0
        present = (flags & 1) != 0
        whole = known & ~turn
        for m in np.unique(metric[whole]):
            at = np.flatnonzero(whole & (metric == m))
            column = columns.setdefault(int(m), MetricColumn.empty(size))
            codes = code[at]
            dialogues, firsts = np.unique(codes, return_index=True)
            last = codes.size - 1 - np.unique(codes[::-1], return_index=True)[1]  # the last value wins
            column.value[dialogues] = value[at[last]]
            column.present[dialogues] = present[at[last]]
            fresh = column.order[dialogues] < 0  # the place is where the value was first read
            column.order[dialogues[fresh]] = first + at[firsts[fresh]]
        at = np.flatnonzero(known & turn)
        turns.add(code[at], metric[at], value[at], present[at])
        return count


class _TurnValues:
    """Turn-level values, in reading order, until each dialogue's mean can be taken."""

    def __init__(self) -> None:
        self.code, self.metric, self.value, self.present = array("q"), array("i"), array("d"), array("b")

    def add(self, code: np.ndarray, metric: np.ndarray, value: np.ndarray, present: np.ndarray) -> None:
        self.code.frombytes(code.astype(np.int64).tobytes())
        self.metric.frombytes(metric.astype(np.int32).tobytes())
        self.value.frombytes(value.astype(np.float64).tobytes())
        self.present.frombytes(present.astype(np.int8).tobytes())

    def finish(self, columns: dict[int, MetricColumn], first: int, size: int) -> None:
        """Each dialogue's mean of its turn values of a metric (None without one) replaces its
        dialogue-level value; a dialogue without one takes its place from its first turn record."""
        if not len(self.code):
            return
        group = np.frombuffer(self.metric, dtype=np.int32).astype(np.int64) * max(size, 1) + np.frombuffer(
            self.code, dtype=np.int64
        )
        order = np.argsort(group, kind="stable")  # groups, each in reading order
        grouped = group[order]
        starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
        ids = np.repeat(np.arange(starts.size), np.diff(np.append(starts, grouped.size)))
        present = np.frombuffer(self.present, dtype=np.int8)[order].astype(bool)
        values = np.frombuffer(self.value, dtype=np.float64)[order][present]
        counts = np.bincount(ids[present], minlength=starts.size)
        means = np.full(starts.size, math.nan)
        has = counts > 0
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
        means[has] = _group_means(values, offsets[has], counts[has])
        metric, dialogue = np.divmod(grouped[starts], max(size, 1))
        for m in np.unique(metric):
            at = np.flatnonzero(metric == m)
            column = columns.setdefault(int(m), MetricColumn.empty(size))
            rows = dialogue[at]
            column.value[rows], column.present[rows] = means[at], has[at]
            fresh = column.order[rows] < 0
            column.order[rows[fresh]] = first + order[starts[at[fresh]]]


def _group_means(values: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
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


def _pair_means(values: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
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


def read_columns(runs: Iterable[tuple[Path, Path, str]]) -> ObservationColumns:
    """The observations of runs, each given as (`dialogues.jsonl`, `scores.jsonl`, CRS suffix),
    column-wise: what `read_observations` gives, in a few bytes per dialogue and metric. Bad lines
    are DataErrors naming the file, the record and the field."""
    reader = _ColumnReader()
    for dialogues_path, scores_path, crs_suffix in runs:
        reader.add(dialogues_path, scores_path, crs_suffix)
    return reader.finish()


# ---------------------------------------------------------------------------------------------
# Pairing


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
    means = _pair_means(values, starts, counts)
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


# ---------------------------------------------------------------------------------------------
# Tests, power and groups


def _mean_last_axis(x: np.ndarray, axis: int = -1) -> Any:
    return np.mean(x, axis=axis)


def permutation_pvalues(differences: np.ndarray, *, seed: int = 0, resamples: int = PERMUTATIONS) -> Any:
    """Two-sided sign-flip permutation test of mean difference = 0, along the last axis (so many
    samples can be tested at once); exact when 2**n <= resamples. Returns the p-value(s)."""
    from scipy.stats import permutation_test

    result = permutation_test(
        (differences,),
        _mean_last_axis,
        permutation_type="samples",
        vectorized=True,
        n_resamples=resamples,
        batch=max(1, 4_000_000 // max(1, differences.size)),  # bounded memory, same result
        alternative="two-sided",
        axis=-1,
        rng=np.random.default_rng(seed),
    )
    return result.pvalue


def ttest_pvalues(differences: np.ndarray) -> Any:
    """Two-sided paired t-test (one-sample t-test of the differences against 0), along the last axis;
    p = 1 for differences that are all 0."""
    from scipy.stats import ttest_1samp

    with np.errstate(invalid="ignore", divide="ignore"):
        p = ttest_1samp(differences, 0.0, axis=-1).pvalue
    return np.where(np.isnan(p), 1.0, p)


def paired_test(differences: np.ndarray, *, seed: int = 0) -> tuple[TestName, float]:
    """The test for continuous per-user differences: sign-flip permutation up to
    `PERMUTATION_MAX_USERS` users, the paired t-test above."""
    if differences.size <= PERMUTATION_MAX_USERS:
        return "permutation", float(permutation_pvalues(differences, seed=seed))
    return "t", float(ttest_pvalues(differences))


def mcnemar_pvalue(differences: np.ndarray) -> float:
    """Exact McNemar test for paired 0/1 outcomes: the users where A succeeded and B did not
    (difference +1) against the reverse (-1), binomial with p = 1/2; 1.0 with no discordant user."""
    from scipy.stats import binomtest

    wins, losses = int(np.sum(differences > 0)), int(np.sum(differences < 0))
    if wins + losses == 0:
        return 1.0
    return float(binomtest(wins, wins + losses, 0.5, alternative="two-sided").pvalue)


@contextmanager
def _quiet_solver() -> Iterator[None]:
    """Silence statsmodels' ConvergenceWarning where its power solver finds no root (it returns nan,
    which the callers turn into None). Its warnings module is imported first: on import it installs
    an "always" filter that would otherwise land in front of ours."""
    import statsmodels.tools.sm_exceptions as sm_exceptions

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sm_exceptions.ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def min_detectable(sd: float | None, n: int, *, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The smallest mean difference a two-sided paired t-test on n users detects with `power`:
    the effect size solved by statsmodels' TTestPower, times the SD of the differences."""
    if sd is None or n < 2 or sd <= 0:
        return None
    from statsmodels.stats.power import TTestPower

    with _quiet_solver():
        effect = float(
            np.ravel(
                TTestPower().solve_power(
                    effect_size=None, nobs=n, alpha=alpha, power=power, alternative="two-sided"
                )
            )[0]
        )
    return effect * sd if math.isfinite(effect) else None


def users_needed(
    difference: float, sd: float | None, *, alpha: float = ALPHA, power: float = POWER
) -> int | None:
    """Users needed to detect `difference` with `power` (two-sided paired t-test, SD of the
    differences as observed); None when it cannot be said (no spread, no difference)."""
    if sd is None or sd <= 0 or difference == 0 or not math.isfinite(difference):
        return None
    from statsmodels.stats.power import TTestPower

    with _quiet_solver():
        try:
            n = TTestPower().solve_power(
                effect_size=abs(difference) / sd, nobs=None, alpha=alpha, power=power, alternative="two-sided"
            )
        except (ValueError, RuntimeError):
            return None
    n = float(np.ravel(n)[0])
    return math.ceil(n) if math.isfinite(n) else None


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


# ---------------------------------------------------------------------------------------------
# Results


class PairResult(BaseModel):
    """CRS A against CRS B on one metric under one simulator; differences are A − B."""

    simulator: str
    metric: str
    crs_a: str
    crs_b: str
    n_users: int = Field(description="Users with at least one kept pair: the n of every statistic here.")
    n_pairs: int = Field(description="Dialogue pairs kept (more than n_users with trials or reuse).")
    dropped_not_evaluable: int = Field(description="Pairs dropped: a dialogue was not evaluable.")
    dropped_missing: int = Field(description="Pairs dropped: a value was missing (not applicable/failed).")
    unmatched: int = Field(description="Dialogues whose user/trial the other CRS did not meet.")
    mean_a: float | None
    mean_b: float | None
    difference: float | None = Field(description="Mean over users of the per-user difference A − B.")
    ci_low: float | None = Field(description="Percentile-bootstrap interval, resampling users.")
    ci_high: float | None
    sd: float | None = Field(description="Standard deviation (ddof=1) of the per-user differences.")
    test: TestName | None = Field(
        description="mcnemar (0/1 metric, one pair per user), permutation (up to 1,000 users) or t "
        "(paired t-test, more users); None below two users."
    )
    p_value: float | None
    p_holm: float | None = Field(description="Holm-corrected over the pairs of this simulator and metric.")
    significant: bool = Field(description="p_holm < alpha.")
    min_detectable: float | None = Field(description="Smallest difference detectable at the given power.")
    users_for_observed: int | None = Field(description="Users needed to detect the observed difference.")
    users_for_target: int | None = Field(None, description="Users needed to detect the chosen --detect.")
    winner: str | None = Field(
        None,
        description="The CRS better by the metric's direction when the difference is significant; "
        "None when it is not, or when the metric has no direction.",
    )


class RankEntry(BaseModel):
    """One CRS's place under one simulator and metric; CRSs that share a letter are not
    significantly different."""

    crs: str
    mean: float | None = Field(description="Mean over its users of their mean value (evaluable only).")
    n_users: int
    rank: int
    group: str
    trials: int = Field(1, description="Trials the CRS's dialogues came from (`--trials`).")
    trial_sd: float | None = Field(
        None,
        description="Run-to-run spread: the standard deviation (ddof=1) over trials of the CRS's mean; "
        "None with one trial.",
    )


class MetricComparison(BaseModel):
    simulator: str
    metric: str
    direction: Direction = Field(
        description="Which way is better (ranking order and winners); 'none': ordered by value, no winner."
    )
    direction_recorded: bool = Field(
        description="False when the run's summary did not record the metric's direction (read as higher)."
    )
    pairs: list[PairResult]
    ranking: list[RankEntry]


class VerdictEntry(BaseModel):
    """One metric of a verdict: who won, on which test."""

    metric: str
    direction: Direction
    winner: str | None = Field(description="The better CRS when significant; None: a tie or no direction.")
    difference: float | None = Field(description="Mean per-user difference A − B.")
    p_holm: float | None = Field(description="The Holm-corrected p-value the outcome rests on.")
    test: TestName | None


class Verdict(BaseModel):
    """Two CRSs under one simulator across the metrics: significant wins each way and ties; metrics
    without a direction are listed but not counted."""

    simulator: str
    crs_a: str
    crs_b: str
    wins_a: int
    wins_b: int
    ties: int = Field(description="Metrics with a direction where the difference is not significant.")
    undirected: int = Field(description="Metrics without a direction (not counted either way).")
    metrics: list[VerdictEntry]


class ComparisonOptions(BaseModel):
    baseline: str | None = Field(None, description="Compare every CRS with this one only.")
    metrics: list[str] | None = Field(None, description="Metric labels; None = all that were scored.")
    alpha: float = Field(ALPHA, gt=0, lt=1)
    power: float = Field(POWER, gt=0, lt=1)
    confidence: float = Field(0.95, gt=0, lt=1)
    detect: float | None = Field(None, gt=0, description="A difference to compute the users needed for.")
    seed: int = 0


class Comparison(BaseModel):
    options: ComparisonOptions
    results: list[MetricComparison]
    verdicts: list[Verdict] = Field(default_factory=list, description="Per simulator and pair of CRSs.")


def compare_pair(
    key: tuple[str, str, str, str],
    a: Column | Sequence[Observation],
    b: Column | Sequence[Observation],
    options: ComparisonOptions,
) -> tuple[PairResult, PairedSample]:
    """The statistics of one pair, `key` = (simulator, metric, CRS A, CRS B), before correction
    (p_holm and significant are filled in by `compare_metric`)."""
    sample = pair(a, b)
    d = sample.differences
    summary = aggregate(list(d), seed=options.seed, confidence=options.confidence)
    test: TestName | None = None
    p: float | None = None
    if d.size >= MIN_USERS:
        if sample.binary and sample.one_per_user:
            test, p = "mcnemar", mcnemar_pvalue(d)
        else:
            test, p = paired_test(d, seed=options.seed)
    difference = summary.mean
    return (
        PairResult(
            simulator=key[0],
            metric=key[1],
            crs_a=key[2],
            crs_b=key[3],
            n_users=int(d.size),
            n_pairs=sample.pairs,
            dropped_not_evaluable=sample.not_evaluable,
            dropped_missing=sample.missing,
            unmatched=sample.unmatched,
            mean_a=float(sample.a.mean()) if d.size else None,
            mean_b=float(sample.b.mean()) if d.size else None,
            difference=difference,
            ci_low=summary.ci_low,
            ci_high=summary.ci_high,
            sd=summary.std,
            test=test,
            p_value=p,
            p_holm=None,
            significant=False,
            min_detectable=min_detectable(summary.std, int(d.size), alpha=options.alpha, power=options.power),
            users_for_observed=users_needed(
                difference or 0.0, summary.std, alpha=options.alpha, power=options.power
            ),
            users_for_target=None
            if options.detect is None
            else users_needed(options.detect, summary.std, alpha=options.alpha, power=options.power),
        ),
        sample,
    )


def holm(p_values: Sequence[float], alpha: float = ALPHA) -> list[float]:
    """Holm-adjusted p-values (statsmodels' multipletests)."""
    if not p_values:
        return []
    from statsmodels.stats.multitest import multipletests

    return [float(p) for p in multipletests(list(p_values), alpha=alpha, method="holm")[1]]


def _in_first_seen_order(codes: np.ndarray) -> np.ndarray:
    """Per entry, the rank of its code among the distinct codes in the order first seen."""
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    found: np.ndarray = rank[inverse.reshape(-1)]
    return found


def _user_means(column: Column) -> tuple[float | None, int]:
    """The mean over persons (in the order first seen) of each one's mean evaluable value, and
    the number of persons."""
    kept = column.evaluable & column.present
    if not kept.any():
        return None, 0
    group = _in_first_seen_order(column.person[kept])
    order = np.argsort(group, kind="stable")
    counts = np.bincount(group)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    means = _group_means(column.value[kept][order], starts, counts)
    return float(np.mean(means)), int(means.size)


def trial_spread(observations: Column | Sequence[Observation]) -> tuple[int, float | None]:
    """The trials of a CRS's observations and the SD over trials of its mean (each trial's mean taken
    as the CRS's mean is, over its users); None below two trials."""
    column = observations if isinstance(observations, Column) else columns_of(observations)[0]
    trial = _in_first_seen_order(column.trial) if column.trial.size else column.trial
    trials = int(trial.max()) + 1 if trial.size else 0
    found = (_user_means(column.take(np.flatnonzero(trial == t)))[0] for t in range(trials))
    means = [m for m in found if m is not None]
    return trials, (float(np.std(means, ddof=1)) if len(means) >= 2 else None)


def compare_metric(
    simulator: str,
    metric: str,
    by_crs: Mapping[str, Column],
    options: ComparisonOptions,
    direction: Direction | None = None,
) -> MetricComparison | None:
    """All pairs (or baseline × others) of the CRSs of one simulator and metric, Holm-corrected,
    the winner of each by the metric's `direction` (None: not recorded, read as higher) and the
    ranking with letter groups; None with fewer than two CRSs."""
    recorded = direction is not None
    direction = direction or "higher"
    names = sorted(by_crs)
    if len(names) < 2:
        return None
    if options.baseline is not None:
        if options.baseline not in by_crs:
            return None
        pairs = [(options.baseline, other) for other in names if other != options.baseline]
    else:
        pairs = list(combinations(names, 2))
    results = [compare_pair((simulator, metric, x, y), by_crs[x], by_crs[y], options)[0] for x, y in pairs]
    tested = [r for r in results if r.p_value is not None]
    for result, adjusted in zip(
        tested, holm([r.p_value for r in tested if r.p_value is not None]), strict=True
    ):
        result.p_holm = adjusted
        result.significant = adjusted < options.alpha
        if result.significant and direction != "none" and result.difference:
            a_better = (result.difference > 0) == (direction == "higher")
            result.winner = result.crs_a if a_better else result.crs_b
    means = {name: _user_means(by_crs[name]) for name in names}
    sign = 1.0 if direction == "lower" else -1.0  # "none" is ordered by value, highest first

    def score(name: str) -> float:
        mean = means[name][0]
        return math.inf if mean is None else sign * mean

    order = sorted(names, key=lambda n: (score(n), n))
    different = [(r.crs_a, r.crs_b) for r in results if r.significant]
    letters = letter_groups(order, different) if options.baseline is None else {}
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
                group=letters.get(name, ""),
                trials=trials,
                trial_sd=spread,
            )
        )
    return MetricComparison(
        simulator=simulator,
        metric=metric,
        direction=direction,
        direction_recorded=recorded,
        pairs=results,
        ranking=ranking,
    )


def verdicts(results: Sequence[MetricComparison]) -> list[Verdict]:
    """Per simulator and pair of CRSs, the metrics' outcomes: wins each way, ties, undirected."""
    found: dict[tuple[str, str, str], Verdict] = {}
    for comparison in results:
        for result in comparison.pairs:
            key = (comparison.simulator, result.crs_a, result.crs_b)
            if key not in found:
                found[key] = Verdict(
                    simulator=key[0],
                    crs_a=key[1],
                    crs_b=key[2],
                    wins_a=0,
                    wins_b=0,
                    ties=0,
                    undirected=0,
                    metrics=[],
                )
            verdict = found[key]
            if comparison.direction == "none":
                verdict.undirected += 1
            elif result.winner == result.crs_a:
                verdict.wins_a += 1
            elif result.winner == result.crs_b:
                verdict.wins_b += 1
            else:
                verdict.ties += 1
            verdict.metrics.append(
                VerdictEntry(
                    metric=comparison.metric,
                    direction=comparison.direction,
                    winner=result.winner,
                    difference=result.difference,
                    p_holm=result.p_holm,
                    test=result.test,
                )
            )
    return list(found.values())


def compare(
    observations: Iterable[Observation] | Cells,
    options: ComparisonOptions | None = None,
    directions: Mapping[str, Direction] | None = None,
) -> Comparison:
    """Paired comparisons per simulator and metric (in the order first seen) between the CRSs, and
    the verdicts across metrics; `observations` are objects or columns (`read_columns`).
    `directions`: metric label -> which way is better (a label not in it is read as higher better,
    and said so).

    An unknown `options.metrics` label or baseline is a ConfigError naming what there is."""
    options = options or ComparisonOptions()
    cells = cells_of(observations)
    metrics = cells.metrics
    wanted = options.metrics if options.metrics is not None else list(metrics)
    unknown = [m for m in wanted if m not in metrics]
    if unknown:
        raise ConfigError(
            f"--metrics: no scores for {', '.join(unknown)}; the runs have {', '.join(metrics) or 'none'}"
        )
    crss = cells.crss
    if options.baseline is not None and options.baseline not in crss:
        raise ConfigError(f"--baseline: no CRS {options.baseline!r}; the runs have {', '.join(sorted(crss))}")
    results = []
    for simulator in cells.simulators:
        for metric in wanted:
            direction = (directions or {}).get(metric)
            found = compare_metric(simulator, metric, cells.cell(simulator, metric), options, direction)
            if found is not None:
                results.append(found)
    return Comparison(options=options, results=results, verdicts=verdicts(results))
