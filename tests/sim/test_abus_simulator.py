"""Behaviour of the `abus` simulator, driven by hand-written CRS texts."""

from __future__ import annotations

from typing import Any

import pytest

from crsim.core.components import BuildContext
from crsim.crs.base import BaseCRS, CRSReply, CRSSession
from crsim.domains.movielens import movie_domain
from crsim.model.acts import Intent
from crsim.model.dialogue import TerminationReason
from crsim.model.user import InformationNeed, SimulatedUser, UserProfile
from crsim.runner.loop import run_dialogue
from crsim.sim.agenda.simulator import AgendaBasedSimulator
from crsim.sim.base import UserSimulator, UserTurn, simulator_registry

MATRIX, HEAT, RONIN, TOY_STORY, LOVE_ACTUALLY, TITANIC = "2571", "6", "2278", "1", "6942", "1721"

#: A sci-fi fan who dislikes romance (ratings on the MovieLens 0.5-5 scale).
SCIFI_FAN = {
    "6365": 5.0,  # The Matrix Reloaded
    "6934": 5.0,  # The Matrix Revolutions
    "1240": 5.0,  # The Terminator
    "589": 5.0,  # Terminator 2
    "1214": 4.5,  # Alien
    "541": 5.0,  # Blade Runner
    TITANIC: 1.5,
    "8533": 1.0,  # The Notebook
    "597": 1.5,  # Pretty Woman
    "2671": 1.0,  # Notting Hill
    "539": 1.5,  # Sleepless in Seattle
    TOY_STORY: 3.0,
}


def make_user(
    constraints: dict[str, Any] | None = None,
    requests: list[str] | None = None,
    targets: list[str] | None = None,
    **profile: Any,
) -> SimulatedUser:
    need = InformationNeed(constraints=constraints or {}, requests=requests or [], targets=targets or [])
    profile.setdefault("item_ratings", SCIFI_FAN)
    return SimulatedUser(id="u1", profile=UserProfile(**profile), need=need)


def make_sim(seed: int = 0, **params: Any) -> AgendaBasedSimulator:
    params.setdefault("opening_disclosure_prob", 0.0)
    return AgendaBasedSimulator(
        AgendaBasedSimulator.Params(**params), BuildContext(movie_domain(), seed=seed)
    )


def intents(turn: UserTurn) -> list[str]:
    return [a.intent for a in turn.acts]


async def started(user: SimulatedUser, seed: int = 0, **params: Any) -> AgendaBasedSimulator:
    sim = make_sim(seed, **params)
    await sim.start(user)
    return sim


# --- registry and protocol ---------------------------------------------------------------------


def test_registered_with_validated_params() -> None:
    cls = simulator_registry.get("abus")
    assert cls is AgendaBasedSimulator
    params = simulator_registry.params("abus", {"patience": 5})
    assert params.patience == 5  # type: ignore[attr-defined]
    assert isinstance(make_sim(), UserSimulator)


async def test_respond_before_start_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="start"):
        await make_sim().respond(CRSReply("Hello"))


# --- opening -----------------------------------------------------------------------------------


async def test_opening_is_greeting_and_request() -> None:
    turn = await make_sim().start(make_user({"genre": "sci-fi"}))
    assert intents(turn) == [Intent.GREETING, Intent.REQUEST_RECOMMENDATION]
    assert turn.text and not turn.end


async def test_opening_may_volunteer_the_first_constraint() -> None:
    sim = make_sim(opening_disclosure_prob=1.0)
    turn = await sim.start(make_user({"genre": "sci-fi", "decade": "1990s"}))
    assert [str(a) for a in turn.acts][-1] == 'disclose(genre="sci-fi")'
    assert turn.annotations["agenda"] == ['disclose(decade="1990s")', "goodbye()"]


async def test_crs_greeting_with_a_question_is_answered() -> None:
    turn = await make_sim().start(
        make_user({"genre": "sci-fi"}), CRSReply("Hi! What kind of movie are you in the mood for?")
    )
    assert [str(a) for a in turn.acts] == ["greeting()", 'disclose(genre="sci-fi")']


