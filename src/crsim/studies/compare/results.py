"""The results of a comparison as pydantic models (what `crsim compare --json` writes and the report
reads): per pair, per CRS's rank, per simulator and metric, the verdicts, and the options."""

from __future__ import annotations

from pydantic import BaseModel, Field

from crsim.model.run_folder.summary import Direction
from crsim.studies.compare.power import POWER
from crsim.studies.compare.significance import ALPHA, TestName


class PairResult(BaseModel):
    """CRS A against CRS B on one metric under one simulator; differences are A − B."""

    simulator: str
    metric: str
    crs_a: str
    crs_b: str
    n_users: int = Field(description="Users with at least one kept pair: the n of every statistic here.")
    n_pairs: int = Field(description="Dialogue pairs kept (more than n_users with trials or reuse).")
    dropped_not_evaluable: int = Field(description="Pairs dropped: a dialogue was not evaluable.")
    dropped_missing: int = Field(description="Pairs dropped: a value was missing (not applicable/failed).")
    unmatched: int = Field(description="Dialogues whose user/trial the other CRS did not meet.")
    mean_a: float | None
    mean_b: float | None
    difference: float | None = Field(description="Mean over users of the per-user difference A − B.")
    ci_low: float | None = Field(description="Percentile-bootstrap interval, resampling users.")
    ci_high: float | None
    sd: float | None = Field(description="Standard deviation (ddof=1) of the per-user differences.")
    test: TestName | None = Field(
        description="mcnemar (0/1 metric, one pair per user), permutation (up to 1,000 users) or t "
        "(paired t-test, more users); None below two users."
    )
    p_value: float | None
    p_holm: float | None = Field(description="Holm-corrected over the pairs of this simulator and metric.")
    significant: bool = Field(description="p_holm < alpha.")
    min_detectable: float | None = Field(description="Smallest difference detectable at the given power.")
    users_for_observed: int | None = Field(description="Users needed to detect the observed difference.")
    users_for_target: int | None = Field(None, description="Users needed to detect the chosen --detect.")
    winner: str | None = Field(
        None,
        description="The CRS better by the metric's direction when the difference is significant; "
        "None when it is not, or when the metric has no direction.",
    )


class RankEntry(BaseModel):
    """One CRS's place under one simulator and metric; CRSs that share a letter are not
    significantly different."""

    crs: str
    mean: float | None = Field(description="Mean over its users of their mean value (evaluable only).")
    n_users: int
    rank: int
    group: str
    trials: int = Field(1, description="Trials the CRS's dialogues came from (`--trials`).")
    trial_sd: float | None = Field(
        None,
        description="Run-to-run spread: the standard deviation (ddof=1) over trials of the CRS's mean; "
        "None with one trial.",
    )


class MetricComparison(BaseModel):
    simulator: str
    metric: str
    direction: Direction = Field(
        description="Which way is better (ranking order and winners); 'none': ordered by value, no winner."
    )
    direction_recorded: bool = Field(
        description="False when the run's summary did not record the metric's direction (read as higher)."
    )
    pairs: list[PairResult]
    ranking: list[RankEntry]


class VerdictEntry(BaseModel):
    """One metric of a verdict: who won, on which test."""

    metric: str
    direction: Direction
    winner: str | None = Field(description="The better CRS when significant; None: a tie or no direction.")
    difference: float | None = Field(description="Mean per-user difference A − B.")
    p_holm: float | None = Field(description="The Holm-corrected p-value the outcome rests on.")
    test: TestName | None


class Verdict(BaseModel):
    """Two CRSs under one simulator across the metrics: significant wins each way and ties; metrics
    without a direction are listed but not counted."""

    simulator: str
    crs_a: str
    crs_b: str
    wins_a: int
    wins_b: int
    ties: int = Field(description="Metrics with a direction where the difference is not significant.")
    undirected: int = Field(description="Metrics without a direction (not counted either way).")
    metrics: list[VerdictEntry]


class ComparisonOptions(BaseModel):
    baseline: str | None = Field(None, description="Compare every CRS with this one only.")
    metrics: list[str] | None = Field(None, description="Metric labels; None = all that were scored.")
    alpha: float = Field(ALPHA, gt=0, lt=1)
    power: float = Field(POWER, gt=0, lt=1)
    confidence: float = Field(0.95, gt=0, lt=1)
    detect: float | None = Field(None, gt=0, description="A difference to compute the users needed for.")
    seed: int = 0


class Comparison(BaseModel):
    options: ComparisonOptions
    results: list[MetricComparison]
    verdicts: list[Verdict] = Field(default_factory=list, description="Per simulator and pair of CRSs.")
