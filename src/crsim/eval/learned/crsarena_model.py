"""The CRSArena-Eval evaluator's model: ridge regressors for seven aspects, stacked, saved as JSON.

Two levels, each a set of ridge regressions over one shared feature matrix:

- **Turn level** (relevance, interestingness): one row per CRS utterance (`TurnRow`): TF-IDF of
  the utterance, of the user utterance before it and of the one after it, plus standardised
  dense features.
- **Dialogue level** (understanding, task completion, interest arousal, efficiency, overall): one
  row per dialogue: TF-IDF of the user's and of the CRS's words, standardised dense features, and
  the dialogue's *turn-level predictions* summarised (mean, min, max, first, last, spread): the
  dialogue heads learn from what the turn heads say about each reply (stacking).

Fitting (`fit_model`) works in the dual (kernel) form: K = w²·TTᵀ + DDᵀ over the training rows,
centred, one eigendecomposition per text weight w, after which every ridge strength alpha and
every aspect costs a matrix product. The text weight and alpha of each aspect are chosen by grouped
k-fold cross-validation *inside the training data* (conversations never split across inner folds),
maximising the pooled Pearson r of the inner out-of-fold predictions. The turn heads' inner
out-of-fold predictions at the chosen setting are what the dialogue heads are trained on, so they
learn from turn predictions as noisy as those they will see on new dialogues. TF-IDF vocabularies
and the dense scalers are fitted on the training rows (no labels involved).

The fitted model is a pydantic object (`CrsarenaModel`) holding vocabularies, idf, scalers,
coefficients and intercepts; prediction (`predict`) uses numpy and scipy only, and the model is
saved as JSON (`save_model` / `load_model`), never pickled.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, model_validator
from scipy import sparse

from crsim.eval.learned.artifact import read_json_model, write_json_model
from crsim.eval.learned.crsarena_features import (
    CRSARENA_FEATURE_VERSION,
    DIALOGUE_FEATURES,
    DIALOGUE_TEXTS,
    TURN_FEATURES,
    TURN_TEXTS,
    DialogueFeatures,
)

FloatArray = npt.NDArray[np.float64]

TURN_ASPECTS: tuple[str, ...] = ("relevance", "interestingness")
DIALOGUE_ASPECTS: tuple[str, ...] = (
    "understanding",
    "task_completion",
    "interest_arousal",
    "efficiency",
    "overall",
)
#: Label range of each aspect in CRSArena-Eval; predictions are clipped to it.
RANGES: dict[str, tuple[float, float]] = {
    "relevance": (0.0, 3.0),
    "interestingness": (0.0, 2.0),
    "understanding": (0.0, 2.0),
    "task_completion": (0.0, 2.0),
    "interest_arousal": (0.0, 2.0),
    "efficiency": (0.0, 1.0),
    "overall": (0.0, 4.0),
}
_SUMMARIES = ("mean", "min", "max", "first", "last", "std")
#: The turn-prediction summaries appended to a dialogue row.
STACK_FEATURES: tuple[str, ...] = tuple(f"pred_{a}_{s}" for a in TURN_ASPECTS for s in _SUMMARIES)

#: The combiner's inputs.
COMBINER_FEATURES: tuple[str, ...] = (*(f"head_{a}" for a in DIALOGUE_ASPECTS), *STACK_FEATURES)

MODEL_FORMAT: Literal["crsim-crsarena-evaluator"] = "crsim-crsarena-evaluator"
#: Layout version of the JSON file.
MODEL_VERSION = 1


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class TextField(_Frozen):
    """One TF-IDF block: vocabulary in column order and idf (sublinear tf, l2-normalised rows)."""

    name: str
    vocabulary: list[str]
    idf: list[float]

    @model_validator(mode="after")
    def _same_length(self) -> TextField:
        if len(self.vocabulary) != len(self.idf):
            raise ValueError(f"{len(self.vocabulary)} vocabulary terms but {len(self.idf)} idf values")
        return self

    @cached_property
    def index(self) -> dict[str, int]:
        return {term: column for column, term in enumerate(self.vocabulary)}


class AspectHead(_Frozen):
    """Coefficients of one aspect over its level's columns (text blocks, then dense), and how chosen."""

    coef: list[float]
    intercept: float
    alpha: float
    text_weight: float
    inner_pearson: float | None = Field(description="Pooled r of the inner out-of-fold predictions.")


