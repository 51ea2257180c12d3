"""Utility metrics (success, SRRR, RDL, turns) on hand-built dialogues."""

from __future__ import annotations

import pytest

from crsim.eval.metrics import RDL, SRRR, SuccessRate, Turns
from crsim.eval.metrics.base import NO_ACTS, NotApplicable, metric_registry
from crsim.model import Dialogue, DialogueAct, Role, Utterance


def user(*intents: str) -> Utterance:
    return Utterance(role=Role.USER, text="u", acts=[DialogueAct(intent=i) for i in intents])


def crs(*items: str, acts: tuple[str, ...] = ()) -> Utterance:
    return Utterance(
        role=Role.CRS, text="c", recommended_items=list(items), acts=[DialogueAct(intent=a) for a in acts]
    )


def dialogue(*utterances: Utterance) -> Dialogue:
    return Dialogue(id="d1", utterances=list(utterances))


def scores(d: Dialogue) -> tuple[float | None, float | None, float | None]:
    return SuccessRate().score(d), SRRR().score(d), RDL().score(d)


def test_registered_names() -> None:
    names = set(metric_registry.names())
    assert {"success_rate", "srrr", "rdl", "turns", "recall", "pc", "pcir", "jaccard"} <= names
    assert metric_registry.get("srrr") is SRRR


def test_no_recommendation_scores_zero_not_missing() -> None:
    d = dialogue(crs(acts=("greeting",)), user("disclose"), crs(acts=("elicit",)), user("goodbye"))
    assert scores(d) == (0.0, 0.0, 0.0)


def test_acceptance_of_first_item() -> None:
    d = dialogue(user("request_recommendation"), crs("m1"), user("accept"))
    assert scores(d) == (1.0, 1.0, 0.5)


def test_greeting_then_one_accepted_recommendation_is_one_round() -> None:
    # UserSimCRS counts the stretch before the first recommendation as a round (SRRR 0.5); crsim does not.
    d = dialogue(
        crs(acts=("greeting",)),
        user("greeting"),
        crs(acts=("elicit",)),
        user("disclose"),
        crs("m1"),
        user("accept"),
    )
    assert SRRR().score(d) == 1.0
    assert RDL().score(d) == pytest.approx(1 / 3)


def test_several_rounds_reject_then_accept() -> None:
    d = dialogue(user("disclose"), crs("m1"), user("reject"), crs("m2"), user("accept"))
    assert scores(d) == (1.0, 0.5, pytest.approx(1 / 3))


def test_seen_is_a_failed_round() -> None:
    d = dialogue(
        user("disclose"), crs("m1"), user("seen"), crs("m2"), user("seen"), crs("m3"), user("accept")
    )
    assert SRRR().score(d) == pytest.approx(1 / 3)
    assert SuccessRate().score(d) == 1.0


def test_all_rounds_failed() -> None:
    d = dialogue(user("disclose"), crs("m1"), user("reject"), crs("m2"), user("seen", "goodbye"))
    assert scores(d) == (0.0, 0.0, 0.0)


def test_recommend_act_without_item_ids_opens_a_round() -> None:
    d = dialogue(user("disclose"), crs(acts=("recommend",)), user("accept"))
    assert scores(d) == (1.0, 1.0, 0.5)


def test_accept_before_any_recommendation_does_not_count() -> None:
    d = dialogue(user("accept"), crs(acts=("elicit",)), user("disclose"))
    assert scores(d) == (0.0, 0.0, 0.0)


def test_reject_then_accept_within_one_round_succeeds() -> None:
    d = dialogue(user("disclose"), crs("m1"), user("reject"), crs(acts=("inform",)), user("accept"))
    assert SRRR().score(d) == 1.0
    assert RDL().score(d) == pytest.approx(1 / 3)


def test_unannotated_user_utterance_is_not_applicable() -> None:
    d = dialogue(user("disclose"), crs("m1"), Utterance(role=Role.USER, text="I'll take it"))
    assert scores(d) == (None, None, None)
    with pytest.raises(NotApplicable) as info:
        SRRR().compute(d)
    assert info.value.reason == NO_ACTS
    assert "utterance 2" in str(info.value)


def test_crs_utterances_without_acts_are_fine() -> None:
    d = dialogue(user("disclose"), crs("m1"), user("accept"))
    assert d.utterances[1].acts == []
    assert SRRR().score(d) == 1.0


def test_empty_dialogue() -> None:
    d = dialogue()
    assert scores(d) == (0.0, 0.0, 0.0)
    assert Turns().score(d) == 0.0


def test_turns_counts_user_utterances() -> None:
    d = dialogue(crs(acts=("greeting",)), user("disclose"), crs("m1"), user("accept"), crs(acts=("goodbye",)))
    assert Turns().score(d) == 2.0
    assert Turns().score(dialogue(Utterance(role=Role.USER, text="hi"))) == 1.0  # needs no acts


def test_labels() -> None:
    assert [m.label for m in (SuccessRate(), SRRR(), RDL(), Turns())] == [
        "Success",
        "SRRR",
        "RDL(turns)",
        "Turns",
    ]


def test_wrong_params_type_is_rejected() -> None:
    with pytest.raises(TypeError, match="SRRR needs"):
        SRRR(Turns.Params())


def test_the_last_reaction_in_a_round_decides_whether_it_succeeded() -> None:
    accept_then_reject = dialogue(user("disclose"), crs("m1"), user("accept"), user("reject"))
    reject_then_accept = dialogue(user("disclose"), crs("m1"), user("reject"), user("accept"))
    both_at_once = dialogue(user("disclose"), crs("m1"), user("accept", "reject"))
    seen_after_accept = dialogue(user("disclose"), crs("m1"), user("accept"), user("seen"))
    assert SRRR().score(accept_then_reject) == 0.0 and SuccessRate().score(accept_then_reject) == 0.0
    assert SRRR().score(reject_then_accept) == 1.0
    assert SRRR().score(both_at_once) == 1.0  # as UserSimCRS: one utterance with both is an acceptance
    assert SRRR().score(seen_after_accept) == 1.0  # `seen` is no verdict
    assert RDL().score(accept_then_reject) == pytest.approx(1 / 3)  # the acceptance still happened


def test_mentioned_items_open_no_round() -> None:
    answer = Utterance(role=Role.CRS, text="I don't have details about m1.", mentioned_items=["m1"])
    d = dialogue(user("disclose"), crs("m1"), user("inquire"), answer, user("accept"))
    assert SRRR().score(d) == 1.0  # one round, accepted; with m1 as a recommendation it would be 0.5


def test_usersimcrs_rounds_count_the_stretch_before_the_first_recommendation() -> None:
    d = dialogue(crs(acts=("greeting",)), user("disclose"), crs("m1"), user("accept"))
    usersimcrs = SRRR(SRRR.Params(rounds="usersimcrs"))
    assert (SRRR().score(d), usersimcrs.score(d)) == (1.0, 0.5)
    starts_with_it = dialogue(crs("m1"), user("accept"))
    assert usersimcrs.score(starts_with_it) == 1.0  # no leading stretch, so no extra round
    nothing = dialogue(crs(acts=("greeting",)), user("disclose"))
    assert usersimcrs.score(nothing) == 0.0


def test_rdl_length_and_its_label() -> None:
    d = dialogue(crs(acts=("greeting",)), user("disclose"), crs("m1"), user("accept"))
    per_utterance = RDL(RDL.Params(length="utterances"))
    assert (RDL().score(d), per_utterance.score(d)) == (0.5, 0.25)
    assert (RDL().label, per_utterance.label) == ("RDL(turns)", "RDL(utterances)")
