"""Pairwise comparison of two user simulators by an LLM judge (after RecUserSim §4.1.1).

Protocol:

1. **Pairing.** Dialogues of run A and run B are paired when they have the same CRS (`crs_id`),
   the same simulated user (`user_id`) and the same trial (the `#N` suffix of the dialogue id, 0
   without one). Each run must hold one simulator, or one is chosen (`simulator_a`/`simulator_b`).
   Dialogues without a partner, without a `user_id`, or repeating a key already seen in their run
   are not compared; they are listed in the report (`unpaired_a`, `unpaired_b`, `duplicates_*`).
2. **Judging.** For each pair and each criterion the judge sees both conversations and names the
   better simulated user ("1", "2" or "tie", after a justification). It is asked twice: with A's
   conversation first and with B's first, to cancel a preference for a position.
3. **Outcome (from A's side).** Both orders prefer A: win; both prefer B: loss; both say tie:
   draw; the two orders disagree (including a winner in one order and a tie in the other): draw,
   counted in `disagreements`. If either order fails (call error or unreadable answer) the
   criterion has no outcome for that pair; it is counted in `errors` and left out of the rates.
4. **Rates.** Win, draw and loss rates per criterion over the pairs with an outcome, each with a
   Wilson score interval (`scipy.stats.binomtest(...).proportion_ci(method="wilson")`), which
   stays inside [0, 1] and behaves at rates near 0 or 1 and small n, unlike the normal interval.

The package: `criteria`, `pairing`, `records` (the pydantic records), `judge` (the LLM judge and the
outcome of two orders), `summary` (rates and intervals) and `study` (`compare_dialogues`,
`compare_runs`).
"""

from __future__ import annotations

from crsim.studies.pairwise.criteria import (
    CRITERIA,
    DEFAULT_CRITERIA,
    Criteria,
    load_criteria,
    shipped_criteria,
)
from crsim.studies.pairwise.judge import (
    DEFAULT_PROMPT,
    PROMPTS,
    PairwiseJudge,
    Verdict,
    outcome,
)
from crsim.studies.pairwise.pairing import (
    Pairing,
    PairKey,
    pair_dialogues,
    pair_key,
    select_simulator,
    trial_of,
)
from crsim.studies.pairwise.records import (
    CriterionOutcome,
    CriterionSummary,
    Outcome,
    PairResult,
    PairwiseReport,
    Preference,
    Rate,
    Side,
)
from crsim.studies.pairwise.study import (
    compare_dialogues,
    compare_runs,
    run_dialogues,
)
from crsim.studies.pairwise.summary import (
    rate,
    summarize,
)

__all__ = [
    "CRITERIA",
    "DEFAULT_CRITERIA",
    "DEFAULT_PROMPT",
    "PROMPTS",
    "Criteria",
    "CriterionOutcome",
    "CriterionSummary",
    "Outcome",
    "PairKey",
    "PairResult",
    "Pairing",
    "PairwiseJudge",
    "PairwiseReport",
    "Preference",
    "Rate",
    "Side",
    "Verdict",
    "compare_dialogues",
    "compare_runs",
    "load_criteria",
    "outcome",
    "pair_dialogues",
    "pair_key",
    "rate",
    "run_dialogues",
    "select_simulator",
    "shipped_criteria",
    "summarize",
    "trial_of",
]
