"""Train the satisfaction heads on CRSArena and validate them; used by scripts/train_satisfaction.py.

Two heads share nothing but the feature definitions:

* `satisfied`: logistic regression on CRSArena-Dial's self-reported sentiment (satisfied = 1);
  its output is the probability that the user is satisfied.
* `overall`: ridge regression on CRSArena-Eval's aggregated overall impression (0-4), clipped to
  0-4.

Validation runs both CV protocols (`crsim.studies.fitting.cv`) with the regularisation strength
chosen inside each training fold; the final heads are fitted on all data with the strength chosen
by grouped CV on all of it. Everything is seeded, so the same data give the same files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from importlib.metadata import version
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, Field
from sklearn.pipeline import Pipeline

from crsim.core.errors import DataError
from crsim.datasets.base import convert_dataset
from crsim.datasets.crsarena import CrsArenaDialReader, CrsArenaEvalReader, CrsArenaParams
from crsim.eval.learned.artifact import ARTIFACT_VERSION, Artifact, TrainingData
from crsim.eval.learned.features import FEATURE_VERSION, DialogueDocument, document
from crsim.model import annotations as keys
from crsim.model.dialogue import Dialogue, Role
from crsim.studies.fitting.cv import (
    Fold,
    conversation_folds,
    grouped_folds,
    leave_one_group_out,
    out_of_fold,
    select,
    subset,
)
from crsim.studies.fitting.model import HeadKind, build_pipeline, export_head, predict
from crsim.studies.fitting.validation import (
    BinaryReport,
    CorrelationReport,
    SystemReport,
    binary_report,
    correlation_report,
    pearson,
    roc_auc,
    spearman,
    system_level,
    within_group_auc,
)

Protocol = Literal["grouped_5fold", "leave_one_system_out"]
PROTOCOLS: tuple[Protocol, ...] = ("grouped_5fold", "leave_one_system_out")
SPLITS = ("all", "redial", "opendialkg")
FloatArray = npt.NDArray[np.float64]


@dataclass
class LabelledSet:
    """One labelled dataset: documents, labels and, per row, conversation id, CRS and CRS dataset."""

    name: str
    description: str
    sources: list[str]
    dialogues: list[Dialogue]
    docs: list[DialogueDocument]
    y: FloatArray
    conversations: list[str]
    systems: list[str]
    crs_datasets: list[str]

    def rows(self, split: str) -> npt.NDArray[np.intp]:
        """Row indices of a split: `all`, or the CRSs trained on `redial` / `opendialkg`."""
        return np.asarray([i for i, d in enumerate(self.crs_datasets) if split in ("all", d)], dtype=np.intp)


@dataclass(frozen=True)
class HeadSpec:
    """How one head is trained: model kind, the strengths tried, how they are scored, output range."""

    name: str
    kind: HeadKind
    target: str
    strengths: tuple[float, ...]
    scoring: str
    clip: tuple[float, float] | None = None
    vectorizer: dict[str, Any] = field(default_factory=dict)


SATISFIED = HeadSpec(
    name="satisfied",
    kind="logistic",
    target="P(sentiment = satisfied): the user's self-report at the end of a CRSArena-Dial conversation",
    strengths=(0.01, 0.03, 0.1, 0.3, 1.0),
    scoring="neg_log_loss",
)
OVERALL = HeadSpec(
    name="overall",
    kind="linear",
    target="dialogue_overall (0-4): CRSArena-Eval's aggregated overall impression",
    strengths=(0.01, 0.03, 0.1, 0.3, 1.0),
    scoring="neg_mean_squared_error",
    clip=(0.0, 4.0),
)


class TrainingConfig(BaseModel):
    """Knobs of a training run; the defaults produce the shipped artifact."""

    folds: int = 5
    inner_folds: int = 3
    seed: int = 0
    resamples: int = 2000
    satisfied: HeadSpec = SATISFIED
    overall: HeadSpec = OVERALL

    model_config = {"arbitrary_types_allowed": True, "frozen": True}


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


class ProtocolReport(BaseModel):
    """All validation numbers of one CV protocol (out-of-fold predictions, pooled)."""

    sentiment: dict[str, BinaryReport]
    overall_from_probability: dict[str, CorrelationReport]
    overall_from_regressor: dict[str, CorrelationReport]
    systems_sentiment: SystemReport
    systems_overall_from_probability: SystemReport
    systems_overall_from_regressor: SystemReport
    strengths: dict[str, dict[str, float]]
    baseline_crs_rate: dict[str, BinaryReport] | None = Field(
        None,
        description="Grouped CV only: P(satisfied) = the training folds' satisfied share of the same CRS.",
    )
    baseline_crs_mean: dict[str, CorrelationReport] | None = Field(
        None, description="Grouped CV only: overall = the training folds' mean overall of the same CRS."
    )


class ValidationReport(BaseModel):
    """What `scripts/train_satisfaction.py` writes next to the artifact."""

    artifact: str
    seed: int
    folds: int
    inner_folds: int
    resamples: int
    data: dict[str, TrainingData]
    protocols: dict[str, ProtocolReport]
    final_strengths: dict[str, float]
    check: dict[str, float] = Field(
        description="Grouped-CV numbers at the final strengths without inner selection: a quick, exact "
        "reproduction target for tests (slightly optimistic; not a validation result)."
    )


@dataclass
class TrainingResult:
    """The artifact, its validation report, and the pooled out-of-fold predictions per protocol."""

    artifact: Artifact
    validation: ValidationReport
    predictions: dict[str, dict[str, FloatArray]]


def train(dial: LabelledSet, evaluated: LabelledSet, config: TrainingConfig, name: str) -> TrainingResult:
    """Validate both heads under both protocols, then fit them on all data (see the module docstring)."""
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
        report = _protocol_report(dial, evaluated, p, r, config)
        report.strengths.update(satisfied=p_strengths, overall=r_strengths)
        if protocol == "grouped_5fold":
            _add_baselines(report, dial, evaluated, fold_of, config)
        reports[protocol] = report
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
            metrics=_headline(spec.name, reports),
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


def _protocol_report(
    dial: LabelledSet, evaluated: LabelledSet, p: FloatArray, r: FloatArray, config: TrainingConfig
) -> ProtocolReport:
    """Sentiment numbers on Dial; overall correlations on Eval, for P(satisfied) and the regressor."""
    probability_of = dict(zip(dial.conversations, p.tolist(), strict=True))
    p_eval = np.asarray([probability_of[c] for c in evaluated.conversations])
    threshold = float(dial.y.mean())
    return ProtocolReport(
        sentiment=_binary_by_split(dial, p, threshold, config),
        overall_from_probability=_correlation_by_split(evaluated, p_eval, config),
        overall_from_regressor=_correlation_by_split(evaluated, r, config),
        systems_sentiment=system_level(dial.systems, p, dial.y),
        systems_overall_from_probability=system_level(evaluated.systems, p_eval, evaluated.y),
        systems_overall_from_regressor=system_level(evaluated.systems, r, evaluated.y),
        strengths={},
    )


def _binary_by_split(
    data: LabelledSet, p: FloatArray, threshold: float, config: TrainingConfig, within: bool = True
) -> dict[str, BinaryReport]:
    reports = {}
    for split in SPLITS:
        rows = data.rows(split)
        reports[split] = binary_report(
            data.y[rows],
            p[rows],
            subset(data.systems, rows) if within else None,
            threshold=threshold,
            seed=config.seed,
            resamples=config.resamples,
        )
    return reports


def _correlation_by_split(
    data: LabelledSet, predicted: FloatArray, config: TrainingConfig, within: bool = True
) -> dict[str, CorrelationReport]:
    reports = {}
    for split in SPLITS:
        rows = data.rows(split)
        reports[split] = correlation_report(
            predicted[rows],
            data.y[rows],
            subset(data.systems, rows) if within else None,
            seed=config.seed,
            resamples=config.resamples,
        )
    return reports


def crs_mean_predictions(data: LabelledSet, folds: Sequence[Fold]) -> FloatArray:
    """Baseline: each test row gets the mean label of its CRS in the training rows (else their mean)."""
    systems = np.asarray(data.systems, dtype=object)

    def fit_predict(fold: Fold) -> FloatArray:
        y, train_systems = data.y[fold.train], systems[fold.train]
        means = {s: float(y[train_systems == s].mean()) for s in set(train_systems.tolist())}
        fallback = float(y.mean())
        return np.asarray([means.get(s, fallback) for s in systems[fold.test].tolist()], dtype=np.float64)

    return out_of_fold(fit_predict, len(data.docs), folds)


def _add_baselines(
    report: ProtocolReport,
    dial: LabelledSet,
    evaluated: LabelledSet,
    fold_of: dict[str, int],
    config: TrainingConfig,
) -> None:
    """Fill the CRS-identity baselines of a grouped-CV report. Their within-CRS numbers are left out:
    a held-out CRS mean varies inside a CRS only through which rows the fold held out, which
    anti-correlates it with the label (a CV artefact, not information)."""
    rate = crs_mean_predictions(dial, grouped_folds(dial.conversations, fold_of))
    mean = crs_mean_predictions(evaluated, grouped_folds(evaluated.conversations, fold_of))
    report.baseline_crs_rate = _binary_by_split(dial, rate, float(dial.y.mean()), config, within=False)
    report.baseline_crs_mean = _correlation_by_split(evaluated, mean, config, within=False)


def _headline(head: str, reports: dict[str, ProtocolReport]) -> dict[str, float | None]:
    """The few numbers a head carries in the artifact (the full report is written next to it)."""
    numbers: dict[str, float | None] = {}
    for protocol, report in reports.items():
        if head == "satisfied":
            numbers[f"{protocol}.roc_auc"] = report.sentiment["all"].roc_auc.value
            numbers[f"{protocol}.within_crs_roc_auc"] = report.sentiment["all"].within_crs_roc_auc.value
            numbers[f"{protocol}.balanced_accuracy"] = report.sentiment["all"].balanced_accuracy.value
            numbers[f"{protocol}.overall_spearman"] = report.overall_from_probability["all"].spearman.value
        else:
            numbers[f"{protocol}.overall_pearson"] = report.overall_from_regressor["all"].pearson.value
            numbers[f"{protocol}.within_crs_pearson"] = report.overall_from_regressor[
                "all"
            ].within_crs_pearson.value
            numbers[f"{protocol}.overall_spearman"] = report.overall_from_regressor["all"].spearman.value
    return {key: None if value is None else round(value, 4) for key, value in numbers.items()}


def strength_of(pipeline: Pipeline) -> float:
    """The regularisation strength of a fitted pipeline (C, or 1/alpha for ridge)."""
    model = pipeline.named_steps["model"]
    return float(model.C) if hasattr(model, "C") else 1.0 / float(model.alpha)


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
