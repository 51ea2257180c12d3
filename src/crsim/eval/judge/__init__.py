"""LLM judges: rubric scoring of dialogues (the `judge` metric).

- `rubric`: `Rubric` / `Aspect` models, shipped rubrics (`rubrics/*.yaml`) and user rubric files.
- `judge`: `RubricJudge`, one constrained-JSON question per aspect (per CRS turn for turn-level
  aspects), `Score` per aspect with explanation, raw answer and error, optional sampling.
- `evaluator`: `JudgeEvaluator`, registered as metric `judge` for `crsim evaluate`.
- Pairwise simulator comparison is a study: `crsim.studies.pairwise` (it reuses `transcript`).

See docs/judges.md.
"""

from crsim.eval.judge.evaluator import JudgeEvaluator
from crsim.eval.judge.judge import Grade, Judgement, RubricJudge, Sample, Score, answer_schema, combine
from crsim.eval.judge.rubric import Aspect, Derived, Rubric, load_rubric, parse_rubric, shipped_rubrics

__all__ = [
    "Aspect",
    "Derived",
    "Grade",
    "JudgeEvaluator",
    "Judgement",
    "Rubric",
    "RubricJudge",
    "Sample",
    "Score",
    "answer_schema",
    "combine",
    "load_rubric",
    "parse_rubric",
    "shipped_rubrics",
]
