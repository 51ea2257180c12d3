"""The evaluation layer: build metrics from specs, score dialogues, summarise and write results.

Scoring never stops on one bad dialogue: a metric that raises yields a record with value None
and an error naming the dialogue, the metric and the problem; a metric that does not apply
yields None with the reason, and summaries count both per metric.
"""

from __future__ import annotations

import math
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from crsim.errors import ConfigError, DataError
from crsim.eval.metrics.base import Evaluator, Metric, NotApplicable, PerTurnMetric
from crsim.eval.stats import Aggregate, aggregate
from crsim.model.dialogue import Dialogue
from crsim.registry import ComponentSpec, metric_registry

if TYPE_CHECKING:
    from crsim.eval.summary_file import FileFingerprint
    from crsim.llm.client import LLMHub


class ScoreRecord(BaseModel):
    """One metric's value for one dialogue; value None means missing (see `missing_reason`/`error`)."""

    dialogue_id: str
    crs_id: str | None
    simulator_id: str | None
    termination: str | None = Field(None, description="Why the dialogue ended; None if not recorded.")
    metric: str = Field(description="The metric's label, unique within one evaluation.")
    value: float | None
    missing_reason: str | None = Field(
        None, description="Why value is None: the metric does not apply, or 'error: <type>' when it raised."
    )
    error: str | None = Field(None, description="The failure, when computing the metric raised.")
    turn: int | None = Field(
        None, description="For turn-level values: the turn t (1-based); None for dialogue-level values."
    )
    explanation: str | None = Field(None, description="A judge's justification of the value.")
    raw: str | None = Field(None, description="A model's unreadable answer, kept when value is None.")
    annotator: str | None = Field(
        None, description="The act annotator that filled in acts this dialogue lacked, if any."
    )
    llm_judged: bool = Field(
        False,
        description="True when a language model gave the value (an LLM judge), not a formula.",
    )


class GroupSummary(BaseModel):
    """Aggregates for one (CRS, simulator) pair."""

    crs_id: str | None
    simulator_id: str | None
    n_dialogues: int
    terminations: dict[str, int] = Field(description="Dialogues per termination reason.")
    metrics: dict[str, Aggregate] = Field(description="Metric label -> aggregate over the dialogues.")
    errors: dict[str, int] = Field(
        default_factory=dict,
        description="Error kind ('source: ExceptionType') -> dialogues that ended with it.",
    )
    error_examples: dict[str, str] = Field(
        default_factory=dict, description="Error kind -> the message of its first occurrence."
    )
    missing_reasons: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="Metric label -> reason -> dialogues missing for that reason."
    )
    annotated: dict[str, int] = Field(
        default_factory=dict, description="Act annotator -> dialogues whose missing acts it filled in."
    )


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
    ]


def build_metrics(specs: Sequence[ComponentSpec], *, llms: LLMHub | None = None) -> list[Metric | Evaluator]:
    """Instantiate metrics and evaluators through the registry.

    Unknown names, bad arguments or clashing labels are a ConfigError. Evaluators that use language
    models get `llms` after their roles' providers are built, so bad model settings fail here, before
    any dialogue is scored; without `llms` they are a ConfigError.
    """
    built: list[Metric | Evaluator] = []
    for index, spec in enumerate(specs):
        where = f"metrics[{index}]"
        params = metric_registry.params(spec.name, spec.args, where=where)
        cls = metric_registry.get(spec.name)
        if getattr(cls, "needs_llm", False):
            if llms is None:
                raise ConfigError(f"{where}: {spec.name!r} uses a language model; give LLM settings")
            llms.check(list(cls.llm_roles(params)))
            instance = cls(params, llms=llms)
        else:
            instance = cls(params)
        if not isinstance(instance, Metric | Evaluator):
            raise ConfigError(f"{where}: {spec.name!r} is neither a Metric nor an Evaluator")
        instance.id = spec.id
        built.append(instance)
    labels = Counter(m.label for m in built)
    clashes = sorted(label for label, count in labels.items() if count > 1)
    if clashes:
        raise ConfigError(f"metrics: label(s) {', '.join(clashes)} used twice; give each an `id`")
    return built