class LevelModel(_Frozen):
    """The shared features of one level and one head per aspect."""

    texts: list[TextField]
    dense_names: list[str]
    dense_mean: list[float]
    dense_scale: list[float]
    heads: dict[str, AspectHead]

    @model_validator(mode="after")
    def _consistent(self) -> LevelModel:
        if not len(self.dense_names) == len(self.dense_mean) == len(self.dense_scale):
            raise ValueError("dense_names, dense_mean and dense_scale differ in length")
        if any(not value > 0.0 for value in self.dense_scale):
            raise ValueError("dense_scale values must be positive")
        width = sum(len(t.vocabulary) for t in self.texts) + len(self.dense_names)
        for aspect, head in self.heads.items():
            if len(head.coef) != width:
                raise ValueError(f"head {aspect!r}: {len(head.coef)} coefficients for {width} columns")
        return self

    def design(self, texts: Sequence[Sequence[Sequence[str]]], dense: FloatArray) -> sparse.csr_matrix:
        """Rows -> [TF-IDF blocks | standardised dense] as this level was fitted."""
        blocks = [tfidf_matrix(field, [row[i] for row in texts]) for i, field in enumerate(self.texts)]
        scale = np.asarray(self.dense_scale)
        standard = (dense - np.asarray(self.dense_mean)) / scale
        blocks.append(sparse.csr_matrix(standard))
        return sparse.hstack(blocks, format="csr")

    @cached_property
    def coef_matrix(self) -> FloatArray:
        return np.asarray([self.heads[a].coef for a in self.heads], dtype=np.float64).T

    @cached_property
    def intercepts(self) -> FloatArray:
        return np.asarray([self.heads[a].intercept for a in self.heads], dtype=np.float64)

    def predict(self, texts: Sequence[Sequence[Sequence[str]]], dense: FloatArray) -> dict[str, FloatArray]:
        """Unclipped value of every head for every row."""
        if len(dense) == 0:
            return {a: np.zeros(0) for a in self.heads}
        values = np.asarray(self.design(texts, dense) @ self.coef_matrix) + self.intercepts
        return {a: values[:, i] for i, a in enumerate(self.heads)}


class TrainingInfo(_Frozen):
    """What the model was trained on, in words and counts."""

    description: str
    conversations: int
    turns: int
    labels: dict[str, int]
    settings: dict[str, float | int | str]


class CrsarenaModel(_Frozen):
    """The whole evaluator: a turn level and a dialogue level (stacked on turn predictions)."""

    format: Literal["crsim-crsarena-evaluator"] = MODEL_FORMAT
    version: int = MODEL_VERSION
    feature_version: int = CRSARENA_FEATURE_VERSION
    name: str
    description: str
    turn: LevelModel
    dialogue: LevelModel
    combiner: LevelModel = Field(
        description="Dialogue aspects again, from the dialogue heads' values and the turn summaries."
    )
    training: TrainingInfo
    software: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _layout(self) -> CrsarenaModel:
        """Each level reads the texts and dense features this crsim computes, and has every head."""
        expected = {
            "turn": (TURN_TEXTS, TURN_FEATURES, TURN_ASPECTS),
            "dialogue": (DIALOGUE_TEXTS, (*DIALOGUE_FEATURES, *STACK_FEATURES), DIALOGUE_ASPECTS),
            "combiner": ((), COMBINER_FEATURES, DIALOGUE_ASPECTS),
        }
        for name, (texts, dense, aspects) in expected.items():
            level: LevelModel = getattr(self, name)
            if tuple(t.name for t in level.texts) != texts or tuple(level.dense_names) != dense:
                raise ValueError(
                    f"{name}: text blocks or dense features differ from this crsim's {name} features"
                )
            if tuple(level.heads) != aspects:
                raise ValueError(f"{name}: expected heads {list(aspects)}, got {list(level.heads)}")
        return self


@dataclass(frozen=True)
class Prediction:
    """Clipped predictions of one dialogue: per CRS utterance position, and per dialogue."""

    turns: dict[int, dict[str, float]]
    dialogue: dict[str, float]


def turn_arrays(items: Sequence[DialogueFeatures]) -> tuple[list[tuple[tuple[str, ...], ...]], FloatArray]:
    """The turn rows of all dialogues in order: their texts and their dense matrix."""
    rows = [row for item in items for row in item.turns]
    dense = np.asarray([row.dense for row in rows], dtype=np.float64).reshape(len(rows), len(TURN_FEATURES))
    return [row.texts for row in rows], dense


