"""Train the satisfaction heads on CRSArena and validate them; used by scripts/train_satisfaction.py.

Two heads share nothing but the feature definitions:

* `satisfied`: logistic regression on CRSArena-Dial's self-reported sentiment (satisfied = 1);
  its output is the probability that the user is satisfied.
* `overall`: ridge regression on CRSArena-Eval's aggregated overall impression (0-4), clipped to
  0-4.

Validation runs both CV protocols (`crsim.studies.fitting.cv`) with the regularisation strength
chosen inside each training fold; the final heads are fitted on all data with the strength chosen
by grouped CV on all of it. Everything is seeded, so the same data give the same files.

The sets and settings are in `specs`, the validation report in `reports`, the feature-set
ablation in `ablation`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from sklearn.pipeline import Pipeline

from crsim.core.errors import DataError
from crsim.datasets.base import convert_dataset
from crsim.datasets.crsarena import CrsArenaDialReader, CrsArenaEvalReader, CrsArenaParams
from crsim.eval.learned.artifact import ARTIFACT_VERSION, Artifact, TrainingData
from crsim.eval.learned.features import FEATURE_VERSION, document
from crsim.model import annotations as keys
from crsim.model.dialogue import Dialogue
from crsim.studies.fitting.cv import (
    Fold,
    conversation_folds,
    grouped_folds,
    leave_one_group_out,
    out_of_fold,
    select,
    subset,
)
from crsim.studies.fitting.model import build_pipeline, export_head, predict
from crsim.studies.fitting.reports import (
    ProtocolReport,
    ValidationReport,
    add_baselines,
    headline,
    protocol_report,
)
from crsim.studies.fitting.specs import PROTOCOLS, FloatArray, HeadSpec, LabelledSet, Protocol, TrainingConfig
from crsim.studies.fitting.validation import (
    pearson,
    roc_auc,
)


def load_sets(dial: str | Path, eval_file: str | Path) -> tuple[LabelledSet, LabelledSet]:
    """CRSArena-Dial (sentiment) and CRSArena-Eval (overall) as labelled sets, items linked."""
    dial = Path(dial)
    eval_file = Path(eval_file)
    dial_dialogues = list(convert_dataset(CrsArenaDialReader(CrsArenaParams()), dial))
    eval_dialogues = list(convert_dataset(CrsArenaEvalReader(CrsArenaParams()), eval_file))
    return (
        labelled(
            "crsarena_dial",
            "CRSArena-Dial: crowd users' conversations with nine CRSs (movie domain), "
            "self-reported sentiment (satisfied / frustrated)",
            [str(dial)],
            dial_dialogues,
            lambda d: 1.0 if _human(d)["sentiment"] == "satisfied" else 0.0,
        ),
        labelled(
            "crsarena_eval",
            "CRSArena-Eval: CRSArena-Dial conversations with aggregated crowd labels; dialogue_overall 0-4",
            [str(eval_file)],
            eval_dialogues,
            lambda d: float(_human(d)["dialogue_overall"]),
        ),
    )


def _human(dialogue: Dialogue) -> dict[str, Any]:
    """The dialogue-level crowd labels of a converted CRSArena dialogue (a located error if absent)."""
    labels = keys.metadata(keys.HUMAN_DIALOGUE_LABELS, dialogue)
    if labels is None:
        raise DataError(
            f"dialogue {dialogue.id!r}: no crowd labels", field=f"metadata.{keys.HUMAN_DIALOGUE_LABELS.name}"
        )
    return labels


def labelled(
    name: str,
    description: str,
    sources: list[str],
    dialogues: Sequence[Dialogue],
    label: Callable[[Dialogue], float],
) -> LabelledSet:
    """A labelled set from converted CRSArena dialogues (`metadata`: conversation_id, crs, crs_dataset)."""
    return LabelledSet(
        name=name,
        description=description,
        sources=sources,
        dialogues=list(dialogues),
        docs=[document(d) for d in dialogues],
        y=np.asarray([label(d) for d in dialogues], dtype=np.float64),
        conversations=[str(d.metadata["conversation_id"]) for d in dialogues],
        systems=[str(d.metadata["crs"]) for d in dialogues],
        crs_datasets=[str(d.metadata["crs_dataset"]) for d in dialogues],
    )


def shared_folds(dial: LabelledSet, evaluated: LabelledSet, config: TrainingConfig) -> dict[str, int]:
    """One fold per conversation id over both sets, stratified by Dial's sentiment."""
    conversations = dial.conversations + evaluated.conversations
    labels = [str(v) for v in dial.y] + ["unlabelled"] * len(evaluated.conversations)
    return conversation_folds(conversations, labels, k=config.folds, seed=config.seed)


def fit_head(
    spec: HeadSpec, data: LabelledSet, rows: npt.NDArray[np.intp], config: TrainingConfig
) -> Pipeline:
    """The head's pipeline fitted on `rows`; with several strengths, the one inner grouped CV on
    those rows scores best."""
    pipeline = build_pipeline(spec.kind, spec.strengths[0], **spec.vectorizer)
    docs, y = subset(data.docs, rows), data.y[rows]
    if len(spec.strengths) == 1:
        fitted: Pipeline = pipeline.fit(docs, y)
        return fitted
    return select(
        pipeline,
        spec.strengths,
        docs,
        y,
        subset(data.conversations, rows),
        scoring=spec.scoring,
        k=config.inner_folds,
        seed=config.seed,
        stratify=spec.kind == "logistic",
    )


def folds_for(protocol: Protocol, data: LabelledSet, fold_of: dict[str, int]) -> list[Fold]:
    """The folds of a protocol over one set (grouped folds come from the shared fold map)."""
    if protocol == "grouped_5fold":
        return grouped_folds(data.conversations, fold_of)
    return leave_one_group_out(data.systems)


