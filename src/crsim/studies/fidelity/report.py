"""The fidelity report as pydantic models (what `crsim validate fidelity` writes): a row per measure,
one simulator's measures and summaries, how the intervals were made, and the report of a run."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from crsim.studies.fidelity.intervals import LEVEL, RESAMPLES, Interval


class MeasureRow(BaseModel):
    """One measure: its value on the simulated users, the human corpus and the two human halves, and
    the Jensen-Shannon distances simulated-vs-human and half-vs-half (the control)."""

    model_config = ConfigDict(extra="forbid")

    measure: str
    unit: str = Field(description="What one observation is: utterance, round, dialogue, act, word.")
    simulated: float | None
    human: float | None
    half_a: float | None
    half_b: float | None
    distance: float | None = Field(description="Jensen-Shannon distance, simulated vs human.")
    control_distance: float | None = Field(description="Jensen-Shannon distance, half A vs half B.")
    n_simulated: int
    n_human: int
    simulated_distribution: dict[str, float] | None = None
    human_distribution: dict[str, float] | None = None
    simulated_ci: Interval | None = Field(None, description="95% bootstrap interval (`Intervals`).")
    human_ci: Interval | None = None
    distance_ci: Interval | None = None
    control_distance_ci: Interval | None = None


class SimulatorFidelity(BaseModel):
    """All measures for one simulator of the run, its summary distance and the classifier's AUC."""

    model_config = ConfigDict(extra="forbid")

    simulator: str
    dialogues: int
    user_utterances: int
    rows: list[MeasureRow]
    summary_distance: float | None = Field(
        description="Mean Jensen-Shannon distance over the measures both sides have (0 = same)."
    )
    control_summary_distance: float | None = Field(description="The same between the two human halves.")
    auc: float | None = Field(
        description="Classifier AUC, human vs simulated user turns (0.5 = indistinguishable)."
    )
    control_auc: float | None = Field(description="Classifier AUC, half A vs half B of the human corpus.")
    summary_ci: Interval | None = None
    control_summary_ci: Interval | None = None
    auc_ci: Interval | None = None
    control_auc_ci: Interval | None = None


class Intervals(BaseModel):
    """How the intervals of a fidelity report were made."""

    model_config = ConfigDict(extra="forbid")

    method: str = Field(
        "percentile bootstrap over dialogues: each replicate draws, per side (simulated, human, half A, "
        "half B), as many dialogues as the side has, with replacement, and recomputes every measure, "
        "distance and summary"
    )
    auc_method: str = Field(
        "percentile bootstrap over dialogues of the out-of-fold classifier scores (per class, as many "
        "dialogues as it has, with replacement; the classifier is not refitted)"
    )
    level: float = LEVEL
    resamples: int = RESAMPLES
    seed: int = 0


class FidelityReport(BaseModel):
    """The fidelity of every simulator of a run against one human corpus."""

    model_config = ConfigDict(extra="forbid")

    run: str
    against: str
    domain: str
    seed: int
    human_dialogues: int
    half_dialogues: tuple[int, int]
    human_user_utterances: int
    left_out: int = Field(
        description="Run dialogues left out: the simulator or the infrastructure broke them."
    )
    simulators: list[SimulatorFidelity]
    intervals: Intervals | None = Field(None, description="None: made without intervals.")
