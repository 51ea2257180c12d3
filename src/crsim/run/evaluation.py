"""Deprecated location of evaluation's entry point: use `crsim.eval.evaluation` (kept as an alias)."""

from __future__ import annotations

from crsim.eval.evaluation import (
    BATCH,
    NO_ANNOTATOR,
    EvaluateOptions,
    EvaluationResult,
    JudgeConfig,
    evaluate_path,
    load_judge_config,
    output_folder,
)
from crsim.model.run_folder.files import SCORES, SUMMARY

__all__ = [
    "BATCH",
    "NO_ANNOTATOR",
    "SCORES",
    "SUMMARY",
    "EvaluateOptions",
    "EvaluationResult",
    "JudgeConfig",
    "evaluate_path",
    "load_judge_config",
    "output_folder",
]
