"""Fitting the CRSArena-Eval evaluator (`crsim.eval.learned.crsarena_model`) on labelled dialogues.

See the model module for what is fitted. Everything here is deterministic: inner folds come from
`crsim.studies.fitting.cv.conversation_folds` with a fixed seed, and ties between settings go to the
first in `FitSettings` order (the stronger regularisation and the smaller text weight first).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer

from crsim.eval.learned.crsarena_features import (
    DIALOGUE_FEATURES,
    DIALOGUE_TEXTS,
    TURN_FEATURES,
    TURN_TEXTS,
    DialogueFeatures,
)
from crsim.eval.learned.crsarena_model import (
    COMBINER_FEATURES,
    DIALOGUE_ASPECTS,
    STACK_FEATURES,
    TURN_ASPECTS,
    AspectHead,
    CrsarenaModel,
    FloatArray,
    LevelModel,
    TextField,
    TrainingInfo,
    combiner_inputs,
    dialogue_arrays,
    stack_features,
    tfidf_matrix,
    turn_arrays,
)
from crsim.studies.fitting.cv import conversation_folds, grouped_folds


@dataclass(frozen=True)
class LabelledDialogue:
    """A dialogue's features with its human labels; `group` is its conversation id (folds keep it whole)."""

    group: str
    features: DialogueFeatures
    #: CRS utterance position -> aspect -> label.
    turn_labels: Mapping[int, Mapping[str, float]]
    dialogue_labels: Mapping[str, float]


@dataclass(frozen=True)
class FitSettings:
    """The candidate settings chosen among inside the training data, and the fixed ones.

    `alphas` and `text_weights` are the turn level's grids; the dialogue level and the combiner
    choose among the wider `dialogue_alphas` and `dialogue_text_weights` (`dialogue_level`):
    with one row per conversation instead of one per CRS turn, their inner selection chose the
    edges of the turn grids (docs/meta-evaluation.md, "Variants").
    """

    alphas: tuple[float, ...] = (1000.0, 300.0, 100.0, 30.0, 10.0, 3.0)
    text_weights: tuple[float, ...] = (2.0, 4.0, 8.0)
    dialogue_alphas: tuple[float, ...] = (10000.0, 3000.0, 1000.0, 300.0, 100.0, 30.0, 10.0, 3.0)
    dialogue_text_weights: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
    inner_folds: int = 5
    seed: int = 0
    min_df: int = 2
    extra: dict[str, str] = field(default_factory=dict)

    def dialogue_level(self) -> FitSettings:
        """These settings with the dialogue level's grids in place of the turn level's."""
        return replace(self, alphas=self.dialogue_alphas, text_weights=self.dialogue_text_weights)


@dataclass
class LevelFit:
    """A fitted level and the inner out-of-fold predictions at each aspect's chosen setting."""

    model: LevelModel
    inner: dict[str, FloatArray]


def _identity(terms: Sequence[str]) -> list[str]:
    return list(terms)


def _text_fields(
    texts: Sequence[Sequence[Sequence[str]]], names: tuple[str, ...], min_df: int
) -> list[TextField]:
    fields = []
    for index, name in enumerate(names):
        docs = [row[index] for row in texts]
        if sum(1 for d in docs if d) < max(min_df, 1):
            fields.append(TextField(name=name, vocabulary=[], idf=[]))
            continue
        vectorizer = TfidfVectorizer(analyzer=_identity, min_df=min_df, sublinear_tf=True, dtype=np.float64)
        try:
            vectorizer.fit(docs)
        except ValueError:  # no term reaches min_df
            fields.append(TextField(name=name, vocabulary=[], idf=[]))
            continue
        fields.append(
            TextField(
                name=name,
                vocabulary=[str(t) for t in vectorizer.get_feature_names_out()],
                idf=[float(v) for v in vectorizer.idf_],
            )
        )
    return fields


def _centre(kernel: FloatArray, rows: FloatArray | None = None) -> FloatArray:
    """Centre a training kernel (rows None) or a test-by-training kernel, by the training features' mean."""
    column_mean = kernel.mean(axis=0)
    total = kernel.mean()
    if rows is None:
        return np.asarray(
            kernel - column_mean[None, :] - kernel.mean(axis=1)[:, None] + total, dtype=np.float64
        )
    return np.asarray(rows - rows.mean(axis=1)[:, None] - column_mean[None, :] + total, dtype=np.float64)


def fit_level(
    texts: Sequence[Sequence[Sequence[str]]],
    dense: FloatArray,
    labels: FloatArray,
    groups: Sequence[str],
    aspects: tuple[str, ...],
    names: tuple[str, ...],
    dense_names: tuple[str, ...],
    settings: FitSettings,
) -> LevelFit:
    """Ridge heads for `aspects` (columns of `labels`, NaN = unlabelled) over one level's rows."""
    fields = _text_fields(texts, names, settings.min_df)
    space = _FeatureSpace.of(texts, dense, fields)
    complete = np.asarray(~np.isnan(labels).any(axis=1), dtype=bool)
    inner = _inner_predictions(space, labels, complete, groups, settings)
    heads, chosen = _heads(space, labels, complete, inner, aspects, settings)
    model = LevelModel(
        texts=fields,
        dense_names=list(dense_names),
        dense_mean=[float(v) for v in space.mean],
        dense_scale=[float(v) for v in space.scale],
        heads=heads,
    )
    return LevelFit(model, chosen)


