"""Issue 23's fixes to the LLM users, with scripted models answering the way a 1.5B model did.

`llm_single` ending on its first message, naming its targets, speaking as the recommender,
parroting the recommender, never asking its requests; `llm_dual` stopping before any
recommendation and citing items never recommended; PEPPER's contradictory reflections and
recommender-voice openings; `target_biased` repeating one verdict. Each check re-asks once and then
falls back, and says so under `draft_checks`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from crsim.core.components import BuildContext
from crsim.crs.base import CRSReply
from crsim.language.message_rules import USER_REPEAT_RUN_WORDS, repeated, title_named
from crsim.llm.providers.scripted import ScriptedProvider
from crsim.llm.types import Completion, Message, ResolvedGeneration
from crsim.model import annotations as keys
from crsim.model.domain import Domain
from crsim.model.user import InformationNeed, SimulatedUser
from crsim.sim.base import simulator_registry
from crsim.sim.pepper.biased import TargetBiasedSimulator
from crsim.sim.pepper.simulator import PepperSimulator
from crsim.sim.prompt.dual import DualPromptSimulator
from crsim.sim.prompt.single import SinglePromptSimulator
from crsim.sim.shared import checks
from support import ScriptedHub

MATRIX, HEAT, TOY_STORY = "2571", "6", "1"


def queue(*answers: str) -> ScriptedProvider:
    pending = list(answers)
    return ScriptedProvider(lambda _m, _g: pending.pop(0))


def build(cls: Any, name: str, provider: ScriptedProvider, domain: Domain, **args: Any) -> Any:
    params = simulator_registry.params(name, args)
    return cls(params, BuildContext(domain, ScriptedHub(provider), 11))


def fan(requests: tuple[str, ...] = ("director",)) -> SimulatedUser:
    """Wants a 1990s action film, asks for the director, would be glad of The Matrix."""
    return SimulatedUser(
        id="u7",
        need=InformationNeed(
            constraints={"genre": ["action"], "decade": "1990s"}, requests=list(requests), targets=[MATRIX]
        ),
    )


def found(turn: Any) -> list[tuple[str, str]]:
    return [(c["check"], c["action"]) for c in turn.annotations.get(keys.DRAFT_CHECKS.name, [])]


def last_prompt(provider: ScriptedProvider) -> str:
    return provider.requests[-1][0][-1]["content"]


# --- llm_single ---------------------------------------------------------------------------------


async def test_an_end_marker_before_any_recommendation_is_dropped_and_the_words_kept(domain: Domain) -> None:
    provider = queue("Comedy [END]")
    sim = build(SinglePromptSimulator, "llm_single", provider, domain)
    turn = await sim.start(fan(), CRSReply("Hi! What are you in the mood for?"))
    assert (turn.text, turn.end) == ("Comedy", False)
    assert found(turn) == [("end_before_recommendation", "ignored")]
    assert turn.annotations["stop_token_seen"] is True and turn.annotations["raw_answer"] == "Comedy [END]"
    assert "Nothing has been recommended to you yet" in last_prompt(provider)


async def test_after_the_patience_turn_the_user_may_give_up(domain: Domain) -> None:
    sim = build(SinglePromptSimulator, "llm_single", queue("a", "I give up. [END]"), domain, patience=2)
    await sim.start(fan())
    turn = await sim.respond(CRSReply("What genre?"))
    assert turn.end and turn.text == "I give up." and not found(turn)


async def test_a_named_target_is_asked_again_then_cut_out(domain: Domain) -> None:
    provider = queue("Is The Matrix on your list?", "I'd love The Matrix (1999) or similar.")
    turn = await build(SinglePromptSimulator, "llm_single", provider, domain).start(fan())
    assert turn.text == "I'd love a movie or similar."
    assert found(turn) == [("target_named", "retried"), ("target_named", "redacted")]
    assert "Do not name any title yourself" in last_prompt(provider)
    assert provider.requests[0][1].seed != provider.requests[1][1].seed


async def test_a_target_the_recommender_named_first_may_be_named(domain: Domain) -> None:
    sim = build(SinglePromptSimulator, "llm_single", queue("Hi.", "The Matrix sounds great!"), domain)
    await sim.start(fan())
    turn = await sim.respond(CRSReply("Have you seen The Matrix?"))
    assert turn.text.startswith("The Matrix sounds great!") and ("target_named", "retried") not in found(turn)


async def test_narration_and_echoed_instructions_are_asked_again(domain: Domain) -> None:
    provider = queue("Great, I'll ask the recommender about the plot.", "What is it about?")
    turn = await build(SinglePromptSimulator, "llm_single", provider, domain).start(fan())
    assert turn.text == "What is it about?" and found(turn) == [("meta_text", "retried")]
    assert "speaking to it directly" in last_prompt(provider)


async def test_the_recommenders_voice_is_asked_again_once(domain: Domain) -> None:
    provider = queue(
        "I'm glad you found it! If you need any more recommendations, feel free to ask.", "An action film."
    )
    turn = await build(SinglePromptSimulator, "llm_single", provider, domain).start(fan())
    assert turn.text == "An action film." and found(turn) == [("role_flip", "retried")]
    assert "not the recommender" in last_prompt(provider)


@pytest.mark.parametrize(
    ("draft", "check"),
    [
        ("Do you want to try it out?", "role_flip"),
        ("I'm sorry, but I can't help with that.", "role_flip"),
        ("What kind of movie would you like to watch?", "role_flip"),
        ("I'll ask about the director and the year.", "meta_text"),
        ("This person is looking for a movie with a lot of action.", "meta_text"),
    ],
)
async def test_offers_refusals_narration_and_announced_moves_are_asked_again(
    domain: Domain, draft: str, check: str
) -> None:
    """Drafts read on 16 restaurant dialogues of a 1.5B model and on SmolLM2 that the checks let
    through (the rules of `crsim.language.message_rules`, the behaviour report's)."""
    provider = queue(draft, "An action film from the nineties.")
    turn = await build(SinglePromptSimulator, "llm_single", provider, domain).start(fan())
    assert turn.text == "An action film from the nineties." and found(turn) == [(check, "retried")]


async def test_an_ordinary_question_is_not_asked_again(domain: Domain) -> None:
    provider = queue("Do you know any good action movies from the nineties?")
    turn = await build(SinglePromptSimulator, "llm_single", provider, domain).start(fan())
    assert turn.text.startswith("Do you know any good action movies") and found(turn) == []


async def test_parroting_twice_falls_back_to_a_plain_utterance_from_the_need(domain: Domain) -> None:
    echo = "That one is a classic crime story from the nineties with a great cast"
    provider = queue("Hello there, friend.", echo + "?", echo + ".")
    sim = build(SinglePromptSimulator, "llm_single", provider, domain)
    await sim.start(fan())
    turn = await sim.respond(CRSReply(echo + "?"))
    assert found(turn) == [("parrot", "retried"), ("parrot", "fallback")]
    assert turn.text.startswith("I am looking for a movie with ") and not turn.end


async def test_the_facts_of_a_recommended_item_that_does_not_fit_reach_the_prompt(domain: Domain) -> None:
    provider = queue("Hi.", "No, that is not for me.")
    sim = build(SinglePromptSimulator, "llm_single", provider, domain)
    await sim.start(fan())
    turn = await sim.respond(CRSReply("Try Toy Story.", recommended_items=[TOY_STORY]))
    prompt = last_prompt(provider)
    assert "The recommender just suggested Toy Story (1995) (genre: " in prompt and "decade: 1990s" in prompt
    assert (
        'It does not fit: you want genre action. Say no to it in your own words, for example: "No thanks, I'
        in prompt
    )
    assert turn.text == "No, that is not for me." and not found(turn)  # no question about an unfit item


async def test_accepting_an_item_that_contradicts_the_need_is_asked_again(domain: Domain) -> None:
    provider = queue("Hi.", "Sounds great, I'll watch it! [END]", "Sounds perfect!")
    sim = build(SinglePromptSimulator, "llm_single", provider, domain)
    await sim.start(fan())
    turn = await sim.respond(CRSReply("Try Toy Story.", recommended_items=[TOY_STORY]))
    assert found(turn) == [("accepts_unfit", "retried"), ("accepts_unfit", "fallback")]
    assert turn.text.startswith("That is not quite what I am looking for") and not turn.end
    assert "do not accept it" in last_prompt(provider)


async def test_a_pending_request_is_asked_before_the_user_accepts_and_ends(domain: Domain) -> None:
    provider = queue("Hi.", "Great, I'll watch it! [END]", "Thanks, bye! [END]")
    sim = build(SinglePromptSimulator, "llm_single", provider, domain)
    await sim.start(fan())
    asked = await sim.respond(CRSReply("How about Heat?", recommended_items=[HEAT]))
    assert 'Before you decide, ask about it, for example: "Who directed it?"' in last_prompt(provider)
    assert (asked.text, asked.end) == ("Great, I'll watch it! Who directed it?", False)
    assert found(asked) == [("request_unasked", "appended"), ("end_with_request_pending", "ignored")]
    done = await sim.respond(CRSReply("Michael Mann directed it."))
    assert done.end and done.text == "Thanks, bye!"


async def test_every_open_request_is_asked_and_a_self_given_answer_dropped(domain: Domain) -> None:
    """Seen on a 1.5B model: "Sure, the year of Monsters, Inc. is 2001. Can you tell me its year?"."""
    provider = queue("Hi.", "Great pick. Heat came out in 1995, directed by Michael Mann.")
    sim = build(SinglePromptSimulator, "llm_single", provider, domain)
    await sim.start(fan(("director", "year")))
    asked = await sim.respond(CRSReply("How about Heat?", recommended_items=[HEAT]))
    assert 'ask about it, for example: "Who directed it? When did it come out?"' in last_prompt(provider)
    assert asked.text == "Great pick. Who directed it? When did it come out?"
    assert found(asked) == [("request_self_answered", "removed"), ("request_unasked", "appended")]
    assert sim.tracker.asked == {"director", "year"}
    # an abbreviation inside the answer does not split it: no fragment ("is in it.") is left behind
    tracker = sim.tracker
    assert tracker.without_own_answers("Nice. Michael Mann Jr. made it. Who?", ["director"]) == "Nice. Who?"


class CutProvider(ScriptedProvider):
    """Answers as a server does when the token limit stops the text mid-sentence."""

    async def complete(self, messages: list[Message], generation: ResolvedGeneration) -> Completion:
        completion = await super().complete(messages, generation)
        return completion.model_copy(update={"finish_reason": "length"})


async def test_a_sentence_cut_by_the_token_limit_is_left_out(domain: Domain) -> None:
    pending = ["Hi, I want a thriller.", "I like thrillers. Something tense, with a"]
    provider = CutProvider(lambda _m, _g: pending.pop(0))
    sim = build(SinglePromptSimulator, "llm_single", provider, domain)
    await sim.start(fan(()))
    turn = await sim.respond(CRSReply("What do you like?"))
    assert turn.text == "I like thrillers." and turn.annotations["cut_to_sentence"] == len(
        "I like thrillers. Something tense, with a"
    )


async def test_the_system_prompt_puts_the_requests_as_questions(domain: Domain) -> None:
    provider = queue("Hi.")
    await build(SinglePromptSimulator, "llm_single", provider, domain).start(fan(("director", "year")))
    system = provider.requests[0][0][0]["content"]
    assert "before you accept it: its director? its year?" in system
    assert "Never write [END] before the recommender has suggested a movie." in system


async def test_an_end_right_after_the_first_miss_is_not_taken(domain: Domain) -> None:
    """Seen on a 1.5B model: the user thanked and left after the first suggestion, a film from the
    wrong decade; the behaviour report read it as settling for an item that contradicts the need."""
    provider = queue("Hi.", "Bye now! [END]", "Not for me either. [END]")
    sim = build(SinglePromptSimulator, "llm_single", provider, domain)
    await sim.start(fan())
    turn = await sim.respond(CRSReply("Try Toy Story.", recommended_items=[TOY_STORY]))  # animation
    assert not turn.end and ("end_after_miss", "ignored") in found(turn)
    assert turn.text == "That is not quite what I am looking for; could you suggest a different movie?"
    second = await sim.respond(CRSReply("Then Jumanji.", recommended_items=["2"]))  # a second miss
    assert second.end and second.text == "Not for me either." and not found(second)


# --- llm_dual -----------------------------------------------------------------------------------


def dual_script(decisions: list[dict[str, str]], said: list[str]) -> ScriptedProvider:
    def script(_messages: list[Message], generation: ResolvedGeneration) -> str:
        if generation.json_schema is not None:
            return json.dumps(decisions.pop(0))
        return said.pop(0)

    return ScriptedProvider(script)


async def test_a_stop_before_any_recommendation_is_overruled(domain: Domain) -> None:
    provider = dual_script(
        [{"decision": "stop", "reason": "Not helpful."}], ["Hi.", "Something with action."]
    )
    sim = build(DualPromptSimulator, "llm_dual", provider, domain)
    await sim.start(fan())
    turn = await sim.respond(CRSReply("What genre?"))
    assert (turn.text, turn.end) == ("Something with action.", False)
    assert found(turn) == [("stop_before_recommendation", "overridden")]
    assert "Nothing has been recommended yet." in provider.requests[1][0][1]["content"]


async def test_a_stop_with_a_request_open_about_a_fitting_item_is_overruled(domain: Domain) -> None:
    provider = dual_script([{"decision": "stop", "reason": "They got Heat."}], ["Hi.", "Nice one."])
    sim = build(DualPromptSimulator, "llm_dual", provider, domain)
    await sim.start(fan())
    turn = await sim.respond(CRSReply("Heat is great.", recommended_items=[HEAT]))
    assert (turn.text, turn.end) == ("Nice one. Who directed it?", False)
    assert found(turn) == [("stop_with_request_pending", "overridden"), ("request_unasked", "appended")]


async def test_a_stop_reason_naming_an_item_never_recommended_is_asked_again(domain: Domain) -> None:
    decisions = [
        {"decision": "stop", "reason": "They got The Matrix."},
        {"decision": "stop", "reason": "They accepted Heat."},
    ]
    provider = dual_script(decisions, ["Hi."])
    sim = build(DualPromptSimulator, "llm_dual", provider, domain)
    await sim.start(fan(()))  # no request left open: the stop itself stands
    turn = await sim.respond(CRSReply("Heat is great.", recommended_items=[HEAT]))
    assert turn.end and turn.annotations["stop_reason"] == "They accepted Heat."
    assert turn.annotations[keys.DRAFT_CHECKS.name] == [
        {
            "check": "reason_unrecommended",
            "action": "retried",
            "draft": "They got The Matrix.",
            "detail": "The Matrix (1999)",
        }
    ]
    retry_prompt = provider.requests[-1][0][1]["content"]
    assert "Recommended so far: Heat (1995)." in retry_prompt
    assert "Only the items listed as recommended were suggested" in retry_prompt


async def test_dual_drafts_in_the_recommenders_voice_are_asked_again(domain: Domain) -> None:
    provider = dual_script(
        [], ["Here are some movies you might enjoy: Heat.", "Action from the nineties, please."]
    )
    turn = await build(DualPromptSimulator, "llm_dual", provider, domain).start(fan())
    assert turn.text == "Action from the nineties, please." and found(turn) == [("role_flip", "retried")]


# --- PEPPER and target_biased --------------------------------------------------------------------


def pepper_user() -> SimulatedUser:
    return SimulatedUser.model_validate(
        {
            "id": "p1",
            "profile": {"item_ratings": {HEAT: 4.5, TOY_STORY: 1.0}, "persona": {"rating_scale": [0.5, 5.0]}},
            "need": {"targets": [MATRIX, "32"]},
        }
    )


def pepper_script(reflections: list[str], messages: list[str]) -> ScriptedProvider:
    def script(msgs: list[Message], generation: ResolvedGeneration) -> str:
        if generation.json_schema is not None:
            return reflections.pop(0)
        if "Begin with" in msgs[-1]["content"]:
            return "You like tense crime stories."
        return messages.pop(0)

    return ScriptedProvider(script)


async def test_a_contradictory_reflection_is_asked_again_then_its_dislike_dropped(domain: Domain) -> None:
    same = json.dumps({"like": "the tense heist plot", "dislike": "the tense heist plot"})
    provider = pepper_script([same, same], ["Hi, something tense please.", "I liked that one."])
    sim = build(PepperSimulator, "pepper", provider, domain, items_shown=1)
    await sim.start(pepper_user())
    turn = await sim.respond(CRSReply("Try Heat.", recommended_items=[HEAT]))
    assert found(turn) == [
        ("contradictory_reflection", "retried"),
        ("contradictory_reflection", "dislike_dropped"),
    ]
    reflected = keys.REFLECTED_PREFERENCES.get(turn.annotations, where="t")
    assert reflected == [{"item": HEAT, "seen": True, "like": "the tense heist plot"}]
    screen = provider.requests[-1][0][-1]["content"]
    assert "- Heat (1995): you like the tense heist plot\n" in screen and "you dislike" not in screen


@pytest.mark.parametrize(
    ("like", "dislike", "title", "expected"),
    [
        ("the tense heist plot", "the heist plot being tense", "Heat (1995)", True),
        ("The Sixth Sense", "The Sixth Sense, too violent", "The Sixth Sense (1999)", True),
        ("the acting", "the slow pace", "Heat (1995)", False),
    ],
)
def test_contradictory(like: str, dislike: str, title: str, expected: bool) -> None:
    assert checks.contradictory(like, dislike, title) is expected


async def test_a_pepper_opening_in_the_recommenders_voice_is_asked_again(domain: Domain) -> None:
    provider = pepper_script(
        [], ["Sure! Here are some movies you might like: Heat.", "Hi, I want a tense thriller."]
    )
    turn = await build(PepperSimulator, "pepper", provider, domain).start(pepper_user())
    assert turn.text == "Hi, I want a tense thriller." and found(turn) == [("role_flip", "retried")]
    opening = provider.requests[-2][0][-1]["content"]
    assert "You are the viewer, not the recommender." in opening


async def test_target_biased_sees_the_recommended_items_and_may_not_repeat_itself(domain: Domain) -> None:
    same = "These movies match your criteria."
    provider = pepper_script([], [same, same, same])
    user = pepper_user()
    sim = build(TargetBiasedSimulator, "target_biased", provider, domain, record_general_preferences=False)
    await sim.start(user)
    turn = await sim.respond(CRSReply("Try Heat.", recommended_items=[HEAT]))
    assert found(turn) == [("repeat", "retried"), ("repeat", "fallback")]
    assert turn.text.startswith("I am looking for a movie ") and same not in turn.text
    reply_cue = provider.requests[-2][0][-1]["content"]
    assert "[The recommender's suggestions:\n- Heat (1995); genres: " in reply_cue
    assert "directed by Michael Mann" in reply_cue


# --- the checks themselves -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "flipped"),
    [
        ("I'd recommend Heat, it is great.", True),
        ("Here are some movies for you.", True),
        ("Enjoy the movie!", True),
        ("What would you recommend?", False),
        ("If you have any other suggestions, tell me.", False),
        ("I think I will enjoy the movie.", False),
        ("Comedy", False),
    ],
)
def test_role_flip(text: str, flipped: bool) -> None:
    checker = checks.DraftChecker.build({"item": "movie", "items": "movies", "consume": "watch"})
    assert (checker.role_flip(text) is not None) is flipped


