"""Training side of learned evaluators: a scikit-learn pipeline and its export to an artifact.

`build_pipeline` gives `DialogueVectorizer` (TF-IDF over user turns and over CRS turns, fitted on
the documents it is fitted on, i.e. the training folds only, plus standardised dense features)
followed by `LogisticRegression` (a probability head) or `DirectRidge` (a score head). `export_head`
turns a fitted pipeline into a `Head` of the JSON artifact, which prediction applies with numpy
only (`crsim.eval.learned.artifact`); nothing is pickled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import scipy.linalg
from scipy import sparse
from sklearn.base import BaseEstimator, RegressorMixin, TransformerMixin
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from crsim.eval.learned.artifact import DenseBlock, Head, TextBlock, TrainingData
from crsim.eval.learned.features import DENSE_FEATURES, DialogueDocument, TextSide

HeadKind = Literal["logistic", "linear"]
TEXT_SIDES: tuple[TextSide, ...] = ("user", "crs")


class DialogueVectorizer(TransformerMixin, BaseEstimator):  # type: ignore[misc]
    """`DialogueDocument`s -> sparse matrix: TF-IDF blocks, then standardised dense features.

    `extra=True` appends the documents' `extra` vectors (e.g. sentence embeddings) unscaled; it is
    for measuring such features and cannot be exported to an artifact.
    """

    def __init__(
        self,
        text_sides: tuple[TextSide, ...] = TEXT_SIDES,
        dense: bool = True,
        min_df: int = 2,
        sublinear_tf: bool = True,
        text_weight: float = 1.0,
        extra: bool = False,
    ) -> None:
        self.text_sides = text_sides
        self.dense = dense
        self.min_df = min_df
        self.sublinear_tf = sublinear_tf
        self.text_weight = text_weight
        self.extra = extra

    def fit(self, docs: Sequence[DialogueDocument], y: Any = None) -> DialogueVectorizer:
        self.vectorizers_ = {
            side: TfidfVectorizer(
                analyzer=_given_terms, min_df=self.min_df, sublinear_tf=self.sublinear_tf, dtype=np.float64
            ).fit([doc.terms(side) for doc in docs])
            for side in self.text_sides
        }
        self.scaler_ = StandardScaler().fit(_dense(docs)) if self.dense else None
        return self

    def transform(self, docs: Sequence[DialogueDocument]) -> sparse.csr_matrix:
        blocks = [
            self.vectorizers_[side].transform([doc.terms(side) for doc in docs]) * self.text_weight
            for side in self.text_sides
        ]
        if self.scaler_ is not None:
            blocks.append(sparse.csr_matrix(self.scaler_.transform(_dense(docs))))
        if self.extra:
            blocks.append(sparse.csr_matrix(np.asarray([doc.extra for doc in docs], dtype=np.float64)))
        return sparse.hstack(blocks, format="csr")


def _given_terms(terms: tuple[str, ...]) -> list[str]:
    """The analyser: documents arrive as their terms already (`DialogueDocument.terms`)."""
    return list(terms)


def _dense(docs: Sequence[DialogueDocument]) -> np.ndarray:
    return np.asarray([doc.dense for doc in docs], dtype=np.float64).reshape(len(docs), len(DENSE_FEATURES))


class DirectRidge(RegressorMixin, BaseEstimator):  # type: ignore[misc]
    """Ridge regression with an intercept, solved exactly by a Cholesky factorisation.

    scikit-learn's `Ridge` picks the iterative `sparse_cg` solver (tolerance 1e-4) for sparse input
    with an intercept, so its coefficients depend on the BLAS kernel's rounding at the 1e-5 level.
    Here the centred design is densified (the training sets have hundreds of rows) and the normal
    equations are solved directly, in the dual form K = XXᵀ when there are more columns than rows:
    the result is the exact minimiser up to rounding (about 1e-12 here), on any CPU.
    """

    def __init__(self, alpha: float = 1.0) -> None:
        self.alpha = alpha

    def fit(self, x: Any, y: Any) -> DirectRidge:
        design = x.toarray() if sparse.issparse(x) else np.asarray(x, dtype=np.float64)
        target = np.asarray(y, dtype=np.float64)
        x_mean, y_mean = design.mean(axis=0), float(target.mean())
        centred, target = design - x_mean, target - y_mean
        rows, columns = centred.shape
        if columns > rows:
            kernel = centred @ centred.T + self.alpha * np.eye(rows)
            dual = scipy.linalg.solve(kernel, target, assume_a="pos")
            coef = centred.T @ dual
        else:
            gram = centred.T @ centred + self.alpha * np.eye(columns)
            coef = scipy.linalg.solve(gram, centred.T @ target, assume_a="pos")
        self.coef_ = np.asarray(coef, dtype=np.float64)
        self.intercept_ = np.asarray([y_mean - float(x_mean @ self.coef_)])
        self.n_features_in_ = columns
        return self

    def predict(self, x: Any) -> np.ndarray:
        values: np.ndarray = np.asarray(x @ self.coef_, dtype=np.float64).ravel() + float(self.intercept_[0])
        return values


def build_pipeline(kind: HeadKind, strength: float = 1.0, **vectorizer: Any) -> Pipeline:
    """Vectorizer + linear model. `strength` is C of the logistic model and 1/alpha of the ridge one,
    so larger always means weaker regularisation; `vectorizer` goes to `DialogueVectorizer`."""
    model: LogisticRegression | DirectRidge
    if kind == "logistic":
        # newton-cg converges quadratically (8 iterations here; lbfgs stopped ~1e-3 short). At tol
        # 1e-6 the stopping iterate was 1.2e-6 (in probability) from the optimum, so a BLAS kernel
        # that stopped one iteration apart moved predictions that much; at 1e-10 the stopping point
        # is within ~1e-9 of the optimum whatever the kernel (see tests/eval/test_satisfaction.py).
        model = LogisticRegression(C=strength, solver="newton-cg", tol=1e-10, max_iter=1000)
    else:
        model = DirectRidge(alpha=1.0 / strength)
    return Pipeline([("features", DialogueVectorizer(**vectorizer)), ("model", model)])


def set_strength(pipeline: Pipeline, strength: float) -> Pipeline:
    """The same pipeline with another regularisation strength (C or 1/alpha)."""
    model = pipeline.named_steps["model"]
    if isinstance(model, LogisticRegression):
        return pipeline.set_params(model__C=strength)
    return pipeline.set_params(model__alpha=1.0 / strength)


def predict(pipeline: Pipeline, docs: Sequence[DialogueDocument]) -> np.ndarray:
    """Probability of the positive class (logistic) or the regressor's value (ridge)."""
    if isinstance(pipeline.named_steps["model"], LogisticRegression):
        return np.asarray(pipeline.predict_proba(docs)[:, 1], dtype=np.float64)
    return np.asarray(pipeline.predict(docs), dtype=np.float64)