@dataclass(frozen=True)
class _FeatureSpace:
    """One level's rows as features: the tf-idf text matrix, the standardised dense features (with
    the mean and scale that standardise them) and the two kernels (row by row inner products)."""

    mean: FloatArray
    scale: FloatArray
    text_matrix: sparse.csr_matrix
    standard: FloatArray
    text_kernel: FloatArray
    dense_kernel: FloatArray

    @classmethod
    def of(
        cls, texts: Sequence[Sequence[Sequence[str]]], dense: FloatArray, fields: Sequence[TextField]
    ) -> _FeatureSpace:
        mean = dense.mean(axis=0)
        scale = dense.std(axis=0)
        scale = np.where(scale > 1e-12, scale, 1.0)
        text_matrix = sparse.hstack(
            [tfidf_matrix(f, [row[i] for row in texts]) for i, f in enumerate(fields)]
            or [sparse.csr_matrix((len(texts), 0))],
            format="csr",
        )
        standard = (dense - mean) / scale
        text_kernel = np.asarray((text_matrix @ text_matrix.T).toarray(), dtype=np.float64)
        dense_kernel = standard @ standard.T
        return cls(mean, scale, text_matrix, standard, text_kernel, dense_kernel)


def _inner_predictions(
    space: _FeatureSpace,
    labels: FloatArray,
    complete: FloatArray,
    groups: Sequence[str],
    settings: FitSettings,
) -> FloatArray:
    """Out-of-fold predictions of every row (inner folds by conversation, trained on the complete
    rows) for every aspect, text weight and alpha: shape (rows, aspects, weights, alphas)."""
    fold_of = conversation_folds(list(groups), k=settings.inner_folds, seed=settings.seed)
    folds = grouped_folds(list(groups), fold_of)
    n, m = labels.shape
    weights, alphas = settings.text_weights, settings.alphas
    inner = np.zeros((n, m, len(weights), len(alphas)))
    for w_index, weight in enumerate(weights):
        kernel = weight * weight * space.text_kernel + space.dense_kernel
        for fold in folds:
            train = fold.train[complete[fold.train]]
            k_train = kernel[np.ix_(train, train)]
            k_test = _centre(k_train, kernel[np.ix_(fold.test, train)])
            eigenvalues, vectors = np.linalg.eigh(_centre(k_train))
            y_mean = labels[train].mean(axis=0)
            projected = vectors.T @ (labels[train] - y_mean)
            for a_index, alpha in enumerate(alphas):
                dual = vectors @ (projected / (eigenvalues + alpha)[:, None])
                inner[fold.test, :, w_index, a_index] = k_test @ dual + y_mean
    return inner


def _heads(
    space: _FeatureSpace,
    labels: FloatArray,
    complete: np.ndarray,
    inner: FloatArray,
    aspects: tuple[str, ...],
    settings: FitSettings,
) -> tuple[dict[str, AspectHead], dict[str, FloatArray]]:
    """Per aspect, the setting whose inner predictions correlate best with its labels (ties to the
    first), the head refitted at it on every complete row, and the inner predictions at it."""
    weights, alphas = settings.text_weights, settings.alphas
    heads: dict[str, AspectHead] = {}
    chosen: dict[str, FloatArray] = {}
    final_cache: dict[int, tuple[FloatArray, FloatArray]] = {}
    rows = np.flatnonzero(complete)
    y_mean = labels[rows].mean(axis=0)
    for j, aspect in enumerate(aspects):
        labelled = ~np.isnan(labels[:, j])
        scores = np.full((len(weights), len(alphas)), -np.inf)
        for w_index in range(len(weights)):
            for a_index in range(len(alphas)):
                scores[w_index, a_index] = _pearson(inner[labelled, j, w_index, a_index], labels[labelled, j])
        w_best, a_best = np.unravel_index(int(np.argmax(scores)), scores.shape)
        chosen[aspect] = inner[:, j, w_best, a_best]
        weight, alpha = weights[int(w_best)], alphas[int(a_best)]
        if int(w_best) not in final_cache:
            kernel = (
                weight * weight * space.text_kernel[np.ix_(rows, rows)]
                + space.dense_kernel[np.ix_(rows, rows)]
            )
            final_cache[int(w_best)] = np.linalg.eigh(_centre(kernel))
        target = labels[rows, j] - y_mean[j]
        eigen = final_cache[int(w_best)]
        heads[aspect] = _head(space, rows, target, y_mean[j], eigen, (weight, alpha), scores[w_best, a_best])
    return heads, chosen