@pytest.mark.parametrize(
    ("text", "title", "named"),
    [
        ("I loved The Matrix!", "The Matrix (1999)", True),
        ("i loved the matrx reloaded", "The Matrix Reloaded (2003)", True),
        ("a", "The Matrix (1999)", False),
        ("I like the heat of summer.", "Heat (1995)", False),
        ("What about Heat?", "Heat (1995)", True),
    ],
)
def test_names_title(text: str, title: str, named: bool) -> None:
    assert title_named(text, title) is named


def test_the_draft_checks_are_the_behaviour_reports_rules() -> None:
    """A draft is re-asked for exactly what `crsim analyze behaviour` would count: parroting the CRS
    message before it, or saying one of the user's own messages again (also as a sentence said again
    inside a longer message, which a whole-message similarity misses)."""
    crs = "These movies match your criteria."
    assert checks.parrots("these movies match your criteria!", [crs]) == crs
    assert checks.parrots("I want a comedy from the 90s.", ["Do you know who directed it?"]) is None
    earlier = "I am looking for a funny movie with a lot of action in it please."
    again = f"Thanks for asking. {earlier} Something from the nineties would be great."
    assert repeated([earlier, again], USER_REPEAT_RUN_WORDS) == [2]
    assert checks.repeats(again, ["Hello there.", earlier]) == earlier
    assert checks.repeats("Do you know who directed it?", [earlier]) is None


