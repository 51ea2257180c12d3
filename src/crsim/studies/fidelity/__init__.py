"""Fidelity of simulated users to human users: the same measures on a run's user turns and on the
seekers of a human corpus, with a human-vs-human control from two halves of the corpus.

Both sides are read with the same instruments: every utterance is (re-)annotated by the rule
annotator (`crsim.eval.annotators.rules`), recommendation rounds are cut as the metrics cut them
(`crsim.eval.metrics.structure.recommends`) and a round's reaction is the user's last `accept` or
`reject` in it, as the metrics read acceptance. Each measure is compared as a distribution, by the
Jensen-Shannon distance (base 2, in [0, 1]); proportions are two-outcome distributions. The summary
distance of a simulator is the mean of those distances over the measures both sides have; the
indistinguishability score is the AUC of a classifier of human vs simulated user turns under
cross-validation grouped by dialogue (0.5: indistinguishable). docs/fidelity.md defines each measure.

The package: `sides` (what the measures read from a set of dialogues), `distances` (distributions,
the Jensen-Shannon distance, distinct-n), `classifier`, `intervals` (the bootstrap), `measures` (the
rows of the table), `report` (the pydantic report) and `study` (`fidelity`, `read_corpus`).
"""

from __future__ import annotations

from crsim.studies.fidelity.classifier import (
    Scored,
    classifier_auc,
    classifier_scores,
)
from crsim.studies.fidelity.distances import (
    DISTINCT_DRAWS,
    Table,
    bernoulli,
    binned,
    distinct,
    js_distance,
    mean,
    share,
    tokens,
)
from crsim.studies.fidelity.intervals import (
    DEFINED_SHARE,
    LEVEL,
    RESAMPLES,
    Interval,
    auc_interval,
    percentile_interval,
)
from crsim.studies.fidelity.measures import (
    LENGTH_BINS,
    TURN_BINS,
    bootstrap_rows,
    measure_rows,
    summary,
)
from crsim.studies.fidelity.report import (
    FidelityReport,
    Intervals,
    MeasureRow,
    SimulatorFidelity,
)
from crsim.studies.fidelity.sides import (
    ACCEPTED,
    NO_REACTION,
    REJECTED,
    UserSide,
    is_question,
    merged,
    ngrams,
    reactions,
    side_of,
    words,
)
from crsim.studies.fidelity.study import (
    CORPORA,
    fidelity,
    read_corpus,
    sample,
    simulator_fidelity,
    split_halves,
)

__all__ = [
    "ACCEPTED",
    "CORPORA",
    "DEFINED_SHARE",
    "DISTINCT_DRAWS",
    "LENGTH_BINS",
    "LEVEL",
    "NO_REACTION",
    "REJECTED",
    "RESAMPLES",
    "TURN_BINS",
    "FidelityReport",
    "Interval",
    "Intervals",
    "MeasureRow",
    "Scored",
    "SimulatorFidelity",
    "Table",
    "UserSide",
    "auc_interval",
    "bernoulli",
    "binned",
    "bootstrap_rows",
    "classifier_auc",
    "classifier_scores",
    "distinct",
    "fidelity",
    "is_question",
    "js_distance",
    "mean",
    "measure_rows",
    "merged",
    "ngrams",
    "percentile_interval",
    "reactions",
    "read_corpus",
    "sample",
    "share",
    "side_of",
    "simulator_fidelity",
    "split_halves",
    "summary",
    "tokens",
    "words",
]
