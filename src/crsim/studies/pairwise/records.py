"""The records of a pairwise comparison: each order's answer, each criterion's outcome for a pair, the
rates per criterion and the report."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Side = Literal["A", "B", "tie"]
Outcome = Literal["win", "draw", "loss"]


class Preference(BaseModel):
    """The judge's answer in one order, translated to run labels: A, B, tie (None on error)."""

    order: Literal["a_first", "b_first"]
    better: Side | None
    justification: str | None = None
    raw: str | None = None
    error: str | None = None


class CriterionOutcome(BaseModel):
    """One criterion for one pair: the outcome from A's side (None when an order failed)."""

    criterion: str
    outcome: Outcome | None
    orders_agree: bool | None
    a_first: Preference
    b_first: Preference
    error: str | None = None


class PairResult(BaseModel):
    crs_id: str | None
    user_id: str
    trial: int
    dialogue_a: str
    dialogue_b: str
    outcomes: list[CriterionOutcome]


class Rate(BaseModel):
    """A proportion with its confidence interval (all None when there is nothing to count)."""

    rate: float | None
    ci_low: float | None
    ci_high: float | None


class CriterionSummary(BaseModel):
    """Win/draw/loss of A against B on one criterion over the pairs with an outcome (`n`)."""

    criterion: str
    n: int
    wins: int
    draws: int
    losses: int
    disagreements: int = Field(
        description="Pairs whose two orders gave different answers (counted as draws)."
    )
    errors: int = Field(description="Pairs without an outcome (a failed call or unreadable answer).")
    win: Rate
    draw: Rate
    loss: Rate


class PairwiseReport(BaseModel):
    """Everything a comparison produced: setup, pairing counts, per-criterion rates, every answer."""

    run_a: str | None
    run_b: str | None
    simulator_a: str | None
    simulator_b: str | None
    criteria: str
    judge: str
    confidence: float
    interval: str = "wilson"
    pairs_compared: int
    left_out_by_limit: int
    unpaired_a: list[str]
    unpaired_b: list[str]
    duplicates_a: list[str]
    duplicates_b: list[str]
    summaries: list[CriterionSummary]
    pairs: list[PairResult]
