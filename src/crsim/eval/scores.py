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
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel

from crsim.core.components import BuildContext, build
from crsim.core.errors import ConfigError
from crsim.core.plugins import ComponentSpec
from crsim.eval.metrics.base import Evaluator, Metric, NotApplicable, PerTurnMetric, metric_registry
from crsim.eval.stats import aggregate
from crsim.model.annotations import AMBIGUOUS_LINKS, annotation
from crsim.model.dialogue import Dialogue, Role, Termination, TerminationReason
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


def score_dialogue(dialogue: Dialogue, metric: Metric, *, score_unevaluable: bool = False) -> ScoreRecord:
    """One record; exceptions other than `NotApplicable` become an error record. A dialogue that is
    not evaluable gets value None with the reason, unless `score_unevaluable`."""
    value: float | None = None
    reason = error = None
    try:
        reason = None if score_unevaluable else not_evaluable_reason(dialogue)
        if reason is not None:
            raise NotApplicable(reason)
        value = metric.compute(dialogue)
        if not math.isfinite(value):  # a TypeError for a non-number
            value, reason, error = None, "error: non-finite value", f"returned {value!r}"
        else:
            value = float(value)
    except NotApplicable as exc:
        reason = exc.reason
    except Exception as exc:  # noqa: BLE001 - one failing dialogue must not stop the evaluation
        value, reason, error = None, f"error: {type(exc).__name__}", f"{type(exc).__name__}: {exc}"
    # Built without validation: every field is a str, float or None made right here, and a large
    # evaluation creates one record per dialogue and metric.
    return ScoreRecord.model_construct(
        dialogue_id=dialogue.id,
        crs_id=dialogue.crs_id,
        simulator_id=dialogue.simulator_id,
        termination=dialogue.termination.reason.value if dialogue.termination else None,
        metric=metric.label,
        value=value,
        missing_reason=reason,
        error=None if error is None else f"dialogue {dialogue.id!r}, metric {metric.label!r}: {error}",
    )


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
    """What a group's summary needs: one (value, missing reason) per dialogue and metric, not records."""

    ends: dict[str, str] = field(default_factory=dict)
    evaluable: dict[str, bool] = field(default_factory=dict)
    faults: Counter[str] = field(default_factory=Counter)
    users: dict[str, str | None] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    values: dict[str, list[float | None]] = field(default_factory=lambda: defaultdict(list))
    clusters: dict[str, list[str | None]] = field(default_factory=lambda: defaultdict(list))
    left_out: Counter[str] = field(default_factory=Counter)
    missing: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    annotated: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    ambiguous: dict[str, int] = field(default_factory=dict)

    def end(self, dialogue_id: str, reason: str, evaluable: bool, fault: str | None) -> None:
        """Record how a dialogue ended (the first time it is seen) and whose fault it was."""
        if dialogue_id in self.ends:
            return
        self.ends[dialogue_id] = reason
        self.evaluable[dialogue_id] = evaluable
        if fault is not None:
            self.faults[fault] += 1


def _ambiguous_links(dialogue: Dialogue) -> int:
    """Titles in the CRS's utterances linked ambiguously (`ambiguous_links` annotation)."""
    count = 0
    for index, utterance in enumerate(dialogue.utterances):
        if utterance.role is Role.CRS:
            links: dict[str, list[str]] | None = annotation(AMBIGUOUS_LINKS, dialogue, index)
            count += len(links or {})
    return count


