"""GCDF1 on crsim dialogues: the adapter (need -> goal, acts -> actions) and the `gcdf1` evaluator."""

from __future__ import annotations

from pathlib import Path

import pytest

from crsim.eval.metrics.base import NO_ACTS, NotApplicable, metric_registry
from crsim.eval.scoring import evaluate_dialogue
from crsim.model.acts import DialogueAct
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.user import InformationNeed
from crsim.studies.gcdf1.adapter import goal_dialogue
from crsim.studies.gcdf1.dialogue import SYSTEM, USER, ActKind
from crsim.studies.gcdf1.evaluator import ASPECTS, NO_NEED, Gcdf1Evaluator

FIXTURES = Path(__file__).parents[1] / "fixtures" / "gcdf1"


def act(intent: str, *slots: tuple[str, str | None]) -> DialogueAct:
    return DialogueAct(intent=intent, slots=list(slots))


def user(text: str, *acts: DialogueAct) -> Utterance:
    return Utterance(role=Role.USER, text=text, acts=list(acts))


def crs(text: str, *acts: DialogueAct, items: tuple[str, ...] = ()) -> Utterance:
    return Utterance(role=Role.CRS, text=text, acts=list(acts), recommended_items=list(items))


NEED = InformationNeed(constraints={"genre": "comedy", "decade": "1990s"}, requests=["plot"], targets=["m1"])


def conversation(*utterances: Utterance, need: InformationNeed | None = NEED) -> Dialogue:
    return Dialogue(id="d1", utterances=list(utterances), information_need=need)


GOOD = conversation(
    crs("Hi! What kind of film?", act("greeting"), act("elicit", ("genre", None))),
    user("A comedy, please.", act("disclose", ("genre", "comedy"))),
    crs("From which decade?", act("elicit", ("decade", None))),
    user("A nineties comedy.", act("disclose", ("genre", "comedy"), ("decade", "1990s"))),
    crs("Try Groundhog Day.", act("recommend", ("title", "Groundhog Day"), ("item", "m1")), items=("m1",)),
    user("What is it about?", act("inquire", ("plot", None))),
    crs("A man relives one day.", act("inform", ("plot", "A man relives one day."))),
    user("Great, thanks!", act("accept", ("title", "Groundhog Day")), act("goodbye")),
)


def test_turns_alternate_from_the_first_user_utterance() -> None:
    converted = goal_dialogue(GOOD)
    assert [t.speaker for t in converted.turns] == [USER, SYSTEM, USER, SYSTEM, USER, SYSTEM, USER]
    assert converted.turns[0].utterance == "A comedy, please."  # the opening is left out
    assert converted.goal["movie"].constraints == (("genre", "comedy"), ("decade", "1990s"))
    assert converted.goal["movie"].requests == ("plot",)
    assert converted.system_nlu is False
    ask = converted.turns[1].frames[0].actions[0]
    assert (ask.slot, ask.kinds) == ("decade", ActKind.REQUEST)
    assert converted.turns[4].frames[0].requested_slots == ("movie-plot",)
    assert [f.service for f in converted.turns[6].frames] == ["movie", "general"]


def test_consecutive_utterances_of_one_role_are_merged_and_items_become_recommendations() -> None:
    dialogue = conversation(
        user("Hi.", act("greeting")),
        user("Comedy.", act("disclose", ("genre", "comedy"))),
        crs("Here:", items=("m1", "m2")),
        crs("Enjoy!", act("other")),
    )
    turns = goal_dialogue(dialogue).turns
    assert [t.speaker for t in turns] == [USER, SYSTEM]
    actions = turns[1].frames[0].actions
    assert [(a.slot, a.values, a.kinds) for a in actions[:2]] == [
        ("item", ("m1",), ActKind.RECOMMEND),
        ("item", ("m2",), ActKind.RECOMMEND),
    ]


def test_no_preference_is_informed_as_dontcare() -> None:
    dialogue = conversation(user("Any decade.", act("disclose", ("decade", None))))
    action = goal_dialogue(dialogue).turns[0].frames[0].actions[0]
    assert (action.slot, action.values) == ("decade", ("dontcare",))


async def test_evaluator_scores_a_well_behaved_user_fully() -> None:
    evaluator = Gcdf1Evaluator()
    values = {v.aspect: v for v in await evaluator.evaluate(GOOD)}
    assert set(values) == set(ASPECTS)
    # "comedy" is repeated while answering the CRS's question about the decade: excused
    assert values["igcdf1"].value == 1.0
    assert "repeat_answering_request x1" in (values["igcdf1"].explanation or "")
    assert values["rgcdf1"].value == 1.0 and values["rgcdf1_recall"].value == 1.0


async def test_unexplained_repetitions_and_missing_requests_lower_the_scores() -> None:
    dialogue = conversation(
        user("A comedy.", act("disclose", ("genre", "comedy"))),
        crs("Try Groundhog Day.", act("recommend", ("title", "Groundhog Day"))),
        user("Comedy.", act("disclose", ("genre", "comedy"))),
        crs("OK.", act("other")),
        user("Comedy!", act("disclose", ("genre", "comedy"))),
        crs("Hm.", act("other")),
    )
    values = {v.aspect: v.value for v in await Gcdf1Evaluator().evaluate(dialogue)}
    # three "comedy": one in the goal, one excused (a recommendation was on the table), one not
    assert values["igcdf1_precision"] == pytest.approx(2 / 3)
    assert values["igcdf1_recall"] == pytest.approx(2 / 3)  # decade never stated
    assert values["rgcdf1_recall"] == 0.0 and values["rgcdf1_precision"] == 1.0


async def test_request_free_goal_and_dialogue_give_no_request_score() -> None:
    need = InformationNeed(constraints={"genre": "comedy"})
    dialogue = conversation(user("Comedy.", act("disclose", ("genre", "comedy"))), need=need)
    values = {v.aspect: v for v in await Gcdf1Evaluator().evaluate(dialogue)}
    assert values["igcdf1"].value == 1.0
    assert values["rgcdf1"].value is None and "no requests" in (values["rgcdf1"].explanation or "")


async def test_not_applicable_without_need_or_acts() -> None:
    evaluator = Gcdf1Evaluator()
    with pytest.raises(NotApplicable) as info:
        await evaluator.evaluate(conversation(user("Hi.", act("greeting")), need=None))
    assert info.value.reason == NO_NEED
    with pytest.raises(NotApplicable) as info:
        await evaluator.evaluate(conversation(user("A comedy."), crs("OK.")))
    assert info.value.reason == NO_ACTS
    with pytest.raises(NotApplicable) as info:
        await evaluator.evaluate(conversation(crs("Hello?")))
    assert info.value.reason == NO_ACTS


async def test_registered_as_a_metric_and_usable_by_the_pipeline() -> None:
    assert metric_registry.get("gcdf1") is Gcdf1Evaluator
    params = Gcdf1Evaluator.Params(config=str(FIXTURES / "multiwoz_user_evaluator.yaml"), domain="movie")
    records = await evaluate_dialogue(GOOD, Gcdf1Evaluator(params))
    assert [r.metric for r in records] == [f"gcdf1/{a}" for a in ASPECTS]
    assert all(r.value == 1.0 for r in records)