# --- case 1: elicitation -----------------------------------------------------------------------


async def test_elicitation_discloses_the_constraint_and_cleans_the_agenda() -> None:
    sim = await started(make_user({"genre": "sci-fi", "decade": "1990s"}, requests=["plot"]))
    turn = await sim.respond(CRSReply("Do you prefer movies from a particular decade?"))
    assert [str(a) for a in turn.acts] == ['disclose(decade="1990s")']
    assert "1990s" in turn.text
    assert turn.annotations["agenda"] == ['disclose(genre="sci-fi")', "inquire(plot)", "goodbye()"]


async def test_elicitation_without_constraint_uses_preferences() -> None:
    sim = await started(make_user({"genre": "sci-fi"}, preferences={"actor": {"likes": ["Keanu Reeves"]}}))
    turn = await sim.respond(CRSReply("Is there an actor or actress you like?"))
    assert [str(a) for a in turn.acts] == ['disclose(actor="Keanu Reeves")']
    # the favourite director is derived from the ratings when nothing is stated
    turn = await sim.respond(CRSReply("Any director you're a fan of?"))
    assert turn.acts[0].intent == Intent.DISCLOSE and turn.acts[0].value("director") is not None


async def test_elicitation_without_any_value_is_no_preference() -> None:
    sim = await started(make_user({"genre": "sci-fi"}, item_ratings={}))
    turn = await sim.respond(CRSReply("What should the movie be about?"))
    assert [str(a) for a in turn.acts] == ["disclose(keyword)"]


async def test_repeated_elicitation_repeats_the_disclosure() -> None:
    sim = await started(make_user({"genre": "sci-fi"}))
    first = await sim.respond(CRSReply("Which genre do you enjoy?"))
    again = await sim.respond(CRSReply("Sorry, what genre was it?"))
    assert first.acts == again.acts


async def test_generic_elicitation_pops_the_next_disclosure() -> None:
    sim = await started(make_user({"genre": "sci-fi", "actor": ["Keanu Reeves", "Carrie-Anne Moss"]}))
    await sim.respond(CRSReply("Which genre do you enjoy?"))
    turn = await sim.respond(CRSReply("What are you looking for?"))
    assert [str(a) for a in turn.acts] == ['disclose(actor="Keanu Reeves",actor="Carrie-Anne Moss")']
    assert "Keanu Reeves and Carrie-Anne Moss" in turn.text


# --- case 2: recommendation --------------------------------------------------------------------


async def test_accepts_a_target_and_ends() -> None:
    sim = await started(make_user({"genre": "crime"}, targets=[HEAT]))
    turn = await sim.respond(CRSReply("You might like Heat (1995)."))
    assert [str(a) for a in turn.acts] == ['accept(title="Heat (1995)")', "goodbye()"]
    assert turn.end and turn.annotations["outcome"] == "accepted"
    assert turn.annotations["judged"][HEAT] == {"decision": "accept", "target": True}


async def test_accepts_an_item_the_user_would_rate_highly() -> None:
    sim = await started(make_user({"genre": "sci-fi"}))
    turn = await sim.respond(CRSReply("You might like The Matrix (1999)."))
    assert intents(turn) == [Intent.ACCEPT, Intent.GOODBYE] and turn.end
    assert turn.annotations["judged"][MATRIX]["predicted_rating"] >= 4.0


async def test_rejects_a_disliked_item_and_asks_for_more() -> None:
    sim = await started(make_user())
    turn = await sim.respond(CRSReply("You might like Love Actually (2003)."))
    assert [str(a) for a in turn.acts] == ['reject(title="Love Actually (2003)")', "request_recommendation()"]
    assert turn.annotations["judged"][LOVE_ACTUALLY]["predicted_rating"] < 3.0
    assert turn.annotations["failed_rounds"] == 1 and not turn.end


