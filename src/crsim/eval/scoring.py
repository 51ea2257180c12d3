"""Score dialogues with metrics and evaluators, concurrently, filling in missing acts first.

`score_all` is the one entry point `crsim evaluate` and `crsim run` use: for every dialogue it
(1) lets an act annotator fill in the acts of utterances that have none (when one is given),
(2) computes the sync metrics, and (3) awaits the evaluators (LLM judges and the like). Dialogues
are processed `concurrency` at a time and records come back in dialogue order, then metric order.
A failure stays with its dialogue: an annotator or evaluator that raises becomes an error record
for that dialogue and metric, never a crash of the evaluation and never a number. A dialogue that
is not evaluable (the simulator or the infrastructure broke it) is neither annotated nor judged
and its metrics are None with the reason (`crsim.eval.scores.NOT_EVALUABLE`), unless
`score_unevaluable` asks for them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from crsim.core.progress import Progress
from crsim.eval.metrics.base import Evaluator, Metric, NotApplicable, Value
from crsim.eval.scores import ScoreRecord, not_evaluable_reason, score_dialogue, score_metrics
from crsim.model.dialogue import Dialogue, Role


def scoring_failed(records: list[ScoreRecord]) -> bool:
    """Whether any metric or evaluator raised on a dialogue (what the scoring progress counts)."""
    return any(record.error is not None for record in records)


class DialogueAnnotator(Protocol):
    """Fills in the acts of utterances that have none; `name` is recorded with the scores."""

    @property
    def name(self) -> str: ...

    async def annotate(self, dialogue: Dialogue) -> Dialogue: ...


@dataclass
class AnnotationCounts:
    """How many dialogues needed acts, and how many of those the annotator could not annotate."""

    annotator: str | None = None
    annotated: int = 0
    failed: int = 0
    failures: dict[str, str] = field(default_factory=dict)


def needs_acts(dialogue: Dialogue) -> bool:
    """Whether some user utterance has no acts (the intent-based metrics cannot read it)."""
    return any(u.role is Role.USER and not u.acts for u in dialogue.utterances)


async def score_all(
    dialogues: Iterable[Dialogue],
    metrics: Sequence[Metric | Evaluator],
    *,
    annotator: DialogueAnnotator | None = None,
    concurrency: int = 8,
    counts: AnnotationCounts | None = None,
    score_unevaluable: bool = False,
    progress: Progress | None = None,
) -> list[ScoreRecord]:
    """Every metric on every dialogue; see the module docstring. `progress` advances as each
    dialogue is done (an error when a metric or evaluator raised on it)."""
    counts = counts if counts is not None else AnnotationCounts()
    counts.annotator = annotator.name if annotator is not None else None
    limit = asyncio.Semaphore(max(1, concurrency))
    dialogues = list(dialogues)
    needs_await = any(isinstance(m, Evaluator) for m in metrics) or (
        annotator is not None and any(needs_acts(d) for d in dialogues)
    )
    if not needs_await:  # the common fast path: nothing to annotate, no evaluator to await
        sync = [m for m in metrics if isinstance(m, Metric)]
        records = score_metrics(dialogues, sync, score_unevaluable=score_unevaluable)
        if progress is not None:
            per_dialogue = sum(isinstance(m, Metric) for m in metrics)
            for n in range(len(dialogues)):
                progress.advance(error=scoring_failed(records[n * per_dialogue : (n + 1) * per_dialogue]))
        return records

    async def one(dialogue: Dialogue) -> list[ScoreRecord]:
        skip = not score_unevaluable and not_evaluable_reason(dialogue) is not None
        async with limit:
            scored, used = (dialogue, None) if skip else await _annotated(dialogue, annotator, counts)
            records: list[ScoreRecord] = []
            for metric in metrics:
                if isinstance(metric, Evaluator):
                    if not skip:  # no LLM calls for a dialogue that does not count
                        records.extend(await evaluate_dialogue(scored, metric))
                else:
                    records.append(score_dialogue(scored, metric, score_unevaluable=score_unevaluable))
            if used is not None:
                for record in records:
                    record.annotator = used
            if progress is not None:
                progress.advance(error=scoring_failed(records))
            return records

    results = await asyncio.gather(*(one(d) for d in dialogues))
    return [record for group in results for record in group]


async def _annotated(
    dialogue: Dialogue, annotator: DialogueAnnotator | None, counts: AnnotationCounts
) -> tuple[Dialogue, str | None]:
    """The dialogue with acts filled in, and the annotator's name if it filled any."""
    if annotator is None or not needs_acts(dialogue):
        return dialogue, None
    try:
        annotated = await annotator.annotate(dialogue)
    except Exception as exc:  # noqa: BLE001 - the dialogue is scored as it is; the failure is reported
        counts.failed += 1
        counts.failures.setdefault(type(exc).__name__, f"dialogue {dialogue.id!r}: {exc}")
        return dialogue, None
    counts.annotated += 1
    return annotated, annotator.name


async def evaluate_dialogue(dialogue: Dialogue, evaluator: Evaluator) -> list[ScoreRecord]:
    """The evaluator's values as records; `NotApplicable` or an exception gives one record saying so."""
    base = {
        "dialogue_id": dialogue.id,
        "crs_id": dialogue.crs_id,
        "simulator_id": dialogue.simulator_id,
        "termination": dialogue.termination.reason.value if dialogue.termination else None,
        "llm_judged": type(evaluator).needs_llm,
    }
    try:
        values = await evaluator.evaluate(dialogue)
    except NotApplicable as exc:
        return [ScoreRecord(**base, metric=evaluator.label, value=None, missing_reason=exc.reason)]
    except Exception as exc:  # noqa: BLE001 - one failing dialogue must not stop the evaluation
        message = f"dialogue {dialogue.id!r}, metric {evaluator.label!r}: {type(exc).__name__}: {exc}"
        return [
            ScoreRecord(
                **base,
                metric=evaluator.label,
                value=None,
                missing_reason=f"error: {type(exc).__name__}",
                error=message,
            )
        ]
    return [_record(base, evaluator, value) for value in values]


def _record(base: dict[str, Any], evaluator: Evaluator, value: Value) -> ScoreRecord:
    reason = None
    if value.value is None:
        reason = f"error: {error_kind(value.error)}" if value.error else (value.explanation or "no value")
    return ScoreRecord(
        **base,
        metric=evaluator.record_label(value.aspect),
        value=value.value,
        turn=value.turn,
        explanation=value.explanation,
        missing_reason=reason,
        error=value.error,
        raw=value.raw if value.value is None else None,
    )


def error_kind(error: str) -> str:
    """The kind of an error text: its leading `Name:` when it starts with one, else 'value error'."""
    head, sep, _ = error.partition(":")
    return head if sep and head.isidentifier() else "value error"
