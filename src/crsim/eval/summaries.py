"""Summaries per CRS × simulator: counts, terminations, faults and each metric's aggregate.

`SummaryBuilder` folds score records (or, from the streaming evaluation, metric values) batch by
batch into compact per-group state (one float per dialogue and metric, the user's integer code for
the cluster bootstrap), never the records; `summarize` does it in one go; `write_summary` writes
`summary.json`.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

from crsim.eval.scores import NOT_EVALUABLE, GroupKey, Outcome, trusted_record
from crsim.eval.stats import aggregate_coded
from crsim.model.annotations import AMBIGUOUS_LINKS, annotation
from crsim.model.dialogue import UNEVALUABLE_FAULTS, Dialogue, Role, Termination, TerminationReason
from crsim.model.run_folder.scores import GroupSummary, ScoreRecord
from crsim.model.run_folder.summary import GroupCurve, MetricInfo, write_summary_file
from crsim.model.user import source_user_id

if TYPE_CHECKING:
    from crsim.model.run_folder.summary import FileFingerprint

__all__ = ["SummaryBuilder", "dialogue_value", "order_metrics", "summarize", "write_summary"]


def _per_dialogue(
    records: list[ScoreRecord],
) -> dict[str, list[tuple[str, float | None, str | None]]]:
    """Metric label -> one (dialogue id, value, missing reason) per dialogue, in record order.

    A dialogue-level record passes through; the turn-level records of a dialogue become one value,
    the mean of its present turn values (None, with the first reason given, when no turn has a
    value), so a long dialogue does not weigh more than a short one.
    """
    simple: dict[str, list[tuple[str, float | None, str | None]]] = {}
    pairs: set[tuple[str, str]] = set()
    for record in records:  # the common case: one dialogue-level record per dialogue and metric
        pair = (record.metric, record.dialogue_id)
        if record.turn is not None or pair in pairs:
            break
        pairs.add(pair)
        simple.setdefault(record.metric, []).append((record.dialogue_id, record.value, record.missing_reason))
    else:
        return simple
    groups: dict[str, dict[str, list[ScoreRecord]]] = defaultdict(dict)
    for record in records:
        groups[record.metric].setdefault(record.dialogue_id, []).append(record)
    return {
        label: [(dialogue_id, *dialogue_value(group)) for dialogue_id, group in by_dialogue.items()]
        for label, by_dialogue in groups.items()
    }


def dialogue_value(group: Sequence[ScoreRecord]) -> tuple[float | None, str | None]:
    """One dialogue's value of one metric from its records, and the missing reason when there is none:
    a dialogue-level record as it is, turn-level records as the mean of the turns that have a value."""
    if len(group) == 1 and group[0].turn is None:
        return group[0].value, group[0].missing_reason
    present = [r.value for r in group if r.value is not None]
    if present:
        return float(np.mean(present)), None
    return None, next((r.missing_reason for r in group if r.missing_reason), None)


def summarize(
    records: Iterable[ScoreRecord], dialogues: Iterable[Dialogue] | None = None, *, seed: int = 0
) -> list[GroupSummary]:
    """Aggregate records per (crs_id, simulator_id), sorted by those ids.

    With `dialogues`, dialogue counts and termination reasons come from them, so dialogues without
    any record (e.g. no metrics configured) still count; otherwise they come from the records.
    """
    builder = SummaryBuilder(seed=seed)
    builder.add(records, dialogues)
    return builder.summaries()


@dataclass
class _GroupState:
    """What a group's summary needs, held compactly: per metric one float per dialogue (NaN when
    missing) and the code of the dialogue's user, never the records."""

    #: Dialogue id -> the code of its user (-1: unknown), for every dialogue seen (the first time).
    ids: dict[str, int] = field(default_factory=dict)
    #: User id -> its code, in order of first appearance.
    user_codes: dict[str, int] = field(default_factory=dict)
    unknown_users: int = 0
    terminations: Counter[str] = field(default_factory=Counter)
    n_evaluable: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    values: dict[str, array[float]] = field(default_factory=dict)
    clusters: dict[str, array[int]] = field(default_factory=dict)
    #: Labels with a present value that is NaN (which the aggregate refuses, as it always has).
    not_a_number: set[str] = field(default_factory=set)
    left_out: Counter[str] = field(default_factory=Counter)
    missing: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    annotated: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    ambiguous: int = 0

    def end(self, dialogue_id: str, reason: str, evaluable: bool, fault: str | None) -> bool:
        """Record how a dialogue ended (the first time it is seen) and whose fault it was; whether it
        was new."""
        if dialogue_id in self.ids:
            return False
        self.ids[dialogue_id] = -1
        self.terminations[reason] += 1
        self.n_evaluable += evaluable
        if fault is not None:
            self.faults[fault] += 1
        return True

    def user(self, dialogue_id: str, user: str | None) -> None:
        """The user of a dialogue just seen."""
        if user is None:
            self.unknown_users += 1
            return
        code = self.user_codes.get(user)
        if code is None:
            code = self.user_codes[user] = len(self.user_codes)
        self.ids[dialogue_id] = code

    def metric(self, label: str) -> tuple[array[float], array[int]]:
        """The values and user codes of a metric (listed even when every value is left out)."""
        if label not in self.values:
            self.values[label], self.clusters[label] = array("d"), array("q")
        return self.values[label], self.clusters[label]


