"""The validation report of the satisfaction heads: per CV protocol, the sentiment numbers on
CRSArena-Dial and the overall correlations on CRSArena-Eval per split, the system-level agreement,
the CRS-identity baselines, and the headline numbers an artifact carries."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, Field

from crsim.eval.learned.artifact import TrainingData
from crsim.studies.fitting.cv import Fold, grouped_folds, out_of_fold, subset
from crsim.studies.fitting.specs import SPLITS, FloatArray, LabelledSet, TrainingConfig
from crsim.studies.fitting.validation import (
    BinaryReport,
    CorrelationReport,
    SystemReport,
    binary_report,
    correlation_report,
    system_level,
)


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


def protocol_report(
    dial: LabelledSet, evaluated: LabelledSet, p: FloatArray, r: FloatArray, config: TrainingConfig
) -> ProtocolReport:
    """Sentiment numbers on Dial; overall correlations on Eval, for P(satisfied) and the regressor."""
    probability_of = dict(zip(dial.conversations, p.tolist(), strict=True))
    p_eval = np.asarray([probability_of[c] for c in evaluated.conversations])
    threshold = float(dial.y.mean())
    return ProtocolReport(
        sentiment=binary_by_split(dial, p, threshold, config),
        overall_from_probability=correlation_by_split(evaluated, p_eval, config),
        overall_from_regressor=correlation_by_split(evaluated, r, config),
        systems_sentiment=system_level(dial.systems, p, dial.y),
        systems_overall_from_probability=system_level(evaluated.systems, p_eval, evaluated.y),
        systems_overall_from_regressor=system_level(evaluated.systems, r, evaluated.y),
        strengths={},
    )


def binary_by_split(
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


def correlation_by_split(
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


def add_baselines(
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
    report.baseline_crs_rate = binary_by_split(dial, rate, float(dial.y.mean()), config, within=False)
    report.baseline_crs_mean = correlation_by_split(evaluated, mean, config, within=False)


def headline(head: str, reports: dict[str, ProtocolReport]) -> dict[str, float | None]:
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