async def test_rejection_restates_a_violated_constraint() -> None:
    """The Matrix would be liked, but the user wants a comedy."""
    sim = await started(make_user({"genre": "comedy"}))
    turn = await sim.respond(CRSReply("How about The Matrix (1999)?"))
    assert [str(a) for a in turn.acts] == ['reject(title="The Matrix (1999)")', 'disclose(genre="comedy")']
    assert turn.annotations["judged"][MATRIX]["violated"] == "genre"


async def test_seen_on_a_rated_item_says_whether_it_was_liked() -> None:
    sim = await started(make_user())
    turn = await sim.respond(CRSReply("You might like Titanic (1997)."))
    assert str(turn.acts[0]) == 'seen(title="Titanic (1997)",liked="no")'
    assert turn.annotations["failed_rounds"] == 1
    turn = await sim.respond(CRSReply("Then maybe Blade Runner (1982)?"))
    assert str(turn.acts[0]) == 'seen(title="Blade Runner (1982)",liked="yes")'


async def test_several_items_accepts_the_best_and_names_the_others() -> None:
    sim = await started(make_user({"genre": "sci-fi"}))
    turn = await sim.respond(CRSReply("How about Love Actually (2003) or The Matrix (1999)?"))
    assert [str(a) for a in turn.acts] == [
        'reject(title="Love Actually (2003)")',
        'accept(title="The Matrix (1999)")',
        "goodbye()",
    ]
    assert "Love Actually (2003)" in turn.text and "The Matrix (1999)" in turn.text


async def test_understands_the_text_not_the_claimed_items() -> None:
    sim = await started(make_user({"genre": "sci-fi"}, targets=[HEAT]))
    turn = await sim.respond(CRSReply("You might like The Matrix (1999).", recommended_items=[HEAT]))
    assert list(turn.annotations["judged"]) == [MATRIX]


async def test_patience_ends_the_dialogue() -> None:
    sim = await started(make_user(), patience=2)
    first = await sim.respond(CRSReply("You might like Love Actually (2003)."))
    assert not first.end
    second = await sim.respond(CRSReply("What about Titanic (1997)?"))
    assert intents(second) == [Intent.SEEN, Intent.GOODBYE]
    assert second.end and second.annotations["outcome"] == "patience"


# --- case 3: inquiries and answers -------------------------------------------------------------


async def test_requests_are_asked_after_the_recommendation_and_before_accepting() -> None:
    user = make_user({"genre": "crime", "decade": "1990s"}, requests=["director", "plot"], targets=[HEAT])
    sim = await started(user)
    # elicitation answers make both disclosures redundant: requests must survive the cleaning
    await sim.respond(CRSReply("Which genre do you enjoy?"))
    turn = await sim.respond(CRSReply("Do you prefer movies from a particular decade?"))
    assert turn.annotations["agenda"] == ["inquire(director)", "inquire(plot)", "goodbye()"]
    turn = await sim.respond(CRSReply("Other users liked that too."))
    assert intents(turn) == [Intent.REQUEST_RECOMMENDATION]
    turn = await sim.respond(CRSReply("You might like Heat (1995)."))
    assert [str(a) for a in turn.acts] == ["inquire(director)"] and not turn.end
    turn = await sim.respond(CRSReply("It was directed by Michael Mann."))
    assert [str(a) for a in turn.acts] == ["inquire(plot)"] and not turn.end
    turn = await sim.respond(CRSReply("Here's the plot: a group of high-end robbers and a detective."))
    assert [str(a) for a in turn.acts] == ['accept(title="Heat (1995)")', "goodbye()"] and turn.end


async def test_answer_given_with_the_recommendation_preempts_the_request() -> None:
    sim = await started(make_user(requests=["director", "year"], targets=[HEAT]))
    turn = await sim.respond(CRSReply("You might like Heat (1995). It was directed by Michael Mann."))
    assert [str(a) for a in turn.acts] == ["inquire(year)"]
    assert turn.annotations["preempted"] == ["director"]


