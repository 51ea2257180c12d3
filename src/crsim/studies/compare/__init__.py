"""Paired comparisons between CRSs: every CRS of a run meets the same simulated users.

For one simulator and one metric, two CRSs A and B are compared on the users both met. A dialogue
is paired with the other CRS's dialogue of the same user, trial and occurrence (a user reused in a
run appears once per occurrence); a pair is dropped when either dialogue is not evaluable (broken by
the simulator or the infrastructure, `Dialogue.evaluable`) or has no value of the metric. A user's
kept pairs give one difference, the mean of their A − B differences, so users with several trials
do not count as several independent observations. Over those per-user differences:

- the difference: their mean, with a percentile-bootstrap interval that resamples users
  (`crsim.eval.stats.aggregate`);
- a paired test: for a 0/1 metric with one pair per user, the exact McNemar test (a binomial test
  on the discordant users, `scipy.stats.binomtest`); otherwise, up to 1,000 users, a sign-flip
  permutation test of the mean difference (`scipy.stats.permutation_test`, exact for up to 13 users),
  and above, where the permutation test costs seconds per pair and the central limit theorem holds,
  the paired t-test (`scipy.stats.ttest_1samp` on the differences);
- p-values corrected with Holm's method over the pairs of one simulator and metric
  (`statsmodels.stats.multitest.multipletests`);
- the smallest difference the run could detect with 80% power at alpha 0.05 (two-sided): the
  one-sample t-test effect size solved for n users (`statsmodels` `TTestPower`) times the standard
  deviation of the differences; and the users needed for a chosen difference;
- a ranking by mean in the metric's direction (higher or lower better, `Metric.direction`, as the
  run's summary.json records it) with significance groups (compact letter display: CRSs that share a
  letter are not significantly different after correction); a significant difference is a win for
  the CRS that is better by that direction, and a metric whose direction is "none" has no winner;
- per simulator and pair of CRSs, a verdict across metrics: wins, ties and losses, each resting on
  the Holm-corrected test of that metric.
- the run-to-run spread where the run has `--trials`: per CRS, the SD over trials of its mean.

Run folders are read column-wise (`read_columns`: integer codes per dialogue and a float per
dialogue and metric, never an object per dialogue, so a million dialogues fit in a few hundred MB);
`Observation` objects are for small collections built by hand. Both give the same numbers, bit for
bit (tests/studies/test_compare_columns.py).

docs/compare.md states the definitions and the validation (false-positive rate and power on
synthetic data, tests/studies/test_compare.py).

The package: `observation` (an observation object per dialogue and metric), `columns` (the same as
arrays, and the `Cells` that hold them), `reader` (`read_columns`), `means` (group means bit for bit),
`pairing`, `significance` (the tests and Holm), `power`, `ranking` (ranks and letter groups),
`results` (the pydantic results) and `comparison` (`compare_pair`, `compare_metric`, `verdicts`,
`compare`).
"""

from __future__ import annotations

from crsim.studies.compare.columns import (
    Cells,
    Column,
    MetricColumn,
    ObservationColumns,
    ObservationList,
    cells_of,
    columns_of,
)
from crsim.studies.compare.comparison import (
    MIN_USERS,
    compare,
    compare_metric,
    compare_pair,
    verdicts,
)
from crsim.studies.compare.observation import (
    Observation,
    observations,
    person_of,
    read_observations,
)
from crsim.studies.compare.pairing import (
    PairedSample,
    pair,
)
from crsim.studies.compare.power import (
    POWER,
    min_detectable,
    users_needed,
)
from crsim.studies.compare.ranking import (
    letter_groups,
    rank,
    trial_spread,
    user_means,
)
from crsim.studies.compare.reader import (
    SCORE_BATCH,
    read_columns,
)
from crsim.studies.compare.results import (
    Comparison,
    ComparisonOptions,
    MetricComparison,
    PairResult,
    RankEntry,
    Verdict,
    VerdictEntry,
)
from crsim.studies.compare.significance import (
    ALPHA,
    PERMUTATION_MAX_USERS,
    PERMUTATIONS,
    TestName,
    holm,
    mcnemar_pvalue,
    paired_test,
    permutation_pvalues,
    ttest_pvalues,
)

__all__ = [
    "ALPHA",
    "MIN_USERS",
    "PERMUTATIONS",
    "PERMUTATION_MAX_USERS",
    "POWER",
    "SCORE_BATCH",
    "Cells",
    "Column",
    "Comparison",
    "ComparisonOptions",
    "MetricColumn",
    "MetricComparison",
    "Observation",
    "ObservationColumns",
    "ObservationList",
    "PairResult",
    "PairedSample",
    "RankEntry",
    "TestName",
    "Verdict",
    "VerdictEntry",
    "cells_of",
    "columns_of",
    "compare",
    "compare_metric",
    "compare_pair",
    "holm",
    "letter_groups",
    "mcnemar_pvalue",
    "min_detectable",
    "observations",
    "pair",
    "paired_test",
    "permutation_pvalues",
    "person_of",
    "rank",
    "read_columns",
    "read_observations",
    "trial_spread",
    "ttest_pvalues",
    "user_means",
    "users_needed",
    "verdicts",
]
