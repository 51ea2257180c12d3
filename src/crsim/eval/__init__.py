"""Evaluation: per-dialogue metrics, population statistics and the scoring layer."""

from crsim.eval.curves import TurnCurve, turn_curves
from crsim.eval.metrics.base import Metric, NotApplicable, PerTurnMetric
from crsim.eval.scores import (
    GroupSummary,
    ScoreRecord,
    build_metrics,
    default_metrics,
    read_scores,
    score_dialogue,
    score_dialogues,
    write_scores,
)
from crsim.eval.stats import Aggregate, aggregate
from crsim.eval.summaries import summarize, write_summary

__all__ = [
    "Aggregate",
    "GroupSummary",
    "Metric",
    "NotApplicable",
    "PerTurnMetric",
    "ScoreRecord",
    "TurnCurve",
    "aggregate",
    "build_metrics",
    "default_metrics",
    "read_scores",
    "score_dialogue",
    "score_dialogues",
    "summarize",
    "turn_curves",
    "write_scores",
    "write_summary",
]
