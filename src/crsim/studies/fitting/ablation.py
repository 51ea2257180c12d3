"""The feature-set ablation of the satisfaction heads: each feature set validated as `train` validates
the shipped one, optionally with sentence embeddings of each side."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from pydantic import BaseModel

from crsim.model.dialogue import Role
from crsim.studies.fitting.specs import PROTOCOLS, LabelledSet, TrainingConfig
from crsim.studies.fitting.training import folds_for, out_of_fold_predictions, shared_folds
from crsim.studies.fitting.validation import pearson, roc_auc, spearman, within_group_auc

#: Feature sets compared by `ablation`: `DialogueVectorizer` arguments (the shipped heads use text+dense).
FEATURE_SETS: dict[str, dict[str, Any]] = {
    "dense": {"text_sides": ()},
    "text": {"dense": False},
    "text+dense": {},
}
EMBEDDING_SETS: dict[str, dict[str, Any]] = {
    "embeddings": {"text_sides": (), "dense": False, "extra": True},
    "dense+embeddings": {"text_sides": (), "extra": True},
    "text+dense+embeddings": {"extra": True},
}


class AblationRow(BaseModel):
    """Point values of one feature set under one protocol (nested strength selection as in `train`)."""

    feature_set: str
    protocol: str
    sentiment_roc_auc: float
    sentiment_within_crs_auc: float
    overall_pearson_from_probability: float
    overall_pearson_from_regressor: float
    overall_spearman_from_regressor: float


def ablation(
    dial: LabelledSet, evaluated: LabelledSet, config: TrainingConfig, *, embeddings: bool = False
) -> list[AblationRow]:
    """Validate each feature set like `train` does (both protocols); with `embeddings`, also sets with
    mean all-MiniLM-L6-v2 sentence embeddings of each side (needs the `embeddings` extra)."""
    sets = dict(FEATURE_SETS)
    if embeddings:
        dial, evaluated = with_embeddings(dial), with_embeddings(evaluated)
        sets.update(EMBEDDING_SETS)
    fold_of = shared_folds(dial, evaluated, config)
    rows = []
    for name, vectorizer in sets.items():
        satisfied = replace(config.satisfied, vectorizer=vectorizer)
        overall = replace(config.overall, vectorizer=vectorizer)
        for protocol in PROTOCOLS:
            p, _ = out_of_fold_predictions(satisfied, dial, folds_for(protocol, dial, fold_of), config)
            r, _ = out_of_fold_predictions(
                overall, evaluated, folds_for(protocol, evaluated, fold_of), config
            )
            probability_of = dict(zip(dial.conversations, p.tolist(), strict=True))
            p_eval = np.asarray([probability_of[c] for c in evaluated.conversations])
            rows.append(
                AblationRow(
                    feature_set=name,
                    protocol=protocol,
                    sentiment_roc_auc=roc_auc(dial.y, p),
                    sentiment_within_crs_auc=within_group_auc(
                        dial.y, p, np.asarray(dial.systems, dtype=object)
                    ),
                    overall_pearson_from_probability=pearson(p_eval, evaluated.y),
                    overall_pearson_from_regressor=pearson(r, evaluated.y),
                    overall_spearman_from_regressor=spearman(r, evaluated.y),
                )
            )
    return rows


def with_embeddings(data: LabelledSet) -> LabelledSet:
    """The set with `extra` = mean sentence embedding of the user's, then of the CRS's utterances."""
    from crsim.crs.candidates import embedding_model

    model = embedding_model()
    texts = sorted({u.text for d in data.dialogues for u in d.utterances})
    vectors = model.encode(
        texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    by_text = dict(zip(texts, np.asarray(vectors, dtype=np.float64), strict=True))
    width = int(np.asarray(vectors).shape[1])
    docs = []
    for dialogue, doc in zip(data.dialogues, data.docs, strict=True):
        sides = []
        for role in (Role.USER, Role.CRS):
            own = [by_text[u.text] for u in dialogue.utterances if u.role is role]
            sides.append(np.mean(own, axis=0) if own else np.zeros(width))
        docs.append(replace(doc, extra=tuple(float(v) for v in np.concatenate(sides))))
    return replace(data, docs=docs)