def _head(
    space: _FeatureSpace,
    rows: np.ndarray,
    target: FloatArray,
    offset: float,
    eigen: tuple[FloatArray, FloatArray],
    setting: tuple[float, float],
    inner_pearson: float,
) -> AspectHead:
    """One aspect's ridge head at `setting` (text weight, alpha), from the eigendecomposition of the
    centred kernel of the complete `rows`; `target` is their labels less the labels' mean `offset`."""
    weight, alpha = setting
    eigenvalues, vectors = eigen
    dual = vectors @ ((vectors.T @ target) / (eigenvalues + alpha))
    coef_text = weight * weight * np.asarray(space.text_matrix[rows].T @ dual).ravel()
    coef_dense = space.standard[rows].T @ dual
    fitted = np.asarray(space.text_matrix[rows] @ coef_text).ravel() + space.standard[rows] @ coef_dense
    return AspectHead(
        coef=[float(v) for v in np.concatenate([coef_text, coef_dense])],
        intercept=float(offset - fitted.mean()),
        alpha=float(alpha),
        text_weight=float(weight),
        inner_pearson=float(inner_pearson) if np.isfinite(inner_pearson) else None,
    )


def _pearson(x: FloatArray, y: FloatArray) -> float:
    if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return -np.inf
    return float(np.corrcoef(x, y)[0, 1])


def turn_labels(data: Sequence[LabelledDialogue]) -> FloatArray:
    """Turn-row labels (NaN where a turn has no label of an aspect), rows in `turn_arrays` order."""
    rows = []
    for item in data:
        for row in item.features.turns:
            labels = item.turn_labels.get(row.position, {})
            rows.append([float(labels[a]) if a in labels else np.nan for a in TURN_ASPECTS])
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(TURN_ASPECTS))


def fit_model(
    data: Sequence[LabelledDialogue],
    settings: FitSettings | None = None,
    *,
    name: str = "crsarena",
    description: str = "",
    training_description: str = "",
) -> CrsarenaModel:
    """Fit both levels on labelled dialogues (module docstring of `crsarena_model`)."""
    settings = settings or FitSettings()
    if len({item.group for item in data}) < settings.inner_folds:
        raise ValueError(f"{len(data)} dialogues cannot fill {settings.inner_folds} inner folds")
    items = [item.features for item in data]
    texts, dense = turn_arrays(items)
    turn_groups = [item.group for item in data for _ in item.features.turns]
    turn_fit = fit_level(
        texts, dense, turn_labels(data), turn_groups, TURN_ASPECTS, TURN_TEXTS, TURN_FEATURES, settings
    )
    d_texts, d_dense = dialogue_arrays(items, stack_features(items, turn_fit.inner))
    d_settings = settings.dialogue_level()
    d_labels = dialogue_labels(data)
    dialogue_fit = fit_level(
        d_texts,
        d_dense,
        d_labels,
        [item.group for item in data],
        DIALOGUE_ASPECTS,
        DIALOGUE_TEXTS,
        (*DIALOGUE_FEATURES, *STACK_FEATURES),
        d_settings,
    )
    combiner_fit = fit_level(
        [()] * len(data),
        combiner_inputs(dialogue_fit.inner, stack_features(items, turn_fit.inner)),
        d_labels,
        [item.group for item in data],
        DIALOGUE_ASPECTS,
        (),
        COMBINER_FEATURES,
        replace(d_settings, text_weights=d_settings.text_weights[:1]),
    )
    return CrsarenaModel(
        name=name,
        description=description,
        turn=turn_fit.model,
        dialogue=dialogue_fit.model,
        combiner=combiner_fit.model,
        training=TrainingInfo(
            description=training_description,
            conversations=len(data),
            turns=len(texts),
            labels=_label_counts(turn_labels(data), d_labels),
            settings=_settings_record(settings),
        ),
    )


def dialogue_labels(data: Sequence[LabelledDialogue]) -> FloatArray:
    """Dialogue-row labels (NaN where a dialogue has no label of an aspect), one row per dialogue."""
    return np.asarray(
        [[float(item.dialogue_labels.get(a, np.nan)) for a in DIALOGUE_ASPECTS] for item in data],
        dtype=np.float64,
    ).reshape(len(data), len(DIALOGUE_ASPECTS))


def _label_counts(turns: FloatArray, dialogues: FloatArray) -> dict[str, int]:
    """Aspect -> the labels it was fitted on (turn aspects, then dialogue aspects)."""
    counts = {a: int((~np.isnan(turns[:, i])).sum()) for i, a in enumerate(TURN_ASPECTS)}
    counts.update({a: int((~np.isnan(dialogues[:, i])).sum()) for i, a in enumerate(DIALOGUE_ASPECTS)})
    return counts


def _settings_record(settings: FitSettings) -> dict[str, str | int]:
    """The settings as the model's training record keeps them (grids as comma-separated text)."""
    return {
        "alphas": ",".join(str(a) for a in settings.alphas),
        "text_weights": ",".join(str(w) for w in settings.text_weights),
        "dialogue_alphas": ",".join(str(a) for a in settings.dialogue_alphas),
        "dialogue_text_weights": ",".join(str(w) for w in settings.dialogue_text_weights),
        "inner_folds": settings.inner_folds,
        "seed": settings.seed,
        "min_df": settings.min_df,
        **settings.extra,
    }
