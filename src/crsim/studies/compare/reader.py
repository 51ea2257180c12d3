"""Reading run folders column-wise (`read_columns`): integer codes per dialogue and a float per
dialogue and metric, never an object per dialogue, so a million dialogues fit in a few hundred MB.
The numbers are those of `observations`, bit for bit (tests/studies/test_compare_columns.py)."""

from __future__ import annotations

import math
from array import array
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from crsim.eval.scores import iter_scores
from crsim.model import annotations as keys
from crsim.model.io import iter_dialogues
from crsim.studies.compare.columns import MetricColumn, ObservationColumns
from crsim.studies.compare.means import group_means
from crsim.studies.compare.observation import person_of

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
        means[has] = group_means(values, offsets[has], counts[has])
        metric, dialogue = np.divmod(grouped[starts], max(size, 1))
        for m in np.unique(metric):
            at = np.flatnonzero(metric == m)
            column = columns.setdefault(int(m), MetricColumn.empty(size))
            rows = dialogue[at]
            column.value[rows], column.present[rows] = means[at], has[at]
            fresh = column.order[rows] < 0
            column.order[rows[fresh]] = first + order[starts[at[fresh]]]


def read_columns(runs: Iterable[tuple[Path, Path, str]]) -> ObservationColumns:
    """The observations of runs, each given as (`dialogues.jsonl`, `scores.jsonl`, CRS suffix),
    column-wise: what `read_observations` gives, in a few bytes per dialogue and metric. Bad lines
    are DataErrors naming the file, the record and the field."""
    reader = _ColumnReader()
    for dialogues_path, scores_path, crs_suffix in runs:
        reader.add(dialogues_path, scores_path, crs_suffix)
    return reader.finish()
