"""Recall@(t,K), NDCG@(t,K), MRR@(t,K), PC_t, PCIR_t and Jaccard distance on hand-built dialogues."""

from __future__ import annotations

import math

import pytest

from crsim.eval.metrics import (
    MRR,
    NDCG,
    Jaccard,
    PreferenceCoverage,
    PreferenceCoverageIncreaseRate,
    Recall,
)
from crsim.eval.metrics.base import FEWER_THAN_TWO_LISTS, NO_TARGETS, NotApplicable
from crsim.eval.metrics.recommendation import jaccard_distance
from crsim.model import Dialogue, DialogueAct, InformationNeed, Role, Utterance


def user() -> Utterance:
    return Utterance(role=Role.USER, text="u", acts=[DialogueAct(intent="disclose")])


def crs(*items: str) -> Utterance:
    return Utterance(role=Role.CRS, text="c", recommended_items=list(items))


def dialogue(*utterances: Utterance, targets: tuple[str, ...] | None = ("a", "b")) -> Dialogue:
    need = None if targets is None else InformationNeed(targets=list(targets))
    return Dialogue(id="d1", utterances=list(utterances), information_need=need)


def recall(d: Dialogue, **args: int | None) -> float | None:
    return Recall(Recall.Params.model_validate(args)).score(d)


def pc(d: Dialogue, **args: int | None) -> float | None:
    return PreferenceCoverage(PreferenceCoverage.Params.model_validate(args)).score(d)


def pcir(d: Dialogue, **args: int | None) -> float | None:
    metric = PreferenceCoverageIncreaseRate(PreferenceCoverageIncreaseRate.Params.model_validate(args))
    return metric.score(d)


TWO_TURNS = dialogue(user(), crs("a", "x"), user(), crs("b"))


def test_pc_check_from_the_brief() -> None:
    assert pc(TWO_TURNS, turn=1) == 0.5
    assert pc(TWO_TURNS, turn=2) == 1.0
    assert pc(TWO_TURNS) == 1.0
    assert recall(TWO_TURNS, turn=1) == 0.5
    assert recall(TWO_TURNS, turn=2) == 0.5
    assert recall(TWO_TURNS) == 0.5


def test_pcir_is_the_gain_per_turn() -> None:
    assert pcir(TWO_TURNS, turn=1) == 0.5  # PC_0 = 0
    assert pcir(TWO_TURNS, turn=2) == 0.5
    assert pcir(TWO_TURNS, turn=3) == 0.0  # after the end nothing changes
    assert pcir(TWO_TURNS) == 0.5  # PC_2 / 2
    assert pcir(TWO_TURNS, horizon=4) == 0.25
    curve = PreferenceCoverageIncreaseRate().per_turn(TWO_TURNS, 3)
    assert curve == [0.5, 0.5, 0.0]


def test_turn_without_list_keeps_the_standing_list() -> None:
    d = dialogue(user(), crs("a"), user(), crs(), user(), crs("x"))
    assert Recall().per_turn(d, 4) == [0.5, 0.5, 0.0, 0.0]
    assert PreferenceCoverage().per_turn(d, 4) == [0.5, 0.5, 0.5, 0.5]


def test_user_ends_without_reply_counts_as_a_turn_with_carried_list() -> None:
    d = dialogue(user(), crs("a"), user())
    assert recall(d) == 0.5
    assert Recall().per_turn(d, 2) == [0.5, 0.5]


def test_opening_recommendation_belongs_to_turn_one() -> None:
    d = dialogue(crs("a"), user(), crs("x"))
    assert recall(d, turn=1) == 0.0
    assert pc(d, turn=1) == 0.5


def test_cutoff_k_and_duplicates() -> None:
    d = dialogue(user(), crs("x", "x", "y", "a", "b"))
    assert recall(d, k=2) == 0.0
    assert recall(d, k=3) == 0.5  # duplicates are dropped before cutting: x, y, a
    assert pc(d, k=10) == 1.0


def test_no_recommendation_is_zero() -> None:
    d = dialogue(user(), crs(), user(), crs())
    assert recall(d) == 0.0
    assert pc(d) == 0.0
    assert pcir(d) == 0.0


def test_dialogue_without_turns_is_scored_at_turn_one() -> None:
    assert recall(dialogue()) == 0.0
    assert pc(dialogue(crs("a"))) == 0.5


def test_no_targets_is_not_applicable() -> None:
    for targets in (None, ()):
        d = dialogue(user(), crs("a"), targets=targets)
        assert recall(d) is None
        assert pc(d) is None
        assert pcir(d) is None
        assert Recall().per_turn(d, 2) == [None, None]
        assert PreferenceCoverage().per_turn(d, 2) == [None, None]
    with pytest.raises(NotApplicable) as info:
        Recall().compute(dialogue(targets=None))
    assert info.value.reason == NO_TARGETS


