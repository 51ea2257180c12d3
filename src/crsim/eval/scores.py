"""The evaluation layer: build metrics from specs and score dialogues (summaries: `crsim.eval.summaries`;
per-turn curves: `crsim.eval.curves`).

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
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from crsim.core.components import BuildContext, build
from crsim.core.errors import ConfigError
from crsim.core.plugins import ComponentSpec
from crsim.eval.metrics.base import Evaluator, Metric, NotApplicable, metric_registry
from crsim.model.dialogue import Dialogue
from crsim.model.run_folder.scores import (
    GroupSummary,
    ScoreRecord,
    iter_scores,
    read_scores,
    scores_writer,
    write_scores,
)

__all__ = [
    "GroupKey",
    "GroupSummary",
    "Outcome",
    "ScoreRecord",
    "build_metrics",
    "default_metrics",
    "iter_scores",
    "kept_scores",
    "read_scores",
    "score_dialogue",
    "score_dialogues",
    "score_metrics",
    "scores_writer",
    "write_scores",
]


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


#: A CRS × simulator pairing, as summaries and curves are grouped: (crs_id, simulator_id).
GroupKey = tuple[str | None, str | None]

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
