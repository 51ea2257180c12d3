"""Cross-validation that never lets a conversation predict itself.

Two protocols. *Grouped k-fold*: every conversation id gets one fold (`conversation_folds`,
stratified by label, seeded); a row is tested in its conversation's fold and trained on in the
others. One fold map serves every dataset that shares conversation ids (CRSArena-Eval is a
subset of CRSArena-Dial), so a conversation is never in a training fold of a model that predicts
it, whichever source the training rows came from. *Leave one group out*: train on all systems
but one, predict that one (`leave_one_group_out` with the CRS name as group).

Out-of-fold predictions (`out_of_fold`) are pooled over the folds; regularisation is chosen
inside each training fold only (`select`), with inner folds built the same grouped way.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from sklearn.base import clone
from sklearn.metrics import get_scorer
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.pipeline import Pipeline

from crsim.studies.fitting.model import set_strength

T = TypeVar("T")
Indices = npt.NDArray[np.intp]


@dataclass(frozen=True)
class Fold:
    """One split: a name (fold number or held-out group), training and test row indices."""

    name: str
    train: Indices
    test: Indices


def conversation_folds(
    conversations: Sequence[str], labels: Sequence[Hashable] | None = None, k: int = 5, seed: int = 0
) -> dict[str, int]:
    """Fold (0..k-1) of every distinct conversation id, stratified by its (first) label when given.

    Folds are drawn over the distinct ids, so all rows of a conversation share one fold.
    """
    first: dict[str, Hashable] = {}
    for index, conversation in enumerate(conversations):
        first.setdefault(conversation, labels[index] if labels is not None else 0)
    ids = sorted(first)
    if len(ids) < k:
        raise ValueError(f"{len(ids)} conversations cannot fill {k} folds")
    strata = [str(first[i]) for i in ids]
    splitter = (
        StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
        if labels is not None
        else KFold(n_splits=k, shuffle=True, random_state=seed)
    )
    fold_of: dict[str, int] = {}
    for fold, (_, test) in enumerate(splitter.split(np.zeros(len(ids)), strata)):
        fold_of.update((ids[i], fold) for i in test)
    return fold_of


def grouped_folds(conversations: Sequence[str], fold_of: dict[str, int]) -> list[Fold]:
    """Rows split by their conversation's fold; a conversation missing from `fold_of` is an error."""
    missing = sorted({c for c in conversations if c not in fold_of})
    if missing:
        raise KeyError(f"{len(missing)} conversations have no fold, e.g. {missing[0]!r}")
    assigned = np.asarray([fold_of[c] for c in conversations], dtype=np.intp)
    return [
        Fold(f"fold {fold + 1}", np.flatnonzero(assigned != fold), np.flatnonzero(assigned == fold))
        for fold in sorted(set(fold_of.values()))
        if (assigned == fold).any()
    ]


def leave_one_group_out(groups: Sequence[str]) -> list[Fold]:
    """One fold per group (sorted by name): train on every other group, test on this one."""
    values = np.asarray(groups, dtype=object)
    return [
        Fold(str(group), np.flatnonzero(values != group), np.flatnonzero(values == group))
        for group in sorted(set(groups))
    ]


def out_of_fold(
    fit_predict: Callable[[Fold], npt.NDArray[np.float64]], n: int, folds: Sequence[Fold]
) -> npt.NDArray[np.float64]:
    """Pooled test predictions: `fit_predict(fold)` trains on `fold.train` and predicts `fold.test`;
    a fold whose parts overlap, a row tested twice or a row never tested is an error."""
    predictions = np.full(n, np.nan)
    for fold in folds:
        if np.isin(fold.test, fold.train).any():
            raise ValueError(f"{fold.name}: a row is in both the training and the test part")
        if not np.isnan(predictions[fold.test]).all():
            raise ValueError(f"{fold.name}: a row is tested in two folds")
        predictions[fold.test] = fit_predict(fold)
    if np.isnan(predictions).any():
        raise ValueError(f"{int(np.isnan(predictions).sum())} rows are in no test fold")
    return predictions


def select(
    pipeline: Pipeline,
    strengths: Sequence[float],
    docs: Sequence[Any],
    y: npt.NDArray[Any],
    conversations: Sequence[str],
    *,
    scoring: str,
    k: int = 3,
    seed: int = 0,
    stratify: bool = True,
) -> Pipeline:
    """The pipeline refitted on all of `docs` with the strength that scored best in grouped k-fold.

    The features of an inner split do not depend on the strength, so they are fitted once per
    split and only the model is refitted per strength. On a tie the earlier strength wins (list
    them from the most regularised up). `scoring` is a scikit-learn scorer name.
    """
    scorer = get_scorer(scoring)
    fold_of = conversation_folds(conversations, list(y) if stratify else None, k=k, seed=seed)
    totals = np.zeros(len(strengths))
    for fold in grouped_folds(conversations, fold_of):
        features = clone(pipeline.named_steps["features"]).fit(subset(docs, fold.train), y[fold.train])
        train = features.transform(subset(docs, fold.train))
        test = features.transform(subset(docs, fold.test))
        for index, strength in enumerate(strengths):
            model = set_strength(clone(pipeline), strength).named_steps["model"]
            model.fit(train, y[fold.train])
            totals[index] += scorer(model, test, y[fold.test]) * len(fold.test)
    best = strengths[int(np.argmax(totals))]
    fitted: Pipeline = set_strength(clone(pipeline), best).fit(list(docs), y)
    return fitted


def subset(values: Sequence[T], indices: Indices) -> list[T]:
    """`values` at `indices`, as a list (documents are plain Python objects, not arrays)."""
    return [values[i] for i in indices.tolist()]
