"""Built-in metrics; importing this package registers them with `crsim.core.plugins.metric`."""

from crsim.eval.metrics import coverage, recommendation, utility
from crsim.eval.metrics.base import CutoffParams, Metric, NotApplicable, PerTurnMetric
from crsim.eval.metrics.coverage import PreferenceCoverage, PreferenceCoverageIncreaseRate
from crsim.eval.metrics.recommendation import MRR, NDCG, Jaccard, Recall
from crsim.eval.metrics.utility import RDL, SRRR, SuccessRate, Turns

__all__ = [
    "MRR",
    "NDCG",
    "RDL",
    "SRRR",
    "CutoffParams",
    "Jaccard",
    "Metric",
    "NotApplicable",
    "PerTurnMetric",
    "PreferenceCoverage",
    "PreferenceCoverageIncreaseRate",
    "Recall",
    "SuccessRate",
    "Turns",
    "coverage",
    "recommendation",
    "utility",
]