def _ambiguous_links(dialogue: Dialogue) -> int:
    """Titles in the CRS's utterances linked ambiguously (`ambiguous_links` annotation)."""
    count = 0
    crs, name = Role.CRS, AMBIGUOUS_LINKS.name
    for index, utterance in enumerate(dialogue.utterances):
        if utterance.role is crs and name in utterance.annotations:
            links: dict[str, list[str]] | None = annotation(AMBIGUOUS_LINKS, dialogue, index)
            count += len(links or {})
    return count


def _fault_of(termination: Termination | None) -> tuple[bool, str | None]:
    """(evaluable, fault) of a dialogue's termination."""
    if termination is None:
        return True, None
    fault = termination.fault
    return fault not in UNEVALUABLE_FAULTS, None if fault is None else fault.value


def _fault_from_record(record: ScoreRecord) -> tuple[bool, str | None]:
    """(evaluable, fault) of a dialogue known only by a score record, which names the reason but not
    the error's source: a record left out as `not evaluable: <reason> (<fault>)` says both; otherwise
    a new-style reason says them, and a format-1.1 `error` or a `timeout` that was scored was the CRS's."""
    why = record.missing_reason or ""
    if record.value is None and why.startswith(NOT_EVALUABLE) and why.endswith(")") and "(" in why:
        return False, why[why.rindex("(") + 1 : -1]
    try:
        termination = (
            Termination(reason=TerminationReason(record.termination)) if record.termination else None
        )
    except ValueError:
        return True, None
    if termination is not None and termination.reason in (TerminationReason.ERROR, TerminationReason.TIMEOUT):
        return True, "crs"
    return _fault_of(termination)


def _records_of(
    key: GroupKey, labels: Sequence[str], group: list[tuple[str, Sequence[Outcome]]]
) -> list[ScoreRecord]:
    """The records of dialogue outcomes (only what the summary reads of them is filled in)."""
    return [
        trusted_record(dialogue_id, key[0], key[1], None, label, value, reason, error)
        for dialogue_id, outcomes in group
        for label, (value, reason, error) in zip(labels, outcomes, strict=True)
    ]


