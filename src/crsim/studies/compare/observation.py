"""Observations: one dialogue's value of one metric, with the user, trial and occurrence that pair it
with the other CRSs' dialogues; built from dialogues and score records, for small collections."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from crsim.eval.scores import ScoreRecord, iter_scores
from crsim.model import annotations as keys
from crsim.model.dialogue import Dialogue
from crsim.model.io import iter_dialogues
from crsim.model.user import source_user_id


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
