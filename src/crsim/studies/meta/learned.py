"""Honest numbers for the learned CRSArena evaluator: it never predicts a conversation it was trained on.

Two protocols over the gold conversations:

- `cv5`: grouped 5-fold cross-validation. Every conversation gets one fold (seeded); the model that
  predicts a fold is fitted on the other four only. Turn rows belong to their conversation, so no
  turn of a test conversation is ever trained on.
- `loso`: leave one system out. Nine folds, one per CRS: fit on the other eight, predict the ninth.

Inside each fold the training part chooses its own settings (`fit_model`: inner grouped folds over
the training conversations only). The fitted model is then run as the ordinary `learned_crsarena`
evaluator over the held-out conversations, so its values are mapped to gold labels exactly like
any other evaluator's, and the pooled out-of-fold predictions go through `meta_evaluate`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

from crsim.core.progress import Progress
from crsim.eval.learned.crsarena import LearnedCrsarena
from crsim.eval.learned.crsarena_features import dialogue_features
from crsim.eval.learned.crsarena_model import CrsarenaModel
from crsim.studies.fitting.crsarena_fit import FitSettings, LabelledDialogue, fit_model
from crsim.studies.fitting.cv import Fold, conversation_folds, grouped_folds, leave_one_group_out
from crsim.studies.meta.evaluator import predict_with
from crsim.studies.meta.gold import GoldConversation, GoldSet
from crsim.studies.meta.predictions import Predictions

Protocol = Literal["cv5", "loso"]
PROTOCOLS: tuple[Protocol, ...] = ("cv5", "loso")
PROTOCOL_TITLES = {"cv5": "grouped 5-fold CV", "loso": "leave one system out"}
#: Seed of the outer conversation folds.
FOLD_SEED = 0


@dataclass(frozen=True)
class ProtocolRun:
    """Pooled out-of-fold predictions of one protocol, and the folds that made them."""

    protocol: Protocol
    predictions: Predictions
    folds: list[Fold]


def labelled(conversation: GoldConversation) -> LabelledDialogue:
    """A gold conversation as training data (turn labels keyed by utterance position = `turn_ind`)."""
    return LabelledDialogue(
        group=conversation.conv_id,
        features=dialogue_features(conversation.dialogue),
        turn_labels=conversation.turn_labels,
        dialogue_labels=conversation.dialogue_labels,
    )


def protocol_folds(gold: GoldSet, protocol: Protocol, *, k: int = 5, seed: int = FOLD_SEED) -> list[Fold]:
    """Outer folds over the gold conversations (indices into `gold.conversations`)."""
    ids = [c.conv_id for c in gold]
    if protocol == "cv5":
        return grouped_folds(ids, conversation_folds(ids, k=k, seed=seed))
    return leave_one_group_out([c.crs for c in gold])


def cross_validate(
    gold: GoldSet,
    protocol: Protocol,
    *,
    settings: FitSettings | None = None,
    k: int = 5,
    progress: Progress | None = None,
) -> ProtocolRun:
    """Fit on each fold's training part, predict its test part with the evaluator, pool the predictions.
    `progress` hears how many folds there are and each one done."""
    conversations = list(gold)
    data = [labelled(c) for c in conversations]
    folds = protocol_folds(gold, protocol, k=k)
    if progress is not None:
        progress.set_total(len(folds))
    pooled = Predictions(source=f"learned_crsarena, {PROTOCOL_TITLES[protocol]} (out of fold)")
    for fold in folds:
        model = fit_model([data[i] for i in fold.train.tolist()], settings, name=f"fold {fold.name}")
        test = GoldSet(tuple(conversations[i] for i in fold.test.tolist()), gold.source)
        part = predict_fold(model, test)
        pooled.values.update(part.values)
        pooled.reasons.update(part.reasons)
        pooled.notes.update(part.notes)
        if progress is not None:
            progress.advance()
    return ProtocolRun(protocol, pooled, folds)


def predict_fold(model: CrsarenaModel, test: GoldSet) -> Predictions:
    """Run a fitted model as the `learned_crsarena` evaluator over held-out conversations."""
    evaluator = LearnedCrsarena(model=model)
    predictions, _ = asyncio.run(predict_with(evaluator, test, concurrency=1))
    return predictions