def test_labels() -> None:
    assert Recall().label == "Recall@(t,10)"
    assert Recall(Recall.Params(k=50, turn=5)).label == "Recall@(5,50)"
    assert PreferenceCoverage().label == "PC@10"
    assert PreferenceCoverage(PreferenceCoverage.Params(turn=3)).label == "PC_3@10"
    assert PreferenceCoverageIncreaseRate().label == "PCIR_avg@10"
    assert PreferenceCoverageIncreaseRate(PreferenceCoverageIncreaseRate.Params(horizon=20)).label == (
        "PCIR_avg(20)@10"
    )
    assert Jaccard(Jaccard.Params(k=5)).label == "Jaccard@5"


def test_jaccard_distance() -> None:
    assert jaccard_distance(("a", "b"), ("a", "b")) == 0.0
    assert jaccard_distance(("a", "b"), ("c",)) == 1.0
    assert jaccard_distance(("a", "b"), ("b", "c")) == pytest.approx(2 / 3)


def test_jaccard_mean_over_consecutive_non_empty_lists() -> None:
    d = dialogue(user(), crs("a", "b"), user(), crs(), user(), crs("b", "c"), user(), crs("b", "c"))
    metric = Jaccard()
    assert metric.score(d) == pytest.approx((2 / 3 + 0.0) / 2)
    per_turn = metric.per_turn(d, 5)
    assert per_turn[:2] == [None, None]
    assert per_turn[2] == pytest.approx(2 / 3)
    assert per_turn[3:] == [0.0, None]


def test_jaccard_needs_two_lists_but_no_targets() -> None:
    assert Jaccard().score(dialogue(user(), crs("a"), targets=None)) is None
    with pytest.raises(NotApplicable) as info:
        Jaccard().compute(dialogue(user(), crs("a")))
    assert info.value.reason == FEWER_THAN_TWO_LISTS
    assert Jaccard().score(dialogue(user(), crs("a"), user(), crs("a"), targets=None)) == 0.0


def test_params_are_validated() -> None:
    with pytest.raises(ValueError):
        Recall.Params(k=0)
    with pytest.raises(ValueError):
        PreferenceCoverage.Params.model_validate({"turn": 0})
    with pytest.raises(ValueError):
        Recall.Params.model_validate({"cutoff": 3})


def _rank_metrics(d: Dialogue, k: int) -> tuple[float | None, float | None, float | None]:
    args = {"k": k}
    return (
        recall(d, k=k),
        NDCG(NDCG.Params.model_validate(args)).score(d),
        MRR(MRR.Params.model_validate(args)).score(d),
    )


def test_ndcg_and_mrr_check_from_the_brief() -> None:
    # iEvaLM's check: predictions [5, 3, 9], label [3]
    d = dialogue(user(), crs("5", "3", "9"), targets=("3",))
    r1, _, mrr1 = _rank_metrics(d, 1)
    r10, ndcg10, mrr10 = _rank_metrics(d, 10)
    assert (r1, r10, mrr1) == (0.0, 1.0, 0.0)
    assert ndcg10 == pytest.approx(1 / math.log2(3), abs=1e-12)  # 0.6309...
    assert round(ndcg10 or 0, 4) == 0.6309
    assert mrr10 == 0.5


def test_ndcg_with_several_targets_uses_the_ideal_list_of_their_number() -> None:
    d = dialogue(user(), crs("x", "a", "b"), targets=("a", "b", "c"))
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    expected = (1 / math.log2(3) + 1 / math.log2(4)) / ideal
    assert NDCG().score(d) == pytest.approx(expected, abs=1e-12)
    # the ideal list has min(|Y|, K) targets, so a list shorter than K is not rewarded for it
    short = dialogue(user(), crs("a"), targets=("a", "b"))
    assert NDCG().score(short) == pytest.approx(1 / (1 + 1 / math.log2(3)), abs=1e-12)
    assert NDCG(NDCG.Params(k=1)).score(short) == 1.0
    # turn t reads the standing list like Recall@(t,K); no list yet is 0
    later = dialogue(user(), crs(), user(), crs("a"), targets=("a",))
    per_turn = NDCG().per_turn(later, 3)
    assert per_turn == [0.0, 1.0, 1.0]
    assert NDCG(NDCG.Params(turn=1)).label == "NDCG@(1,10)"


def test_rank_metrics_need_targets() -> None:
    with pytest.raises(NotApplicable):
        MRR().compute(dialogue(user(), crs("a"), targets=None))
