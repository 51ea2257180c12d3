"""Predictions from a crsim evaluator: run any registered `Metric` or `Evaluator` over the gold
conversations (without their labels) and map its values onto the seven aspects.

Mapping. Records are labelled `"{label}/{aspect}"`; the aspect is matched by name (case, spaces and
hyphens ignored; `overall`, `dialogue_overall`, `dialog_overall` and `overall_impression` are one
aspect). A value without an aspect (a plain `Metric`, or an `Evaluator` value with `aspect=None`)
goes to `default_aspect` (overall unless asked otherwise). A turn-level value of turn t (the CRS
reply to the t-th user utterance) is paired with the gold label of the assistant utterance(s) of
turn t (`GoldConversation.turn_of`: in CRSArena-Eval, turn_ind = 2t - 1). Dialogue-level aspects
given per turn are averaged over the dialogue's present turn values, as `crsim evaluate` does.
Values of other aspects, and per-dialogue values of turn-level aspects, are listed in the notes.
An evaluator that fails on a dialogue leaves that dialogue's cells missing with the error as reason.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from crsim.core.components import BuildContext
from crsim.core.plugins import ComponentSpec
from crsim.core.progress import Progress
from crsim.eval.metrics.base import Evaluator, Metric
from crsim.eval.scores import ScoreRecord, build_metrics
from crsim.eval.scoring import score_all
from crsim.llm.client import LLMHub
from crsim.llm.config import LLMSettings
from crsim.model.run_folder.files import LLM_CACHE as RUN_LLM_CACHE
from crsim.studies.meta.aspects import canonical_aspect, level_of
from crsim.studies.meta.gold import GoldConversation, GoldSet
from crsim.studies.meta.predictions import Key, Predictions

#: Default cache file, in the work folder (the name a run folder gives it).
LLM_CACHE = RUN_LLM_CACHE


@dataclass
class EvaluatorRun:
    """What running an evaluator over the gold conversations gave."""

    label: str
    predictions: Predictions
    records: list[ScoreRecord]
    llm_calls: dict[str, int] = field(default_factory=dict)


def _aspect_of(record: ScoreRecord, label: str, default_aspect: str) -> tuple[str | None, str]:
    """(canonical aspect or None, the aspect as named) of one record of the metric `label`."""
    if record.metric == label:
        return default_aspect, "(no aspect)"
    named = record.metric[len(label) + 1 :] if record.metric.startswith(label + "/") else record.metric
    return canonical_aspect(named), named


def _failure(record: ScoreRecord, label: str) -> bool:
    """Whether the record says the evaluator produced nothing for the dialogue (raised or not applicable)."""
    return record.metric == label and record.value is None and record.turn is None


def records_to_predictions(
    records: list[ScoreRecord],
    gold: GoldSet,
    metric: Metric | Evaluator,
    *,
    default_aspect: str = "overall",
    source: str | None = None,
) -> Predictions:
    """Map one metric's score records onto (conv_id, turn_ind, aspect) predictions (module docstring)."""
    label = metric.label
    by_dialogue = {c.dialogue.id: c for c in gold}
    predictions = Predictions(source=source or f"evaluator {label}")
    per_turn: dict[Key, list[ScoreRecord]] = defaultdict(list)
    failed: dict[str, str] = {}
    for record in records:
        conversation = by_dialogue.get(record.dialogue_id)
        if conversation is None:
            predictions.notes[f"record for unknown dialogue {record.dialogue_id!r} (ignored)"] += 1
            continue
        if isinstance(metric, Evaluator) and _failure(record, label):
            failed[conversation.conv_id] = record.missing_reason or "no value"
            continue
        aspect, named = _aspect_of(record, label, default_aspect)
        if aspect is None:
            predictions.notes[f"aspect {named!r} is not a CRSArena-Eval aspect (ignored)"] += 1
        elif level_of(aspect) == "turn":
            _add_turn_value(predictions, conversation, aspect, record)
        elif record.turn is None:
            predictions.add((conversation.conv_id, None, aspect), record.value, record.missing_reason)
        else:
            per_turn[(conversation.conv_id, None, aspect)].append(record)
    for key, group in per_turn.items():
        present = [r.value for r in group if r.value is not None]
        reason = next((r.missing_reason for r in group if r.missing_reason), None)
        predictions.add(key, float(np.mean(present)) if present else None, reason)
    _mark_failures(predictions, gold, failed, default_aspect)
    return predictions


def _add_turn_value(
    predictions: Predictions, conversation: GoldConversation, aspect: str, record: ScoreRecord
) -> None:
    if record.turn is None:
        predictions.notes[f"per-dialogue value of turn-level aspect {aspect!r} (ignored)"] += 1
        return
    inds = conversation.turn_inds(record.turn)
    if not inds:
        predictions.notes[f"{aspect} value for a turn without an assistant utterance (ignored)"] += 1
    for ind in inds:
        predictions.add((conversation.conv_id, ind, aspect), record.value, record.missing_reason)


def _mark_failures(
    predictions: Predictions, gold: GoldSet, failed: dict[str, str], default_aspect: str
) -> None:
    """Give the failed dialogues' labels the failure as missing reason (aspects the evaluator gives)."""
    aspects = predictions.aspects() or {default_aspect}
    for conv_id, reason in failed.items():
        conversation = gold.by_id[conv_id]
        for aspect in aspects:
            keys: list[Key] = (
                [(conv_id, ind, aspect) for ind in conversation.turn_labels]
                if level_of(aspect) == "turn"
                else [(conv_id, None, aspect)]
            )
            for key in keys:
                if key not in predictions.values:
                    predictions.add(key, None, reason)


async def predict_with(
    metric: Metric | Evaluator,
    gold: GoldSet,
    *,
    concurrency: int = 8,
    default_aspect: str = "overall",
    progress: Progress | None = None,
) -> tuple[Predictions, list[ScoreRecord]]:
    """Score the label-free gold dialogues with one metric and map the records to predictions
    (`progress` hears how many dialogues there are and each one scored)."""
    dialogues = [c.dialogue for c in gold]
    if progress is not None:
        progress.set_total(len(dialogues))
    records = await score_all(dialogues, [metric], concurrency=concurrency, progress=progress)
    return records_to_predictions(records, gold, metric, default_aspect=default_aspect), records


def run_evaluator(
    spec: ComponentSpec,
    gold: GoldSet,
    *,
    llm: LLMSettings | None = None,
    cache_path: Path | None = None,
    concurrency: int = 8,
    default_aspect: str = "overall",
    progress: Progress | None = None,
) -> EvaluatorRun:
    """Build the metric named by `spec` (LLM models from `llm`, default the local model; answers
    cached in `cache_path`) and run it over the gold conversations (`progress`: as `predict_with`)."""
    hub = LLMHub(llm or LLMSettings(), cache_path=cache_path or Path(LLM_CACHE))

    async def go() -> EvaluatorRun:
        try:
            metric = build_metrics([spec], BuildContext(llms=hub))[0]
            predictions, records = await predict_with(
                metric, gold, concurrency=concurrency, default_aspect=default_aspect, progress=progress
            )
        finally:
            await hub.aclose()
        calls = {name: role.calls for name, role in hub.roles.items()}
        return EvaluatorRun(metric.label, predictions, records, calls)

    return asyncio.run(go())
