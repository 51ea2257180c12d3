"""The saved form of a learned evaluator: JSON, no pickle, applied with numpy only.

An artifact holds one or more *heads*. A head is a linear model over its own features: TF-IDF
blocks (vocabulary in column order, idf, tf scaling, block weight), standardised dense features
(names, means, scales), then coefficients and an intercept. `kind` says how the linear score is
read: `logistic` gives a probability, `linear` a value clipped to the label's range. Each head
also records what it was trained on and how well it validated.

Prediction repeats scikit-learn's transform exactly (`TfidfVectorizer` with a callable
analyser, `StandardScaler`, then the linear model), so a saved head gives the fitted pipeline's
numbers; `crsim.studies.fitting.model` exports pipelines into this form.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Literal, TypeVar

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from crsim.core.errors import DataError
from crsim.eval.learned.features import DENSE_FEATURES, FEATURE_VERSION, DialogueDocument, TextSide

#: The artifact layout version; loading any other version is an error.
ARTIFACT_VERSION = 1
ARTIFACT_FORMAT = "crsim-learned-evaluator"

FloatArray = npt.NDArray[np.float64]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class TextBlock(_Frozen):
    """One TF-IDF block: whose terms it reads and the fitted vocabulary (in column order) and idf."""

    side: TextSide
    vocabulary: list[str]
    idf: list[float]
    sublinear_tf: bool
    weight: float = Field(gt=0, description="Factor on the l2-normalised block (relative to dense).")

    @model_validator(mode="after")
    def _same_length(self) -> TextBlock:
        if len(self.vocabulary) != len(self.idf):
            raise ValueError(f"{len(self.vocabulary)} vocabulary terms but {len(self.idf)} idf values")
        if len(set(self.vocabulary)) != len(self.vocabulary):
            raise ValueError("repeated vocabulary terms")
        return self

    @cached_property
    def index(self) -> dict[str, int]:
        """Term -> column."""
        return {term: column for column, term in enumerate(self.vocabulary)}


class DenseBlock(_Frozen):
    """Standardised dense features: names (a subset of `DENSE_FEATURES`), means and scales."""

    names: list[str]
    mean: list[float]
    scale: list[float]

    @model_validator(mode="after")
    def _consistent(self) -> DenseBlock:
        if not len(self.names) == len(self.mean) == len(self.scale):
            raise ValueError(
                f"{len(self.names)} names, {len(self.mean)} means and {len(self.scale)} scales differ"
            )
        unknown = [n for n in self.names if n not in DENSE_FEATURES]
        if unknown:
            raise ValueError(f"unknown dense features {unknown}; this crsim computes {list(DENSE_FEATURES)}")
        return self


class TrainingData(_Frozen):
    """What a head was trained on, in words and numbers."""

    description: str
    sources: list[str]
    n: int
    labels: dict[str, int] = Field(description="Count per label value.")


class Head(_Frozen):
    """One linear model over its own features (see the module docstring)."""

    kind: Literal["logistic", "linear"]
    target: str = Field(description="What the head predicts, e.g. 'P(sentiment = satisfied)'.")
    text: list[TextBlock]
    dense: DenseBlock | None
    coef: list[float]
    intercept: float
    clip: tuple[float, float] | None = None
    threshold: float | None = Field(None, description="Decision threshold on a probability, if any.")
    hyperparameters: dict[str, float | int | str | bool]
    training: TrainingData
    metrics: dict[str, float | None] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _coef_length(self) -> Head:
        expected = sum(len(b.vocabulary) for b in self.text) + (len(self.dense.names) if self.dense else 0)
        if len(self.coef) != expected:
            raise ValueError(f"{len(self.coef)} coefficients for {expected} features")
        return self

    def feature_names(self) -> list[str]:
        """Column names: `user:<term>`, `crs:<term>`, then `dense:<name>`."""
        names = [f"{block.side}:{term}" for block in self.text for term in block.vocabulary]
        return names + [f"dense:{name}" for name in (self.dense.names if self.dense else [])]

    def features(self, docs: Sequence[DialogueDocument]) -> FloatArray:
        """The feature matrix (documents x columns), as the fitted pipeline would compute it."""
        blocks: list[FloatArray] = []
        for block in self.text:
            matrix = np.zeros((len(docs), len(block.vocabulary)))
            for row, doc in enumerate(docs):
                columns, values = _tfidf_row(block, doc.terms(block.side))
                matrix[row, columns] = values
            blocks.append(matrix)
        if self.dense is not None:
            blocks.append(_standardised(self.dense, docs))
        return np.hstack(blocks) if blocks else np.zeros((len(docs), 0))

    def decision(self, docs: Sequence[DialogueDocument]) -> FloatArray:
        """The linear score of each document (sparse text blocks are never materialised)."""
        coef = np.asarray(self.coef, dtype=np.float64)
        score = np.full(len(docs), self.intercept, dtype=np.float64)
        offset = 0
        for block in self.text:
            block_coef = coef[offset : offset + len(block.vocabulary)]
            for row, doc in enumerate(docs):
                columns, values = _tfidf_row(block, doc.terms(block.side))
                score[row] += float(block_coef[columns] @ values)
            offset += len(block.vocabulary)
        if self.dense is not None:
            score += _standardised(self.dense, docs) @ coef[offset:]
        return score

    def predict(self, docs: Sequence[DialogueDocument]) -> FloatArray:
        """Probabilities (logistic heads) or clipped values (linear heads), one per document."""
        score = self.decision(docs)
        if self.kind == "logistic":  # the logistic function in a form that cannot overflow
            return np.asarray(0.5 * (1.0 + np.tanh(0.5 * score)), dtype=np.float64)
        if self.clip is not None:
            return np.clip(score, self.clip[0], self.clip[1])
        return score


class Artifact(_Frozen):
    """A versioned set of heads with a name and the feature version they were computed with."""

    format: Literal["crsim-learned-evaluator"] = "crsim-learned-evaluator"
    version: int
    feature_version: int
    name: str
    description: str
    heads: dict[str, Head]
    software: dict[str, str] = Field(default_factory=dict, description="Versions it was trained with.")

    def head(self, name: str) -> Head:
        try:
            return self.heads[name]
        except KeyError:
            raise KeyError(
                f"artifact {self.name!r} has no head {name!r}; it has {sorted(self.heads)}"
            ) from None


def _tfidf_row(block: TextBlock, terms: Sequence[str]) -> tuple[npt.NDArray[np.intp], FloatArray]:
    """Columns and values of one TF-IDF row: tf (or 1 + log tf) x idf, l2-normalised, weighted."""
    counts: dict[int, int] = {}
    for term in terms:
        column = block.index.get(term)
        if column is not None:
            counts[column] = counts.get(column, 0) + 1
    columns = np.fromiter(sorted(counts), dtype=np.intp, count=len(counts))
    tf = np.asarray([float(counts[c]) for c in columns.tolist()], dtype=np.float64)
    if block.sublinear_tf:
        tf = 1.0 + np.log(tf)
    values = tf * np.asarray(block.idf, dtype=np.float64)[columns]
    norm = float(np.sqrt(values @ values))
    return columns, block.weight * values / norm if norm > 0.0 else values


def _standardised(block: DenseBlock, docs: Sequence[DialogueDocument]) -> FloatArray:
    columns = [DENSE_FEATURES.index(name) for name in block.names]
    raw = np.asarray([[doc.dense[c] for c in columns] for doc in docs], dtype=np.float64).reshape(
        len(docs), len(columns)
    )
    scale = np.asarray(block.scale, dtype=np.float64)
    return np.asarray((raw - np.asarray(block.mean)) / np.where(scale == 0.0, 1.0, scale), dtype=np.float64)


def write_json_model(model: BaseModel, path: str | Path) -> None:
    """Write a learned model as compact JSON, atomically (floats round-trip exactly; the same model
    gives the same bytes, so retraining scripts are checkable)."""
    path = Path(path)
    text = json.dumps(
        model.model_dump(mode="json"), separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text + "\n", encoding="utf-8")
    temporary.replace(path)


def save_artifact(artifact: Artifact, path: str | Path) -> None:
    """Write the artifact as JSON (exact float round trip; same artifact -> same bytes)."""
    path = Path(path)
    write_json_model(artifact, path)


M = TypeVar("M", bound=BaseModel)


def read_json_model(
    path: str | Path,
    model: type[M],
    *,
    kind: str,
    noun: str,
    fmt: str,
    versions: dict[str, int],
    retrain: str,
) -> M:
    """Read a learned model written by `write_json_model` and check its format and versions before
    validating it; any problem is a `DataError` naming the file and the field. `kind` names the
    file in messages ("CRSArena evaluator model", `noun` for short: "model"), `retrain` the script
    that rebuilds it."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DataError(f"cannot read the {kind}: {exc.strerror}", path=str(path)) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"not a valid JSON {noun} (corrupt or truncated): {exc}", path=str(path)) from None
    if not isinstance(data, dict) or data.get("format") != fmt:
        raise DataError(f"not a crsim {kind} (expected format {fmt!r})", path=str(path), field="format")
    for field, expected in versions.items():
        if data.get(field) != expected:
            raise DataError(
                f"{noun} {field} {data.get(field)!r} is not supported; this crsim reads {field} {expected} "
                f"(retrain with {retrain} or use a matching crsim)",
                path=str(path),
                field=field,
            )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        raise DataError(f"invalid {noun}: {error['msg']}", path=str(path), field=where) from None


def load_artifact(path: str | Path) -> Artifact:
    """Read and check an artifact; any problem is a `DataError` naming the file (and field)."""
    path = Path(path)
    return read_json_model(
        path,
        Artifact,
        kind="learned-evaluator artifact",
        noun="artifact",
        fmt=ARTIFACT_FORMAT,
        versions={"version": ARTIFACT_VERSION, "feature_version": FEATURE_VERSION},
        retrain="scripts/train_satisfaction.py",
    )