class SummaryBuilder:
    """Per (CRS, simulator) summaries built batch by batch, so a large evaluation can stream.

    `add` takes the records of some dialogues (all records of a dialogue in one call) and, optionally,
    those dialogues; only one value per dialogue and metric is kept between calls. Values whose
    dialogue is not evaluable (`NOT_EVALUABLE`) stay out of the metric aggregates; with the dialogues,
    each value also knows its user, so repeated users get a cluster bootstrap (`crsim.eval.stats`).
    """

    def __init__(self, *, seed: int = 0) -> None:
        self.seed = seed
        self._groups: dict[GroupKey, _GroupState] = {}
        self._users_known = True

    def _state(self, key: GroupKey) -> _GroupState:
        if key not in self._groups:
            self._groups[key] = _GroupState()
        return self._groups[key]

    def add(self, records: Iterable[ScoreRecord], dialogues: Iterable[Dialogue] | None = None) -> None:
        batch: dict[GroupKey, list[ScoreRecord]] = defaultdict(list)
        for record in records:
            key = (record.crs_id, record.simulator_id)
            batch[key].append(record)
            if dialogues is None:
                reason = record.termination or "unknown"
                self._state(key).end(record.dialogue_id, reason, *_fault_from_record(record))
        if dialogues is None:
            self._users_known = False
        for dialogue in dialogues or ():
            self.add_dialogue(dialogue)
        for key, group in batch.items():
            state = self._state(key)
            self._fold(state, _per_dialogue(group).items())
            for record in group:
                if record.annotator:
                    state.annotated[record.annotator].add(record.dialogue_id)

    def add_dialogue(self, dialogue: Dialogue) -> None:
        """Count a dialogue (how it ended, its error, its user), the first time it is seen; `add` with
        dialogues does this for each of them."""
        state = self._state((dialogue.crs_id, dialogue.simulator_id))
        termination = dialogue.termination
        reason = termination.reason.value if termination else "unknown"
        if termination and termination.error and dialogue.id not in state.ids:
            error = termination.error
            kind = f"{error.source}: {error.type}"
            state.errors[kind] += 1
            state.examples.setdefault(kind, error.message)
        if state.end(dialogue.id, reason, *_fault_of(termination)):
            state.ambiguous += _ambiguous_links(dialogue)
            state.user(dialogue.id, source_user_id(dialogue.user_id) if dialogue.user_id else None)

    def add_outcomes(
        self, labels: Sequence[str], rows: Iterable[tuple[GroupKey, str, Sequence[Outcome]]]
    ) -> None:
        """What `add` folds from the records of some dialogues (all of each dialogue's, none made by an
        annotator), given as (group, dialogue id, outcome of each metric of `labels`, as
        `dialogue_outcomes` gives them: values finite) without building the records; the dialogues
        were counted before (`add_dialogue`)."""
        groups: dict[GroupKey, list[tuple[str, Sequence[Outcome]]]] = {}
        for key, dialogue_id, outcomes in rows:
            groups.setdefault(key, []).append((dialogue_id, outcomes))
        for key, group in groups.items():
            state = self._state(key)
            if len({dialogue_id for dialogue_id, _ in group}) < len(group):  # an id twice: `add` merges
                self._fold(state, _per_dialogue(_records_of(key, labels, group)).items())
                continue
            codes = [state.ids.get(dialogue_id, -1) for dialogue_id, _ in group]
            for index, label in enumerate(labels):
                column = [outcomes[index][0] for _, outcomes in group]
                if None in column:  # some value missing or left out: as `add` folds them
                    self._fold(state, [(label, [(d, *o[index][:2]) for d, o in group])])
                    continue
                values, clusters = state.metric(label)
                values.extend(cast("list[float]", column))  # finite (`metric_value`): no NaN to flag
                clusters.extend(codes)

    @staticmethod
    def _fold(
        state: _GroupState, by_label: Iterable[tuple[str, list[tuple[str, float | None, str | None]]]]
    ) -> None:
        """Append each label's values of some dialogues (dialogue id, value, missing reason) to the
        group's compact state."""
        nan = math.nan
        ids = state.ids
        for label, dialogue_values in by_label:
            values, clusters = state.metric(label)
            for dialogue_id, value, why in dialogue_values:
                if value is None:
                    if why is not None and why.startswith(NOT_EVALUABLE):
                        state.left_out[label] += 1  # counted beside the metric, not in n
                        continue
                    state.missing[label][why or "unknown"] += 1
                    values.append(nan)
                else:
                    if value != value:
                        state.not_a_number.add(label)
                    values.append(value)
                clusters.append(ids.get(dialogue_id, -1))

    def summaries(self) -> list[GroupSummary]:
        ordered = sorted(self._groups, key=lambda k: (k[0] or "", k[1] or ""))
        return [self._summary(key, self._groups[key]) for key in ordered]

    def _summary(self, key: GroupKey, state: _GroupState) -> GroupSummary:
        users = self._users_known and state.unknown_users == 0
        if state.not_a_number:
            raise ValueError("cannot aggregate non-finite values (NaN or infinity)")
        return GroupSummary(
            crs_id=key[0],
            simulator_id=key[1],
            n_dialogues=len(state.ids),
            n_evaluable=state.n_evaluable,
            n_users=len(state.user_codes) if users else None,
            terminations=dict(sorted(state.terminations.items())),
            faults=dict(sorted(state.faults.items())),
            ambiguous_links=state.ambiguous if self._users_known else None,
            errors=dict(sorted(state.errors.items())),
            error_examples=dict(sorted(state.examples.items())),
            metrics={
                label: aggregate_coded(
                    _as_array(vals, float),
                    seed=self.seed,
                    clusters=_as_array(state.clusters[label], np.int64) if users else None,
                    not_evaluable=state.left_out[label],
                )
                for label, vals in state.values.items()
            },
            missing_reasons={label: dict(sorted(c.items())) for label, c in state.missing.items()},
            annotated={name: len(ids) for name, ids in sorted(state.annotated.items())},
        )


def _as_array(values: array[float] | array[int], dtype: type) -> np.ndarray:
    """A numpy view of an `array.array` (a new empty array when it holds nothing)."""
    return np.frombuffer(values, dtype=dtype) if len(values) else np.zeros(0, dtype=dtype)


def order_metrics(summaries: Sequence[GroupSummary], first: Iterable[str]) -> None:
    """Put the labels of `first` first in each summary's metrics, in that order (the rest after, as
    they were): a merged evaluation keeps the earlier column order of reports."""
    rank = {label: i for i, label in enumerate(first)}
    for summary in summaries:
        ordered = sorted(summary.metrics, key=lambda label: rank.get(label, len(rank)))
        summary.metrics = {label: summary.metrics[label] for label in ordered}


def write_summary(
    summaries: Sequence[GroupSummary],
    path: str | Path,
    *,
    built_from: Mapping[str, FileFingerprint] | None = None,
    metrics: Mapping[str, MetricInfo] | None = None,
    curves: Sequence[GroupCurve] = (),
) -> None:
    """`summary.json`: the group summaries and the files they were built from, so that a reader can
    tell a summary that no longer matches its scores or dialogues (`crsim.model.run_folder.summary`),
    with each metric's metadata and the per-turn curves, so that readers never build a metric again."""
    write_summary_file(summaries, Path(path), built_from, metrics=metrics, curves=curves)
