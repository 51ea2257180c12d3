"""Meta-evaluation: how well do an evaluator's scores agree with human judgements?

Against CRSArena-Eval (467 human-rated conversations with nine CRSs, shipped in `data/`):
correlations per split and aspect beside the published baselines (`meta_evaluate`), and system
rankings from evaluator versus human scores (`rank_systems`). Predictions come from a run file
(`read_run_file`) or from running a crsim evaluator (`run_evaluator`). See docs/meta-evaluation.md.
"""

from crsim.studies.meta.aspects import ASPECTS, DIALOGUE_ASPECTS, TURN_ASPECTS, canonical_aspect
from crsim.studies.meta.baselines import load_baselines
from crsim.studies.meta.correlation import Cell, Correlation, MetaResult, correlate, meta_evaluate
from crsim.studies.meta.evaluator import EvaluatorRun, predict_with, records_to_predictions, run_evaluator
from crsim.studies.meta.gold import SPLITS, GoldConversation, GoldSet, load_gold
from crsim.studies.meta.predictions import Predictions, read_run_file, write_run_file
from crsim.studies.meta.ranking import Ranking, bradley_terry, pairwise_wins, rank_systems
from crsim.studies.meta.report import MetaReport, build_report, markdown_report, rich_report

__all__ = [
    "ASPECTS",
    "DIALOGUE_ASPECTS",
    "SPLITS",
    "TURN_ASPECTS",
    "Cell",
    "Correlation",
    "EvaluatorRun",
    "GoldConversation",
    "GoldSet",
    "MetaReport",
    "MetaResult",
    "Predictions",
    "Ranking",
    "bradley_terry",
    "build_report",
    "canonical_aspect",
    "correlate",
    "load_baselines",
    "load_gold",
    "markdown_report",
    "meta_evaluate",
    "pairwise_wins",
    "predict_with",
    "rank_systems",
    "read_run_file",
    "records_to_predictions",
    "rich_report",
    "run_evaluator",
    "write_run_file",
]
