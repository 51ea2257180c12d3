"""System ranking: does an evaluator order the CRSs the way the human labels do?

Per-dialogue scores (the chosen aspect; a turn-level aspect is averaged over the dialogue's turns)
rank the CRSs in two ways, once from the evaluator and once from the human labels, on the same
dialogues (those the evaluator scored):

- mean score per system;
- Bradley–Terry strengths from pairwise comparisons: every dialogue of system A is compared with
  every dialogue of system B (A ≠ B); the higher score wins, equal scores are a tie that counts half
  a win for each side. The strengths p (summing to 1) maximise the BT likelihood
  Π (p_A / (p_A + p_B))^{w_AB}, fitted with Hunter's (2004) MM iteration
  p_A ← W_A / Σ_B n_AB / (p_A + p_B), where W_A is A's total wins and n_AB the comparisons of A and B.

Agreement between the two orderings: Kendall's tau-b and Spearman's rho over the systems (scipy),
per split and over all nine systems.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike
from pydantic import BaseModel, Field
from scipy import stats

from crsim.studies.meta.aspects import level_of
from crsim.studies.meta.gold import SPLITS, GoldConversation, GoldSet
from crsim.studies.meta.predictions import Predictions

#: Scopes of a ranking report: each split, then all systems together.
SCOPES: tuple[str, ...] = (*SPLITS, "all")


def pairwise_wins(scores: Sequence[Sequence[float]]) -> np.ndarray:
    """wins[a, b]: comparisons of a dialogue of system a with one of system b that a won (ties: 0.5)."""
    arrays = [np.asarray(s, dtype=float) for s in scores]
    size = len(arrays)
    wins = np.zeros((size, size))
    for a in range(size):
        for b in range(size):
            if a == b or not len(arrays[a]) or not len(arrays[b]):
                continue
            diff = arrays[a][:, None] - arrays[b][None, :]
            wins[a, b] = float(np.sum(diff > 0) + 0.5 * np.sum(diff == 0))
    return wins


def bradley_terry(wins: np.ndarray, *, max_iter: int = 10_000, tol: float = 1e-12) -> np.ndarray:
    """Bradley–Terry strengths (sum 1) from a wins matrix, by the MM algorithm (module docstring).

    A system that never wins gets strength 0; one without any comparison keeps an equal share.
    """
    wins = np.asarray(wins, dtype=float)
    size = wins.shape[0]
    if size == 0:
        return np.zeros(0)
    games = wins + wins.T
    total_wins = wins.sum(axis=1)
    strengths = np.full(size, 1.0 / size)
    for _ in range(max_iter):
        pair_sums = strengths[:, None] + strengths[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            weights = np.where(games > 0, games / np.where(pair_sums > 0, pair_sums, 1.0), 0.0)
        denominators = weights.sum(axis=1)
        updated = np.where(
            denominators > 0, total_wins / np.where(denominators > 0, denominators, 1.0), strengths
        )
        total = float(updated.sum())
        updated = np.asarray(updated / total if total > 0 else strengths, dtype=float)
        if float(np.max(np.abs(updated - strengths))) < tol:
            return updated
        strengths = updated
    return strengths


class Agreement(BaseModel):
    """Kendall tau-b and Spearman rho between two orderings of the same systems."""

    kendall: float | None
    spearman: float | None
    undefined: str | None = None


def agreement(first: ArrayLike, second: ArrayLike) -> Agreement:
    """Rank agreement of two score lists over the same systems (None when undefined, with why)."""
    x = np.asarray(first, dtype=float)
    y = np.asarray(second, dtype=float)
    if len(x) < 2:
        return Agreement(kendall=None, spearman=None, undefined="fewer than two systems")
    if bool(np.all(x == x[0])) or bool(np.all(y == y[0])):
        return Agreement(kendall=None, spearman=None, undefined="all systems tied in one ordering")
    tau = float(stats.kendalltau(x, y).statistic)
    rho = float(stats.spearmanr(x, y).statistic)
    return Agreement(
        kendall=tau if math.isfinite(tau) else None,
        spearman=rho if math.isfinite(rho) else None,
        undefined=None if math.isfinite(tau) and math.isfinite(rho) else "not a number",
    )


class SystemRow(BaseModel):
    """One CRS in one scope: its dialogues and both rankings (rank 1 = best; ties share a rank)."""

    system: str
    dialogues: int
    human_mean: float
    evaluator_mean: float
    human_bt: float
    evaluator_bt: float
    human_rank: int = Field(description="Rank by mean human score.")
    evaluator_rank: int = Field(description="Rank by mean evaluator score.")
    human_bt_rank: int
    evaluator_bt_rank: int


class Ranking(BaseModel):
    """Human versus evaluator system ranking in one scope (a split, or all systems)."""

    scope: str
    aspect: str
    dialogues: int = Field(description="Dialogues with an evaluator score, used on both sides.")
    missing: int = Field(description="Gold dialogues left out because the evaluator gave no score.")
    systems: list[SystemRow]
    mean: Agreement = Field(description="Agreement of the mean-score orderings.")
    bradley_terry: Agreement = Field(description="Agreement of the Bradley–Terry orderings.")


def dialogue_score(
    conversation: GoldConversation, predictions: Predictions, aspect: str
) -> tuple[float | None, float | None]:
    """(human, predicted) score of one dialogue for an aspect; turn-level aspects are averaged."""
    if level_of(aspect) == "dialogue":
        human = conversation.dialogue_labels.get(aspect)
        return (None if human is None else float(human)), predictions.values.get(
            (conversation.conv_id, None, aspect)
        )
    labels = [v[aspect] for v in conversation.turn_labels.values() if aspect in v]
    predicted = [predictions.values.get((conversation.conv_id, ind, aspect)) for ind in conversation.turn_of]
    present = [p for p in predicted if p is not None]
    return (
        float(np.mean(labels)) if labels else None,
        float(np.mean(present)) if present else None,
    )


def _ranks(values: np.ndarray) -> list[int]:
    return [int(r) for r in stats.rankdata(-values, method="min")]


def rank_scope(
    conversations: list[GoldConversation], predictions: Predictions, aspect: str, scope: str
) -> Ranking:
    """Both rankings of the systems among `conversations`, and their agreement."""
    human: dict[str, list[float]] = defaultdict(list)
    predicted: dict[str, list[float]] = defaultdict(list)
    missing = 0
    for conversation in conversations:
        gold_value, value = dialogue_score(conversation, predictions, aspect)
        if gold_value is None:
            continue
        if value is None:
            missing += 1
            continue
        human[conversation.crs].append(gold_value)
        predicted[conversation.crs].append(value)
    systems = sorted(human)
    human_mean = np.array([np.mean(human[s]) for s in systems])
    pred_mean = np.array([np.mean(predicted[s]) for s in systems])
    human_bt = bradley_terry(pairwise_wins([human[s] for s in systems]))
    pred_bt = bradley_terry(pairwise_wins([predicted[s] for s in systems]))
    ranks = [_ranks(v) for v in (human_mean, pred_mean, human_bt, pred_bt)]
    rows = [
        SystemRow(
            system=s,
            dialogues=len(human[s]),
            human_mean=float(human_mean[i]),
            evaluator_mean=float(pred_mean[i]),
            human_bt=float(human_bt[i]),
            evaluator_bt=float(pred_bt[i]),
            human_rank=ranks[0][i],
            evaluator_rank=ranks[1][i],
            human_bt_rank=ranks[2][i],
            evaluator_bt_rank=ranks[3][i],
        )
        for i, s in enumerate(systems)
    ]
    rows.sort(key=lambda r: (r.human_rank, r.system))
    return Ranking(
        scope=scope,
        aspect=aspect,
        dialogues=sum(len(v) for v in human.values()),
        missing=missing,
        systems=rows,
        mean=agreement(human_mean, pred_mean),
        bradley_terry=agreement(human_bt, pred_bt),
    )


def rank_systems(gold: GoldSet, predictions: Predictions, aspect: str = "overall") -> list[Ranking]:
    """Rankings per split and over all systems."""
    return [
        rank_scope(list(gold) if scope == "all" else gold.split(scope), predictions, aspect, scope)
        for scope in SCOPES
    ]