def out_of_fold_predictions(
    spec: HeadSpec, data: LabelledSet, folds: Sequence[Fold], config: TrainingConfig
) -> tuple[FloatArray, dict[str, float]]:
    """Pooled test predictions of the head, and the strength chosen in each fold."""
    chosen: dict[str, float] = {}

    def fit_predict(fold: Fold) -> FloatArray:
        fitted = fit_head(spec, data, fold.train, config)
        chosen[fold.name] = strength_of(fitted)
        return _output(spec, predict(fitted, subset(data.docs, fold.test)))

    return out_of_fold(fit_predict, len(data.docs), folds), chosen


def _output(spec: HeadSpec, predicted: FloatArray) -> FloatArray:
    return np.clip(predicted, *spec.clip) if spec.clip is not None else predicted


@dataclass
class TrainingResult:
    """The artifact, its validation report, and the pooled out-of-fold predictions per protocol."""

    artifact: Artifact
    validation: ValidationReport
    predictions: dict[str, dict[str, FloatArray]]


def train(dial: LabelledSet, evaluated: LabelledSet, config: TrainingConfig, name: str) -> TrainingResult:
    """Validate both heads under both protocols, then fit them on all data (see the module docstring)."""
    reports, predictions = _validate(dial, evaluated, config)
    training = {data.name: _training_data(data) for data in (dial, evaluated)}
    heads, final = {}, {}
    for spec, data in ((config.satisfied, dial), (config.overall, evaluated)):
        fitted = fit_head(spec, data, np.arange(len(data.docs)), config)
        final[spec.name] = strength_of(fitted)
        heads[spec.name] = export_head(
            fitted,
            target=spec.target,
            training=training[data.name],
            clip=spec.clip,
            threshold=float(data.y.mean()) if spec.kind == "logistic" else None,
            metrics=headline(spec.name, reports),
        )
    artifact = Artifact(
        version=ARTIFACT_VERSION,
        feature_version=FEATURE_VERSION,
        name=name,
        description=(
            "User satisfaction from a CRS dialogue, learned from human labels of movie-domain human-CRS "
            "conversations (CRSArena-Dial sentiment, CRSArena-Eval overall impression)."
        ),
        heads=heads,
        software={package: version(package) for package in ("crsim", "scikit-learn", "numpy")},
    )
    check = quick_check(dial, evaluated, config, final)
    validation = ValidationReport(
        artifact=name,
        seed=config.seed,
        folds=config.folds,
        inner_folds=config.inner_folds,
        resamples=config.resamples,
        data=training,
        protocols=reports,
        final_strengths=final,
        check=check,
    )
    return TrainingResult(artifact, validation, predictions)


def _validate(
    dial: LabelledSet, evaluated: LabelledSet, config: TrainingConfig
) -> tuple[dict[str, ProtocolReport], dict[str, dict[str, FloatArray]]]:
    """Both heads under each CV protocol: the protocol's report (with the strengths chosen per fold,
    and for grouped CV the CRS-identity baselines) and the pooled out-of-fold predictions."""
    fold_of = shared_folds(dial, evaluated, config)
    reports: dict[str, ProtocolReport] = {}
    predictions: dict[str, dict[str, FloatArray]] = {}
    for protocol in PROTOCOLS:
        p, p_strengths = out_of_fold_predictions(
            config.satisfied, dial, folds_for(protocol, dial, fold_of), config
        )
        r, r_strengths = out_of_fold_predictions(
            config.overall, evaluated, folds_for(protocol, evaluated, fold_of), config
        )
        predictions[protocol] = {"satisfied": p, "overall": r}
        report = protocol_report(dial, evaluated, p, r, config)
        report.strengths.update(satisfied=p_strengths, overall=r_strengths)
        if protocol == "grouped_5fold":
            add_baselines(report, dial, evaluated, fold_of, config)
        reports[protocol] = report
    return reports, predictions


def quick_check(
    dial: LabelledSet, evaluated: LabelledSet, config: TrainingConfig, strengths: dict[str, float]
) -> dict[str, float]:
    """Grouped-CV AUC of `satisfied` and Pearson r of `overall`, each at one fixed strength (seconds)."""
    fold_of = shared_folds(dial, evaluated, config)
    fixed = {
        spec.name: replace(spec, strengths=(strengths[spec.name],))
        for spec in (config.satisfied, config.overall)
    }
    p, _ = out_of_fold_predictions(
        fixed["satisfied"], dial, grouped_folds(dial.conversations, fold_of), config
    )
    r, _ = out_of_fold_predictions(
        fixed["overall"], evaluated, grouped_folds(evaluated.conversations, fold_of), config
    )
    return {"satisfied.roc_auc": roc_auc(dial.y, p), "overall.pearson": pearson(r, evaluated.y)}


def _training_data(data: LabelledSet) -> TrainingData:
    values, counts = np.unique(data.y, return_counts=True)
    return TrainingData(
        description=data.description,
        sources=data.sources,
        n=len(data.docs),
        labels={_label_name(data, v): int(c) for v, c in zip(values.tolist(), counts.tolist(), strict=True)},
    )


def _label_name(data: LabelledSet, value: float) -> str:
    if data.name == "crsarena_dial":
        return "satisfied" if value == 1.0 else "frustrated"
    return str(int(value))


def strength_of(pipeline: Pipeline) -> float:
    """The regularisation strength of a fitted pipeline (C, or 1/alpha for ridge)."""
    model = pipeline.named_steps["model"]
    return float(model.C) if hasattr(model, "C") else 1.0 / float(model.alpha)