def _fault_of(termination: Termination | None) -> tuple[bool, str | None]:
    """(evaluable, fault) of a dialogue's termination."""
    if termination is None:
        return True, None
    return termination.evaluable, termination.fault.value if termination.fault else None


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
            state = self._state((dialogue.crs_id, dialogue.simulator_id))
            reason = dialogue.termination.reason.value if dialogue.termination else "unknown"
            if dialogue.id not in state.ends and dialogue.termination and dialogue.termination.error:
                error = dialogue.termination.error
                kind = f"{error.source}: {error.type}"
                state.errors[kind] += 1
                state.examples.setdefault(kind, error.message)
            state.end(dialogue.id, reason, *_fault_of(dialogue.termination))
            state.ambiguous.setdefault(dialogue.id, _ambiguous_links(dialogue))
            state.users.setdefault(
                dialogue.id, source_user_id(dialogue.user_id) if dialogue.user_id else None
            )
        for key, group in batch.items():
            state = self._state(key)
            for label, dialogue_values in _per_dialogue(group).items():
                values, clusters = state.values[label], state.clusters[label]  # listed even if all left out
                for dialogue_id, value, why in dialogue_values:
                    if value is None and why is not None and why.startswith(NOT_EVALUABLE):
                        state.left_out[label] += 1  # counted beside the metric, not in n
                        continue
                    values.append(value)
                    clusters.append(state.users.get(dialogue_id))
                    if value is None:
                        state.missing[label][why or "unknown"] += 1
            for record in group:
                if record.annotator:
                    state.annotated[record.annotator].add(record.dialogue_id)

    def summaries(self) -> list[GroupSummary]:
        ordered = sorted(self._groups, key=lambda k: (k[0] or "", k[1] or ""))
        return [self._summary(key, self._groups[key]) for key in ordered]

    def _summary(self, key: GroupKey, state: _GroupState) -> GroupSummary:
        users = self._users_known and all(u is not None for u in state.users.values())
        return GroupSummary(
            crs_id=key[0],
            simulator_id=key[1],
            n_dialogues=len(state.ends),
            n_evaluable=sum(state.evaluable.values()),
            n_users=len(set(state.users.values())) if users else None,
            terminations=dict(sorted(Counter(state.ends.values()).items())),
            faults=dict(sorted(state.faults.items())),
            ambiguous_links=sum(state.ambiguous.values()) if self._users_known else None,
            errors=dict(sorted(state.errors.items())),
            error_examples=dict(sorted(state.examples.items())),
            metrics={
                label: aggregate(
                    vals,
                    seed=self.seed,
                    clusters=state.clusters[label] if users else None,
                    not_evaluable=state.left_out[label],
                )
                for label, vals in state.values.items()
            },
            missing_reasons={label: dict(sorted(c.items())) for label, c in state.missing.items()},
            annotated={name: len(ids) for name, ids in sorted(state.annotated.items())},
        )


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


class CurveBuilder:
    """Per-turn curves (turns 1..horizon) of the per-turn metrics per CRS × simulator, built batch by
    batch over the evaluable dialogues: running sums and counts, never the dialogues themselves."""

    def __init__(self, metrics: Sequence[Metric | Evaluator], horizon: int) -> None:
        self.metrics = [m for m in metrics if isinstance(m, PerTurnMetric)]
        self.horizon = horizon
        self._sums: dict[tuple[GroupKey, str], np.ndarray] = {}
        self._counts: dict[tuple[GroupKey, str], np.ndarray] = {}
        self._squares: dict[tuple[GroupKey, str], np.ndarray] = {}

    def add(self, dialogues: Iterable[Dialogue]) -> None:
        for dialogue in dialogues:
            if not dialogue.evaluable:  # broken by the simulator or the infrastructure
                continue
            group = (dialogue.crs_id, dialogue.simulator_id)
            for metric in self.metrics:
                key = (group, metric.label)
                if key not in self._sums:
                    self._sums[key] = np.zeros(self.horizon)
                    self._counts[key] = np.zeros(self.horizon, dtype=int)
                    self._squares[key] = np.zeros(self.horizon)
                for index, value in enumerate(metric.per_turn(dialogue, self.horizon)):
                    if value is not None:
                        self._sums[key][index] += value
                        self._squares[key][index] += value * value
                        self._counts[key][index] += 1

    def curves(self) -> list[GroupCurve]:
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