def stack_features(items: Sequence[DialogueFeatures], turn_values: Mapping[str, FloatArray]) -> FloatArray:
    """`STACK_FEATURES` of each dialogue from its turns' predictions (rows in `turn_arrays` order)."""
    out = np.zeros((len(items), len(STACK_FEATURES)))
    start = 0
    for row, item in enumerate(items):
        stop = start + len(item.turns)
        column = 0
        for aspect in TURN_ASPECTS:
            values = np.asarray(turn_values[aspect][start:stop])
            if values.size:
                out[row, column : column + len(_SUMMARIES)] = (
                    values.mean(),
                    values.min(),
                    values.max(),
                    values[0],
                    values[-1],
                    values.std(),
                )
            column += len(_SUMMARIES)
        start = stop
    return out


def combiner_inputs(first: Mapping[str, FloatArray], stacked: FloatArray) -> FloatArray:
    """The combiner's columns (`COMBINER_FEATURES`): the dialogue heads' values, then the turn summaries."""
    return np.hstack([np.column_stack([first[a] for a in DIALOGUE_ASPECTS]), stacked])


def dialogue_arrays(
    items: Sequence[DialogueFeatures], stacked: FloatArray
) -> tuple[list[tuple[tuple[str, ...], ...]], FloatArray]:
    """The dialogue rows: their texts, and their dense features followed by the turn summaries."""
    base = np.asarray([item.dialogue.dense for item in items], dtype=np.float64).reshape(
        len(items), len(DIALOGUE_FEATURES)
    )
    return [item.dialogue.texts for item in items], np.hstack([base, stacked])


def predict(model: CrsarenaModel, items: Sequence[DialogueFeatures]) -> list[Prediction]:
    """Every aspect for every dialogue; turn values keyed by the CRS utterance's position."""
    texts, dense = turn_arrays(items)
    turn_values = model.turn.predict(texts, dense)
    d_texts, d_dense = dialogue_arrays(items, stack_features(items, turn_values))
    stacked = stack_features(items, turn_values)
    first = model.dialogue.predict(d_texts, d_dense)
    dialogue_values = model.combiner.predict([()] * len(items), combiner_inputs(first, stacked))
    out = []
    start = 0
    for index, item in enumerate(items):
        turns = {
            row.position: {a: _clip(a, float(turn_values[a][start + offset])) for a in model.turn.heads}
            for offset, row in enumerate(item.turns)
        }
        start += len(item.turns)
        out.append(
            Prediction(turns, {a: _clip(a, float(dialogue_values[a][index])) for a in model.dialogue.heads})
        )
    return out


def _clip(aspect: str, value: float) -> float:
    low, high = RANGES[aspect]
    return min(max(value, low), high)


def tfidf_matrix(field: TextField, docs: Sequence[Sequence[str]]) -> sparse.csr_matrix:
    """TF-IDF rows as scikit-learn's TfidfVectorizer(sublinear_tf=True) gives them for this vocabulary."""
    idf = np.asarray(field.idf, dtype=np.float64)
    indptr = [0]
    indices: list[int] = []
    data: list[float] = []
    for terms in docs:
        counts: dict[int, int] = {}
        for term in terms:
            column = field.index.get(term)
            if column is not None:
                counts[column] = counts.get(column, 0) + 1
        columns = sorted(counts)
        values = np.asarray([1.0 + math.log(counts[c]) for c in columns]) * idf[columns]
        norm = float(np.sqrt(values @ values)) if columns else 0.0
        indices.extend(columns)
        data.extend((values / norm).tolist() if norm > 0 else values.tolist())
        indptr.append(len(indices))
    return sparse.csr_matrix(
        (np.asarray(data, dtype=np.float64), np.asarray(indices, dtype=np.int64), np.asarray(indptr)),
        shape=(len(docs), len(field.vocabulary)),
    )


def save_model(model: CrsarenaModel, path: str | Path) -> None:
    """Write the model as JSON (floats round-trip exactly; the same model gives the same bytes)."""
    path = Path(path)
    write_json_model(model, path)


def load_model(path: str | Path) -> CrsarenaModel:
    """Read and check a saved model; any problem is a `DataError` naming the file and the field."""
    path = Path(path)
    return read_json_model(
        path,
        CrsarenaModel,
        kind="CRSArena evaluator model",
        noun="model",
        fmt=MODEL_FORMAT,
        versions={"version": MODEL_VERSION, "feature_version": CRSARENA_FEATURE_VERSION},
        retrain="scripts/train_crsarena.py",
    )
