"""The evaluation layer: build metrics from specs, score dialogues, summarise and write results.

Scoring never stops on one bad dialogue: a metric that raises yields a record with value None
and an error naming the dialogue, the metric and the problem; a metric that does not apply
yields None with the reason, and summaries count both per metric.

A dialogue broken by the simulator or the infrastructure (`Dialogue.evaluable` is False) says
nothing about the CRS: by default its metrics are not computed (value None, missing reason
`not evaluable: <termination> (<fault>)`) and summaries leave it out of every metric's n, counting
it beside them (`n_evaluable` of `n_dialogues`). A CRS error or CRS timeout counts against the CRS.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
from pydantic import BaseModel

from crsim.core.components import BuildContext, build
from crsim.core.errors import ConfigError
from crsim.core.plugins import ComponentSpec
from crsim.eval.metrics.base import Evaluator, Metric, NotApplicable, PerTurnMetric, metric_registry
from crsim.eval.stats import aggregate_coded
from crsim.model.annotations import AMBIGUOUS_LINKS, annotation
from crsim.model.dialogue import UNEVALUABLE_FAULTS, Dialogue, Role, Termination, TerminationReason
from crsim.model.run_folder.scores import (
    GroupSummary,
    ScoreRecord,
    iter_scores,
    read_scores,
    scores_writer,
    write_scores,
)
from crsim.model.run_folder.summary import GroupCurve, MetricInfo, write_summary_file
from crsim.model.user import source_user_id

if TYPE_CHECKING:
    from crsim.model.run_folder.summary import FileFingerprint

__all__ = [
    "GroupSummary",
    "ScoreRecord",
    "SummaryBuilder",
    "TurnCurve",
    "build_metrics",
    "default_metrics",
    "iter_scores",
    "kept_scores",
    "order_metrics",
    "read_scores",
    "score_dialogue",
    "score_dialogues",
    "score_metrics",
    "scores_writer",
    "summarize",
    "turn_curves",
    "write_scores",
    "write_summary",
]


class TurnCurve(BaseModel):
    """A per-turn metric averaged over a population: `mean[t-1]` over the `n[t-1]` defined values."""

    metric: str
    mean: list[float | None]
    n: list[int]


def default_metrics() -> list[ComponentSpec]:
    """The metrics scored when a config names none."""
    return [
        ComponentSpec(name="success_rate"),
        ComponentSpec(name="srrr"),
        ComponentSpec(name="rdl"),
        ComponentSpec(name="turns"),
        ComponentSpec(name="recall", args={"k": 10}),
        ComponentSpec(name="pc", args={"k": 10}),
        ComponentSpec(name="requests_answered"),
        ComponentSpec(name="task_success"),
    ]


def build_metrics(
    specs: Sequence[ComponentSpec], ctx: BuildContext | None = None
) -> list[Metric | Evaluator]:
    """Instantiate metrics and evaluators through the registry, each as `Class(params, ctx)`.

    Unknown names, bad arguments, a wrong constructor signature or clashing labels are a ConfigError.
    Evaluators that use language models need `ctx.llms`; their roles' providers are built here, so
    bad model settings fail before any dialogue is scored.
    """
    ctx = ctx if ctx is not None else BuildContext()
    built: list[Metric | Evaluator] = []
    for index, spec in enumerate(specs):
        where = f"metrics[{index}]"
        instance = build(metric_registry, spec, ctx, where)
        if not isinstance(instance, Metric | Evaluator):
            raise ConfigError(f"{where}: {spec.name!r} is neither a Metric nor an Evaluator")
        instance.id = spec.id
        built.append(instance)
    labels = Counter(m.label for m in built)
    clashes = sorted(label for label, count in labels.items() if count > 1)
    if clashes:
        raise ConfigError(f"metrics: label(s) {', '.join(clashes)} used twice; give each an `id`")
    return built


#: Start of the missing reason of a value left out because its dialogue is not evaluable.
NOT_EVALUABLE = "not evaluable"


def not_evaluable_reason(dialogue: Dialogue) -> str | None:
    """Why a dialogue's metrics are not computed ('not evaluable: user_error (user)'), or None when
    it is evaluable."""
    termination = dialogue.termination
    if termination is None or termination.evaluable:
        return None
    fault = termination.fault.value if termination.fault else "unknown"
    return f"{NOT_EVALUABLE}: {termination.reason.value} ({fault})"


def metric_value(metric: Metric, dialogue: Dialogue) -> tuple[float | None, str | None, str | None]:
    """(value, missing reason, error) of one metric on one dialogue that counts: `NotApplicable` gives
    its reason, a non-finite value or any other exception an error (one failing dialogue never stops
    an evaluation). The error does not yet name the dialogue and the metric (`error_message`)."""
    try:
        value = metric.compute(dialogue)
        if not math.isfinite(value):  # a TypeError for a non-number
            return None, "error: non-finite value", f"returned {value!r}"
        return float(value), None, None
    except NotApplicable as exc:
        return None, exc.reason, None
    except Exception as exc:  # noqa: BLE001 - one failing dialogue must not stop the evaluation
        return None, f"error: {type(exc).__name__}", f"{type(exc).__name__}: {exc}"


def error_message(dialogue_id: str, label: str, error: str | None) -> str | None:
    """An error of `metric_value` as a score record states it: naming the dialogue and the metric."""
    return None if error is None else f"dialogue {dialogue_id!r}, metric {label!r}: {error}"


def score_dialogue(dialogue: Dialogue, metric: Metric, *, score_unevaluable: bool = False) -> ScoreRecord:
    """One record; exceptions other than `NotApplicable` become an error record. A dialogue that is
    not evaluable gets value None with the reason, unless `score_unevaluable`."""
    value: float | None = None
    reason = error = None
    try:
        reason = None if score_unevaluable else not_evaluable_reason(dialogue)
        if reason is None:
            value, reason, error = metric_value(metric, dialogue)
    except Exception as exc:  # noqa: BLE001 - one failing dialogue must not stop the evaluation
        value, reason, error = None, f"error: {type(exc).__name__}", f"{type(exc).__name__}: {exc}"
    return trusted_record(
        dialogue.id,
        dialogue.crs_id,
        dialogue.simulator_id,
        dialogue.termination.reason.value if dialogue.termination else None,
        metric.label,
        value,
        reason,
        error_message(dialogue.id, metric.label, error),
    )


#: One metric's outcome on one dialogue: (value, missing reason, error naming dialogue and metric).
Outcome = tuple[float | None, str | None, str | None]


def dialogue_outcomes(
    dialogue: Dialogue, metrics: Sequence[Metric], labels: Sequence[str], *, score_unevaluable: bool = False
) -> tuple[str | None, list[Outcome]] | None:
    """How the dialogue ended and every metric's outcome on it, in metric order: what `score_dialogue`
    of each metric records, reading once what every record repeats (whether the dialogue counts, its
    termination). None when those cannot be read (`score_dialogue` then records the failure)."""
    try:
        skip = None if score_unevaluable else not_evaluable_reason(dialogue)
        ended = dialogue.termination.reason.value if dialogue.termination else None
    except Exception:  # noqa: BLE001 - `score_dialogue` turns it into error records
        return None
    if skip is not None:
        return ended, [(None, skip, None)] * len(metrics)
    outcomes: list[Outcome] = []
    for metric, label in zip(metrics, labels, strict=True):
        outcome = metric_value(metric, dialogue)
        if outcome[2] is not None:
            outcome = (None, outcome[1], error_message(dialogue.id, label, outcome[2]))
        outcomes.append(outcome)
    return ended, outcomes


def score_metrics(
    dialogues: Iterable[Dialogue], metrics: Sequence[Metric], *, score_unevaluable: bool = False
) -> list[ScoreRecord]:
    """`score_dialogue` of every metric on every dialogue, in dialogue order then metric order (the
    same records), through `dialogue_outcomes`."""
    labels = [metric.label for metric in metrics]
    records: list[ScoreRecord] = []
    for dialogue in dialogues:
        scored = dialogue_outcomes(dialogue, metrics, labels, score_unevaluable=score_unevaluable)
        if scored is None:
            records.extend(score_dialogue(dialogue, m, score_unevaluable=score_unevaluable) for m in metrics)
            continue
        ended, outcomes = scored
        for label, (value, reason, error) in zip(labels, outcomes, strict=True):
            records.append(
                trusted_record(
                    dialogue.id, dialogue.crs_id, dialogue.simulator_id, ended, label, value, reason, error
                )
            )
    return records


#: The fields `trusted_record` is given; the others keep their defaults (as `model_construct` sets them).
_GIVEN = (
    "dialogue_id", "crs_id", "simulator_id", "termination", "metric", "value", "missing_reason", "error",
)  # fmt: skip
_DEFAULTS = tuple(
    (name, field.default) for name, field in ScoreRecord.model_fields.items() if name not in _GIVEN
)
_new = object.__new__
_set = object.__setattr__


def trusted_record(
    dialogue_id: str,
    crs_id: str | None,
    simulator_id: str | None,
    termination: str | None,
    metric: str,
    value: float | None,
    missing_reason: str | None,
    error: str | None,
) -> ScoreRecord:
    """A dialogue-level score record from values made by the scoring itself (str, float or None), built
    without validation: what `ScoreRecord.model_construct` builds with these fields, at a fraction of
    its cost (a large evaluation creates one record per dialogue and metric)."""
    record = _new(ScoreRecord)
    fields = {
        "dialogue_id": dialogue_id,
        "crs_id": crs_id,
        "simulator_id": simulator_id,
        "termination": termination,
        "metric": metric,
        "value": value,
        "missing_reason": missing_reason,
        "error": error,
    }
    fields.update(_DEFAULTS)
    _set(record, "__dict__", fields)
    _set(record, "__pydantic_fields_set__", set(_GIVEN))
    _set(record, "__pydantic_extra__", None)
    _set(record, "__pydantic_private__", None)
    return record


def score_dialogues(
    dialogues: Iterable[Dialogue], metrics: Sequence[Metric | Evaluator]
) -> list[ScoreRecord]:
    """Every sync metric on every dialogue, in dialogue order then metric order (evaluators that
    await, such as LLM judges, go through `crsim.eval.scoring.score_all`)."""
    awaiting = [m.label for m in metrics if isinstance(m, Evaluator)]
    if awaiting:
        raise TypeError(f"{', '.join(awaiting)}: evaluators are scored by crsim.eval.scoring.score_all")
    return [score_dialogue(dialogue, m) for dialogue in dialogues for m in metrics if isinstance(m, Metric)]


GroupKey = tuple[str | None, str | None]


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


def kept_scores(
    path: str | Path,
    *,
    rescored: set[str],
    dialogue_ids: set[str],
    batch: int = 500,
    labels: dict[str, None] | None = None,
) -> Iterator[list[ScoreRecord]]:
    """The records of an earlier scores file that a new evaluation keeps when it merges: those of
    metrics (labels, aspects included) it did not score again, for dialogues it scored. Records of a
    re-scored label are replaced by the new ones; records of dialogues no longer in the input are stale
    and dropped. Streamed in lists of about `batch` dialogues; the records of one dialogue and metric
    are never split between lists (as `SummaryBuilder.add` needs); nothing when there is no earlier
    file. A bad line is a DataError naming the file, the record and the field. `labels`, when given,
    receives every label of the earlier file in the order they first appear (to keep that order)."""
    path = Path(path)
    if not path.is_file():
        return
    group: list[ScoreRecord] = []
    seen: set[str] = set()
    for record in iter_scores(path):
        if labels is not None:
            labels.setdefault(record.metric)
        if record.metric in rescored or record.dialogue_id not in dialogue_ids:
            continue
        if record.dialogue_id not in seen and len(seen) >= batch:
            yield group
            group, seen = [], set()
        seen.add(record.dialogue_id)
        group.append(record)
    if group:
        yield group


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