def score_dialogue(dialogue: Dialogue, metric: Metric) -> ScoreRecord:
    """One record; exceptions other than `NotApplicable` become an error record."""
    value: float | None = None
    reason = error = None
    try:
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
    await, such as LLM judges, go through `crsim.eval.pipeline.score_all`)."""
    awaiting = [m.label for m in metrics if isinstance(m, Evaluator)]
    if awaiting:
        raise TypeError(f"{', '.join(awaiting)}: evaluators are scored by crsim.eval.pipeline.score_all")
    return [score_dialogue(dialogue, m) for dialogue in dialogues for m in metrics if isinstance(m, Metric)]


GroupKey = tuple[str | None, str | None]


def _per_dialogue(records: list[ScoreRecord]) -> dict[str, list[tuple[float | None, str | None]]]:
    """Metric label -> one (value, missing reason) per dialogue, in record order.

    A dialogue-level record passes through; the turn-level records of a dialogue become one value,
    the mean of its present turn values (None, with the first reason given, when no turn has a
    value), so a long dialogue does not weigh more than a short one.
    """
    groups: dict[str, dict[str, list[ScoreRecord]]] = defaultdict(dict)
    for record in records:
        groups[record.metric].setdefault(record.dialogue_id, []).append(record)
    return {
        label: [dialogue_value(group) for group in by_dialogue.values()]
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
    errors: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    values: dict[str, list[float | None]] = field(default_factory=lambda: defaultdict(list))
    missing: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    annotated: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))


class SummaryBuilder:
    """Per (CRS, simulator) summaries built batch by batch, so a large evaluation can stream.

    `add` takes the records of some dialogues (all records of a dialogue in one call) and, optionally,
    those dialogues; only one value per dialogue and metric is kept between calls.
    """

    def __init__(self, *, seed: int = 0) -> None:
        self.seed = seed
        self._groups: dict[GroupKey, _GroupState] = {}

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
                self._state(key).ends.setdefault(record.dialogue_id, record.termination or "unknown")
        for dialogue in dialogues or ():
            state = self._state((dialogue.crs_id, dialogue.simulator_id))
            reason = dialogue.termination.reason.value if dialogue.termination else "unknown"
            if dialogue.id not in state.ends and dialogue.termination and dialogue.termination.error:
                error = dialogue.termination.error
                kind = f"{error.source}: {error.type}"
                state.errors[kind] += 1
                state.examples.setdefault(kind, error.message)
            state.ends.setdefault(dialogue.id, reason)
        for key, group in batch.items():
            state = self._state(key)
            for label, dialogue_values in _per_dialogue(group).items():
                for value, why in dialogue_values:
                    state.values[label].append(value)
                    if value is None:
                        state.missing[label][why or "unknown"] += 1
            for record in group:
                if record.annotator:
                    state.annotated[record.annotator].add(record.dialogue_id)

    def summaries(self) -> list[GroupSummary]:
        ordered = sorted(self._groups, key=lambda k: (k[0] or "", k[1] or ""))
        return [self._summary(key, self._groups[key]) for key in ordered]

    def _summary(self, key: GroupKey, state: _GroupState) -> GroupSummary:
        return GroupSummary(
            crs_id=key[0],
            simulator_id=key[1],
            n_dialogues=len(state.ends),
            terminations=dict(sorted(Counter(state.ends.values()).items())),
            errors=dict(sorted(state.errors.items())),
            error_examples=dict(sorted(state.examples.items())),
            metrics={label: aggregate(vals, seed=self.seed) for label, vals in state.values.items()},
            missing_reasons={label: dict(sorted(c.items())) for label, c in state.missing.items()},
            annotated={name: len(ids) for name, ids in sorted(state.annotated.items())},
        )


def turn_curves(dialogues: Iterable[Dialogue], metric: Metric, max_turns: int) -> TurnCurve:
    """Population mean of a per-turn metric at turns 1..max_turns (e.g. PEPPER's PC_t curve)."""
    if not isinstance(metric, PerTurnMetric):
        raise ConfigError(f"metric {metric.label!r} has no per-turn values; use recall, pc, pcir or jaccard")
    rows = [metric.per_turn(d, max_turns) for d in dialogues]
    table = np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=float)
    table = table.reshape(len(rows), max_turns)
    defined = ~np.isnan(table)
    counts = defined.sum(axis=0)
    sums = np.where(defined, table, 0.0).sum(axis=0)
    means = [float(s / c) if c else None for s, c in zip(sums, counts, strict=True)]
    return TurnCurve(metric=metric.label, mean=means, n=[int(c) for c in counts])


def write_scores(records: Iterable[ScoreRecord], path: str | Path) -> None:
    """JSON Lines, one record per dialogue and metric; replaces `path` only once all are written."""
    _write_atomic(Path(path), (record.model_dump_json() + "\n" for record in records))


@contextmanager
def scores_writer(path: str | Path) -> Iterator[Callable[[Iterable[ScoreRecord]], None]]:
    """`write(records)` appends records as JSON Lines to a temporary file that replaces `path` only when
    the block completes, so scores can be written batch by batch and a failure keeps the old file."""
    path = Path(path)
    temp = path.with_name(f".{path.name}.part")
    try:
        with temp.open("w", encoding="utf-8", newline="\n") as handle:
            yield lambda records: handle.writelines(record.model_dump_json() + "\n" for record in records)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def _write_atomic(path: Path, chunks: Iterable[str]) -> None:
    """Write through a temporary file renamed into place: an interrupted write keeps the old file."""
    temp = path.with_name(f".{path.name}.part")
    try:
        with temp.open("w", encoding="utf-8", newline="\n") as handle:
            for chunk in chunks:
                handle.write(chunk)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def read_scores(path: str | Path) -> list[ScoreRecord]:
    """Records written by `write_scores`."""
    records = []
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                records.append(ScoreRecord.model_validate_json(line))
            except ValidationError as exc:
                err = exc.errors()[0]
                field = ".".join(str(p) for p in err["loc"])
                raise DataError(err["msg"], path=str(path), record=number, field=field) from None
    return records


def write_summary(
    summaries: Sequence[GroupSummary],
    path: str | Path,
    *,
    built_from: Mapping[str, FileFingerprint] | None = None,
) -> None:
    """`summary.json`: the group summaries and the files they were built from, so that a reader can
    tell a summary that no longer matches its scores or dialogues (`crsim.eval.summary_file`)."""
    from crsim.eval.summary_file import write_summary_file

    write_summary_file(summaries, Path(path), built_from)