async def test_new_recommendation_while_inquiring_keeps_the_candidate() -> None:
    sim = await started(make_user(requests=["plot"], targets=[HEAT]))
    await sim.respond(CRSReply("You might like Heat (1995)."))
    turn = await sim.respond(CRSReply("Or maybe Love Actually (2003)?"))
    assert [str(a) for a in turn.acts] == [
        'reject(title="Love Actually (2003)")',
        'accept(title="Heat (1995)")',
        "goodbye()",
    ]
    assert "Heat (1995)" in turn.text  # "it" would be ambiguous here


async def test_have_you_seen_it_and_would_you_like_another() -> None:
    sim = await started(make_user())
    await sim.respond(CRSReply("You might like Love Actually (2003)."))
    turn = await sim.respond(CRSReply("Have you seen it?"))
    assert intents(turn) == [Intent.DENY, Intent.REQUEST_RECOMMENDATION]
    turn = await sim.respond(CRSReply("Would you like something else?"))
    assert intents(turn) == [Intent.AFFIRM, Intent.REQUEST_RECOMMENDATION]


# --- case 4: other, and the CRS ending ---------------------------------------------------------


async def test_other_pops_the_next_disclosure_then_requests() -> None:
    # "I see." makes no progress: patience 4 leaves room for three of them
    sim = await started(make_user({"genre": "sci-fi", "decade": "1990s"}), patience=4)
    turns = [await sim.respond(CRSReply("I see.")) for _ in range(3)]
    assert [[str(a) for a in t.acts] for t in turns] == [
        ['disclose(genre="sci-fi")'],
        ['disclose(decade="1990s")'],
        ["request_recommendation()"],
    ]


async def test_crs_goodbye_ends_the_dialogue() -> None:
    sim = await started(make_user())
    turn = await sim.respond(CRSReply("Goodbye, have a nice day!"))
    assert intents(turn) == [Intent.GOODBYE] and turn.end


# --- determinism -------------------------------------------------------------------------------

SCRIPT = [
    "Hi! What kind of movie are you in the mood for?",
    "Is there an actor or actress you like?",
    "You might like Love Actually (2003).",
    "How about Titanic (1997)?",
    "You might like Heat (1995).",
    "It was directed by Michael Mann.",
]


async def transcript(seed: int) -> list[tuple[str, str, bool]]:
    sim = make_sim(seed, opening_disclosure_prob=0.5, patience=5)
    user = make_user({"genre": "crime"}, requests=["director", "year"], targets=[HEAT])
    turns = [await sim.start(user, CRSReply(SCRIPT[0]))]
    for text in SCRIPT[1:]:
        turns.append(await sim.respond(CRSReply(text)))
    return [(t.text, "|".join(map(str, t.acts)), t.end) for t in turns]


async def test_same_seed_same_turns() -> None:
    assert await transcript(3) == await transcript(3)


async def test_different_seeds_vary_the_wording() -> None:
    texts = {tuple(text for text, _, _ in await transcript(seed)) for seed in range(6)}
    assert len(texts) > 1


# --- the whole loop ----------------------------------------------------------------------------


class ScriptedCRS(BaseCRS):
    """Says its lines in order, whatever the user says."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        index = session.state = (session.state or 0) + 1
        return CRSReply(self.lines[min(index, len(self.lines)) - 1])


async def test_dialogue_through_the_loop() -> None:
    crs = ScriptedCRS(["Which genre do you enjoy?", "You might like Ronin (1998).", "It came out in 1998."])
    user = make_user({"genre": "crime"}, requests=["year"], targets=[RONIN])
    dialogue = await run_dialogue(
        make_sim(1), crs, user, dialogue_id="d1", session=CRSSession("d1", 1), items=movie_domain().items
    )
    assert dialogue.termination is not None
    assert dialogue.termination.reason == TerminationReason.USER_ENDED
    last = dialogue.utterances[-1]
    assert last.has_intent(Intent.ACCEPT) and last.has_intent(Intent.GOODBYE)
    assert dialogue.num_turns == 4