def export_head(
    pipeline: Pipeline,
    *,
    target: str,
    training: TrainingData,
    clip: tuple[float, float] | None = None,
    threshold: float | None = None,
    metrics: dict[str, float | None] | None = None,
) -> Head:
    """A fitted pipeline as an artifact head (vocabularies in column order, idf, scaler, weights)."""
    vectorizer: DialogueVectorizer = pipeline.named_steps["features"]
    model = pipeline.named_steps["model"]
    if vectorizer.extra:
        raise ValueError("a pipeline with extra (embedding) features cannot be exported to an artifact")
    text = []
    for side in vectorizer.text_sides:
        fitted = vectorizer.vectorizers_[side]
        text.append(
            TextBlock(
                side=side,
                vocabulary=[str(term) for term in fitted.get_feature_names_out()],
                idf=[float(v) for v in fitted.idf_],
                sublinear_tf=vectorizer.sublinear_tf,
                weight=vectorizer.text_weight,
            )
        )
    scaler = vectorizer.scaler_
    dense = None
    if scaler is not None:
        dense = DenseBlock(
            names=list(DENSE_FEATURES),
            mean=[float(v) for v in scaler.mean_],
            scale=[float(v) for v in scaler.scale_],
        )
    logistic = isinstance(model, LogisticRegression)
    strength = float(model.C) if logistic else 1.0 / float(model.alpha)
    return Head(
        kind="logistic" if logistic else "linear",
        target=target,
        text=text,
        dense=dense,
        coef=[float(v) for v in np.ravel(model.coef_)],
        intercept=float(np.ravel(model.intercept_)[0]),
        clip=clip,
        threshold=threshold,
        hyperparameters={
            "strength": strength,
            "min_df": vectorizer.min_df,
            "text_weight": vectorizer.text_weight,
            "text_sides": ",".join(vectorizer.text_sides),
            "dense": vectorizer.dense,
        },
        training=training,
        metrics=dict(metrics or {}),
    )