def test_redacts_titles() -> None:
    assert checks.redact_titles("I love The Matrix (1999).", ["The Matrix (1999)"], "it") == "I love it."


@pytest.mark.parametrize("name", ["movies", "restaurants"])
def test_the_policy_question_about_a_request_is_read_as_that_question(name: str) -> None:
    """The question the policy appends is one crsim's own understanding (the built-in CRSs, the
    behaviour report) reads as asking about the slot; "Can you tell me its year?" was not."""
    from crsim.domains import domain_named
    from crsim.language.understanding import understand
    from crsim.sim.prompt.policy import question

    domain = domain_named(name)
    requestable = [slot for slot, spec in domain.slots.items() if spec.requestable]
    assert requestable
    for slot in requestable:
        assert understand(question(slot, domain), domain).inquiries == [slot], slot


async def test_a_stop_right_after_the_first_miss_is_overruled_and_a_later_one_gives_up(
    domain: Domain,
) -> None:
    stop = {"decision": "stop", "reason": "They got a film."}
    provider = dual_script([stop, stop], ["Hi.", "Hmm, not that one."])
    sim = build(DualPromptSimulator, "llm_dual", provider, domain)
    await sim.start(fan())
    turn = await sim.respond(CRSReply("Try Toy Story.", recommended_items=[TOY_STORY]))
    assert (turn.text, turn.end) == ("Hmm, not that one.", False)
    assert found(turn) == [("stop_after_miss", "overridden")]
    last = await sim.respond(CRSReply("Then Jumanji.", recommended_items=["2"]))
    assert last.end and last.text == "Thanks anyway, but that is not what I am looking for. Goodbye!"
    after_fit = build(DualPromptSimulator, "llm_dual", dual_script([stop], ["Hi."]), domain)
    await after_fit.start(fan(requests=()))
    done = await after_fit.respond(CRSReply("Heat is great.", recommended_items=[HEAT]))
    assert done.end and done.text == "Thank you, that is all for now. Goodbye!"
