"""Correlation of predictions with the human labels, per split and aspect, pooled over all pairs.

Protocol (the one CRSArena-Eval's published numbers use): for a split and an aspect, every gold
label of that split and aspect (one per rated assistant turn for relevance and interestingness, one
per conversation for the dialogue-level aspects) is paired with the prediction for the same
conversation, turn and aspect; Pearson's r and Spearman's rho (ties get average ranks) are computed
once over all pairs of the split (no per-dialogue averaging). Gold labels without a prediction are
counted per cell as missing, with their reasons; a correlation that is undefined (fewer than two
pairs, or constant predictions or labels) is reported as None with the reason, never as 0.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, Field
from scipy import stats

from crsim.studies.meta.aspects import ASPECTS, Level, level_of
from crsim.studies.meta.gold import SPLITS, GoldConversation, GoldSet
from crsim.studies.meta.predictions import Key, Predictions

NO_PREDICTION = "no prediction"


class Correlation(BaseModel):
    """Pearson r and Spearman rho of paired values; None (with `undefined`) when not defined."""

    n: int
    pearson: float | None
    spearman: float | None
    undefined: str | None = Field(None, description="Why the correlations are None.")


def correlate(predicted: Sequence[float], gold: Sequence[float]) -> Correlation:
    """Pearson and Spearman (average ranks for ties) of two equally long sequences, via scipy."""
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predictions but {len(gold)} gold values")
    x = np.asarray(predicted, dtype=float)
    y = np.asarray(gold, dtype=float)
    reason = None
    if len(x) < 2:
        reason = "fewer than two pairs"
    elif bool(np.all(x == x[0])):
        reason = "constant predictions"
    elif bool(np.all(y == y[0])):
        reason = "constant gold labels"
    if reason is not None:
        return Correlation(n=len(x), pearson=None, spearman=None, undefined=reason)
    pearson = float(stats.pearsonr(x, y).statistic)
    spearman = float(stats.spearmanr(x, y).statistic)
    undefined = None if math.isfinite(pearson) and math.isfinite(spearman) else "not a number"
    return Correlation(
        n=len(x),
        pearson=pearson if math.isfinite(pearson) else None,
        spearman=spearman if math.isfinite(spearman) else None,
        undefined=undefined,
    )


class Cell(BaseModel):
    """One split × aspect: how many gold labels, how many paired, how many missing and why."""

    split: str
    aspect: str
    level: Level
    labels: int = Field(description="Gold labels in this cell.")
    n: int = Field(description="Pairs the correlations are computed on.")
    missing: int = Field(description="Gold labels without a prediction value.")
    missing_reasons: dict[str, int] = Field(default_factory=dict)
    pearson: float | None
    spearman: float | None
    undefined: str | None = None


class MetaResult(BaseModel):
    """Correlations of one evaluator (or run file) with the human labels, and what did not fit."""

    evaluator: str = Field(description="The evaluator's label or the run file's name.")
    source: str = Field(description="Where the predictions came from.")
    gold: str = Field(description="The gold file.")
    conversations: dict[str, int] = Field(description="Gold conversations per split.")
    cells: list[Cell]
    unknown_conv_ids: list[str] = Field(
        default_factory=list, description="Predicted conversations that are not in the gold data."
    )
    excluded: int = Field(
        0, description="Gold conversations left out of this selection (--limit); their predictions unused."
    )
    unmatched: dict[str, int] = Field(
        default_factory=dict,
        description="Predictions of known conversations with no gold label to pair with, by kind.",
    )
    notes: dict[str, int] = Field(default_factory=dict, description="Inputs read but not used.")

    def cell(self, split: str, aspect: str) -> Cell:
        for cell in self.cells:
            if cell.split == split and cell.aspect == aspect:
                return cell
        raise KeyError(f"no cell for split {split!r} and aspect {aspect!r}")


def _gold_pairs(conversation: GoldConversation, aspect: str) -> list[tuple[Key, int]]:
    """(prediction key, gold label) for every label of one aspect in one conversation."""
    if level_of(aspect) == "turn":
        return [
            ((conversation.conv_id, ind, aspect), labels[aspect])
            for ind, labels in conversation.turn_labels.items()
            if aspect in labels
        ]
    if aspect in conversation.dialogue_labels:
        return [((conversation.conv_id, None, aspect), conversation.dialogue_labels[aspect])]
    return []


def _cell(conversations: list[GoldConversation], split: str, aspect: str, predictions: Predictions) -> Cell:
    xs: list[float] = []
    ys: list[float] = []
    reasons: Counter[str] = Counter()
    labels = 0
    for conversation in conversations:
        for key, label in _gold_pairs(conversation, aspect):
            labels += 1
            value = predictions.values.get(key)
            if value is None:
                reasons[predictions.reasons.get(key, NO_PREDICTION)] += 1
                continue
            xs.append(value)
            ys.append(float(label))
    corr = correlate(xs, ys)
    return Cell(
        split=split,
        aspect=aspect,
        level=level_of(aspect),
        labels=labels,
        n=corr.n,
        missing=sum(reasons.values()),
        missing_reasons=dict(sorted(reasons.items())),
        pearson=corr.pearson,
        spearman=corr.spearman,
        undefined=corr.undefined,
    )


def _unmatched(gold: GoldSet, predictions: Predictions) -> tuple[list[str], dict[str, int]]:
    """Conversations not in the gold data, and predictions with no label to pair with."""
    unknown = sorted(predictions.conv_ids() - set(gold.by_id) - gold.excluded)
    counts: Counter[str] = Counter()
    for conv_id, turn_ind, aspect in predictions.values:
        conversation = gold.by_id.get(conv_id)
        if conversation is None:
            continue
        if turn_ind is None:
            if aspect not in conversation.dialogue_labels:
                counts[f"{aspect}: no gold label for the conversation"] += 1
        elif turn_ind not in conversation.turn_of:
            counts[f"{aspect}: turn_ind is not an assistant utterance"] += 1
        elif aspect not in conversation.turn_labels.get(turn_ind, {}):
            counts[f"{aspect}: assistant turn without a gold label"] += 1
    return unknown, dict(sorted(counts.items()))


def meta_evaluate(gold: GoldSet, predictions: Predictions, evaluator: str) -> MetaResult:
    """Every split × aspect cell for one set of predictions (see the module docstring)."""
    cells = [_cell(gold.split(split), split, aspect, predictions) for split in SPLITS for aspect in ASPECTS]
    unknown, unmatched = _unmatched(gold, predictions)
    return MetaResult(
        evaluator=evaluator,
        source=predictions.source,
        gold=gold.source,
        conversations={split: len(gold.split(split)) for split in SPLITS},
        cells=cells,
        unknown_conv_ids=unknown,
        excluded=len(gold.excluded),
        unmatched=unmatched,
        notes=dict(sorted(predictions.notes.items())),
    )
