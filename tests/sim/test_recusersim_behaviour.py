"""`recusersim` behaviour fixes of issue 23: meta text and role flips in drafts, list-valued profile
conflicts, the action guard and the checked facts the ratings see.

The scripted provider stands in for the model (these are plumbing tests: what the simulator does
with a given answer), reusing `Answers` of test_recusersim.py.
"""

from __future__ import annotations

import random
from typing import Any

from crsim.crs.base import BaseCRS, CRSReply, CRSSession
from crsim.language.understanding import understand
from crsim.llm.types import Message, ResolvedGeneration
from crsim.model.acts import Intent
from crsim.model.dialogue import Role, TerminationReason
from crsim.model.domain import Domain
from crsim.model.user import InformationNeed, SimulatedUser, UserProfile
from crsim.sim.recusersim.evidence import Inquiry, turn_facts
from crsim.sim.recusersim.guard import GuardState, guard_actions
from crsim.sim.recusersim.profile import apply_fixes, load_dictionary, sample_profile
from crsim.sim.recusersim.rating import check_ratings
from crsim.sim.recusersim.voice import role_flip
from test_recusersim import MATRIX, Answers, _dialogue, fan, simulator

ALL = {
    "request_recommendation", "clarify_preference", "positive_feedback", "negative_feedback",
    "inquire_attribute", "end_conversation",
}  # fmt: skip
#: An answer that gives nothing asked (and names no title, so the text-only linker links nothing).
IGNORES = CRSReply("I don't have details about that one, but it's one of the most popular movies.")


class Replies(Answers):
    """`Answers` whose free-text replies come from a list, one per reply asked for (the last repeats)."""

    def __init__(self, replies: list[str], **json_overrides: Any) -> None:
        super().__init__(**json_overrides)
        self.replies = replies

    def __call__(self, messages: list[Message], generation: ResolvedGeneration) -> str:
        if generation.json_schema is None and "Rewrite it" not in messages[-1]["content"]:
            self.reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return super().__call__(messages, generation)


def asker() -> SimulatedUser:
    """A user who wants a sci-fi film and to know its director."""
    return SimulatedUser(
        id="u2",
        profile=UserProfile(),
        need=InformationNeed(constraints={"genre": "sci-fi"}, requests=["director"], targets=["2571"]),
    )


def tasks(provider: Any, title: str | None) -> list[str]:
    """The task parts of the calls answered by schema `title` (None: free-text calls)."""
    return [
        m[-1]["content"]
        for m, g in provider.requests
        if (g.json_schema or {}).get("title") == title or (title is None and g.json_schema is None)
    ]


# --- meta text and role flips --------------------------------------------------------------------


async def test_a_meta_preamble_and_quotes_are_stripped_from_the_reply_and_annotated(domain: Domain) -> None:
    raw = 'Sure, here\'s my next message:\n\n"I want a sci-fi film, please."\n\n(This message is short.)'
    sim, _ = simulator(Answers(reply=raw), domain, refinements=[])
    turn = await sim.start(fan(), CRSReply("Hi! What would you like?"))
    assert turn.text == "I want a sci-fi film, please."
    assert turn.annotations["meta_removed"] == ["preamble", "note", "quotes"]
    assert turn.annotations["raw_answer"] == raw


async def test_a_draft_in_the_recommenders_voice_is_drafted_once_more(domain: Domain) -> None:
    answers = Replies(["I'd recommend The Matrix (1999). Enjoy!", "Could you suggest a sci-fi film?"])
    sim, provider = simulator(answers, domain, refinements=[])
    turn = await sim.start(fan(), CRSReply("Hi! What would you like?"))
    assert turn.text == "Could you suggest a sci-fi film?"
    flip = turn.annotations["role_flip"]
    assert flip == {
        "cue": "I'd recommend",
        "draft": "I'd recommend The Matrix (1999). Enjoy!",
        "persists": None,
    }
    drafts = tasks(provider, None)
    assert len(drafts) == 2 and "previous attempt" not in drafts[0]
    assert 'Your previous attempt was wrong: it spoke as the recommender ("I\'d recommend").' in drafts[1]
    assert turn.annotations["llm_calls_by_kind"]["response"] == 2


async def test_a_draft_that_is_all_recommender_part_is_drafted_once_more_not_an_error(domain: Domain) -> None:
    raw = "Recommender: Sure thing! I think you might enjoy Forrest Gump (1994)."
    answers = Replies([raw, "Something funny, please."])
    sim, provider = simulator(answers, domain, refinements=[])
    turn = await sim.start(fan(), CRSReply("Hi! What would you like?"))
    assert turn.text == "Something funny, please."
    assert turn.annotations["role_flip"]["cue"] == "it wrote the recommender's part"
    assert turn.annotations["role_flip"]["draft"] == raw
    assert "wrong: it wrote the recommender's part." in tasks(provider, None)[-1]


async def test_twice_the_recommenders_part_is_said_plainly_not_a_failed_dialogue(domain: Domain) -> None:
    """Seen on a 1.5B model (seed 2, ml-61): both drafts were "Recommender: I'm sorry, but I can't help
    you with that.", nothing was left once cleaned, and the dialogue failed."""
    raw = "Recommender: I'm sorry, but I can't help you with that."
    sim, provider = simulator(Replies([raw, raw]), domain, refinements=[])
    turn = await sim.start(fan(), CRSReply("Hi! What would you like?"))
    assert len(tasks(provider, None)) == 2 and turn.annotations["plain_reply"] == {"raw_answer": raw}
    assert turn.text and "sorry" not in turn.text.lower() and role_flip(turn.text, None) is None
    understood = understand(turn.text, domain)
    assert understood.intents & {Intent.REQUEST_RECOMMENDATION, Intent.DISCLOSE} or understood.likes


async def test_a_persisting_role_flip_keeps_the_users_sentences_only(domain: Domain) -> None:
    answers = Replies(["You might like Heat. Anything else?", "Is it scary? You might like Heat."])
    sim, _ = simulator(answers, domain, refinements=[])
    turn = await sim.start(fan(), CRSReply("Hi!"))
    assert turn.text == "Is it scary?"
    assert turn.annotations["role_flip"]["persists"] == "You might like"


async def test_a_draft_naming_a_target_title_is_drafted_once_more(domain: Domain) -> None:
    answers = Replies(["Something like The Matrix, maybe?", "Some sci-fi, maybe? Like The Matrix."])
    sim, provider = simulator(answers, domain, refinements=[])
    turn = await sim.start(fan(), CRSReply("Hi!"))  # fan's target is The Matrix (1999)
    assert turn.text == "Some sci-fi, maybe?"  # the second draft leaks too: its naming sentence dropped
    assert turn.annotations["role_flip"]["cue"].startswith("it named a title you hope to get")
    assert turn.annotations["role_flip"]["persists"] == turn.annotations["role_flip"]["cue"]
    assert "never name those yourself" in tasks(provider, None)[-1]


def test_role_flip_cues_and_parroting() -> None:
    assert role_flip("Could you recommend a comedy?", None) is None
    assert role_flip("What kind of movie are you in the mood for?", None) is not None
    seen = "Just curious about what kind of movie you're looking for, but I'm not sure what you're into."
    assert role_flip(seen, None) == "what kind of movie you're looking for"  # 1.5B model, before-run seed 1
    assert role_flip("What kind of movie do you think I'd like?", None) is None
    last = "Have a look at Stripes (1981). It's a comedy movie."
    assert role_flip("Oh! Have a look at Stripes (1981). It's a comedy movie.", last) is not None
    assert role_flip("Stripes? Is it funny?", last) is None
    assert role_flip("Do you have an actor you're looking for? Would you like to see a recent film?", None)


# --- list-valued conflicts -------------------------------------------------------------------------


def test_a_list_valued_attribute_can_be_changed_as_the_comma_joined_list_the_prompt_shows() -> None:
    dictionary = load_dictionary("movies")
    profile = sample_profile(dictionary, random.Random(1))
    genres = profile.values_of("preferences.favourite_genres")
    new = [g for g in ("comedy", "sci-fi", "war") if g not in genres][:2]
    proposals = [
        {"attribute": "preferences.favourite_genres", "old_value": ", ".join(genres),
         "new_value": ", ".join(new), "reason": "whole list"},
        {"attribute": "preferences.favourite_genres", "old_value": f"{new[0]}; western",
         "new_value": "drama", "reason": "one not held"},
        {"attribute": "preferences.era", "old_value": profile.values_of("preferences.era")[0],
         "new_value": "recent films, any era", "reason": "two for one"},
    ]  # fmt: skip
    fixed, record = apply_fixes(profile, dictionary, proposals)
    assert [r.applied for r in record] == [True, False, False]
    assert fixed.values_of("preferences.favourite_genres") == new
    assert (
        record[1].rejected
        == f"'western' is not a value of preferences.favourite_genres (it holds {', '.join(new)})"
    )
    assert "holds one value; 2 were proposed" in (record[2].rejected or "")


# --- facts, ratings and the action guard ---------------------------------------------------------


def test_turn_facts_see_answered_and_unanswered_details_and_contradictions(domain: Domain) -> None:
    matrix, comedy = domain.items["2571"], domain.items["4388"]
    asked = Inquiry("2571", matrix.display_title, ["director", "plot"])
    told = "It was directed by Lana Wachowski: a computer hacker learns the truth about an evil world."
    facts = turn_facts(domain, told, [comedy], before=["4388"], asked_for_recommendation=True,
                       inquiry=asked, constraints={"genre": ["sci-fi"]})  # fmt: skip
    assert facts.answered == ["director", "plot"] and facts.unanswered == []
    assert facts.repeated == ["Scary Movie 2 (2001)"]
    assert facts.contradicts == {"Scary Movie 2 (2001)": ["genre is not sci-fi"]}
    facts = turn_facts(domain, IGNORES.text, [], before=[], asked_for_recommendation=False,
                       inquiry=asked, constraints={})  # fmt: skip
    assert facts.ignored_inquiry and facts.unanswered == ["director", "plot"]
    assert (
        "You asked about the director and plot of The Matrix (1999), and it did NOT tell you."
        in facts.lines()
    )


async def test_the_guard_asks_about_open_details_and_the_ratings_see_the_unanswered_question(
    domain: Domain,
) -> None:
    answers = Answers(
        ActionSelection={"reasoning": "more", "actions": ["request_recommendation"]},
        LanguageRating={"justification": "fine", "score": 5},
        ActionRating={"justification": "fine", "score": 5},
        RecommendationRating={"justification": "sci-fi", "objective": 4, "modifier": 0.0},
    )
    sim, provider = simulator(answers, domain, refinements=[])
    await sim.start(asker(), CRSReply("Hi!"))
    turn = await sim.respond(MATRIX)
    assert turn.annotations["action_guard"] == {"rule": "inquire", "chosen": ["request_recommendation"]}
    assert turn.annotations["actions"] == ["inquire_attribute"]
    assert "Ask specifically about the director of The Matrix (1999)." in tasks(provider, None)[-1]
    assert "You still want to know its director." in tasks(provider, "ActionSelection")[-1]
    turn = await sim.respond(IGNORES)
    assert turn.annotations["facts"]["unanswered"] == ["director"]
    assert all("it did NOT tell you" in t for t in tasks(provider, "LanguageRating")[-1:])
    ratings = turn.annotations["ratings"]
    assert ratings["language"] == {"justification": "fine", "score": 3, "model_score": 5,
                                   "capped": "the question was not answered"}  # fmt: skip
    assert ratings["action"]["score"] == 2 and ratings["action"]["model_score"] == 5
    # asked once and not answered: no second inquiry; the user gets what the LLM chose
    assert (
        turn.annotations["actions"] == ["request_recommendation"] and "action_guard" not in turn.annotations
    )


class Recommends(BaseCRS):
    """Recommends The Matrix and names its director."""

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        return CRSReply("Try The Matrix (1999), by Lana Wachowski.", recommended_items=["2571"])


async def test_a_satisfied_user_ends_and_the_budget_ends_the_dialogue(domain: Domain) -> None:
    answers = Answers(
        ActionSelection={"reasoning": "more", "actions": ["request_recommendation"]},
        RecommendationRating={"justification": "sci-fi", "objective": 4, "modifier": 0.5},
    )
    sim, _ = simulator(answers, domain, refinements=[])
    dialogue = await _dialogue(sim, asker(), max_turns=5, crs=Recommends())
    assert dialogue.termination is not None and dialogue.termination.reason == TerminationReason.USER_ENDED
    last = dialogue.by(Role.USER)[-1].annotations
    assert last["action_guard"]["rule"] == "satisfied"
    assert last["actions"] == ["positive_feedback", "end_conversation"] and len(dialogue.by(Role.USER)) == 2

    poor = Answers(
        ActionSelection={"reasoning": "more", "actions": ["negative_feedback", "request_recommendation"]},
        RecommendationRating={"justification": "meh", "objective": 2, "modifier": 0.0},
    )
    sim, _ = simulator(poor, domain, refinements=[], turn_budget=3)
    dialogue = await _dialogue(sim, asker(), max_turns=5, crs=Recommends())
    users = dialogue.by(Role.USER)
    assert len(users) == 3 and users[-1].annotations["action_guard"]["rule"] == "budget"
    assert users[-1].annotations["actions"] == ["negative_feedback", "end_conversation"]
    assert "action_guard" not in users[1].annotations  # a poor item: no inquiry, the choice stands


def test_guard_rules() -> None:
    def state(**kw: Any) -> GuardState:
        base: dict[str, Any] = {"turn": 2, "budget": None, "anything_recommended": True, "score": None,
                                "contradicts": False, "open_details": [], "asked_before": False}  # fmt: skip
        return GuardState(**{**base, **kw})

    end = ["end_conversation"]
    assert guard_actions(end, state(anything_recommended=False), ALL, 3) == (
        ["request_recommendation"], "too_early"
    )  # fmt: skip
    assert guard_actions(end, state(), ALL, 3) == (end, None)
    assert guard_actions(["clarify_preference"], state(score=5.0, contradicts=True), ALL, 3)[1] is None
    inquire = state(score=3.0, open_details=["year"])
    assert guard_actions(["positive_feedback", "end_conversation"], inquire, ALL, 3) == (
        ["positive_feedback", "inquire_attribute"], "inquire"
    )  # fmt: skip
    assert guard_actions(["request_recommendation"], inquire, ALL - {"inquire_attribute"}, 3)[1] is None
    many = ["clarify_preference", "negative_feedback", "positive_feedback"]
    assert guard_actions(many, inquire, ALL, 3)[0][-1] == "inquire_attribute"


def test_check_ratings_leaves_consistent_ratings_alone(domain: Domain) -> None:
    asked = Inquiry("2571", "The Matrix (1999)", ["director"])
    facts = turn_facts(domain, "Lana Wachowski directed it.", [], before=[], asked_for_recommendation=False,
                       inquiry=asked, constraints={})  # fmt: skip
    ratings = {"language": {"justification": "j", "score": 5}, "action": {"justification": "j", "score": 5}}
    assert check_ratings(ratings, facts) == ratings
    contradicting = turn_facts(domain, "Scary Movie 2", [domain.items["4388"]], before=[],
                               asked_for_recommendation=True, inquiry=None,
                               constraints={"genre": ["sci-fi"]})  # fmt: skip
    rated = {"recommendation": {"justification": "j", "objective": 4, "modifier": -0.5, "score": 3.5}}
    fixed = check_ratings(rated, contradicting)["recommendation"]
    assert (fixed["objective"], fixed["score"], fixed["model_objective"]) == (2, 1.5, 4)


async def test_a_text_only_reply_naming_an_earlier_recommendation_again_recommends_nothing_new(
    domain: Domain,
) -> None:
    sim, _ = simulator(Answers(), domain, refinements=[])
    await sim.start(asker(), CRSReply("Hi!"))
    first = await sim.respond(CRSReply("You might like The Matrix (1999)."))
    assert first.annotations["facts"]["recommended"] == ["The Matrix (1999)"]
    again = await sim.respond(CRSReply("I don't have details about The Matrix (1999), but it's popular."))
    assert (
        again.annotations["facts"]["recommended"] == []
        and "recommendation" not in again.annotations["ratings"]
    )
    assert again.annotations["facts"]["unanswered"] == ["director"]


def test_an_action_rating_below_what_the_facts_show_is_raised(domain: Domain) -> None:
    low = {"action": {"justification": "it gave no information", "score": 1}}
    matrix = [domain.items["2571"]]
    fitting = turn_facts(domain, "Try The Matrix (1999).", matrix, before=[], asked_for_recommendation=True,
                         inquiry=None, constraints={"genre": ["sci-fi"]})  # fmt: skip
    raised = {"score": 3, "model_score": 1, "raised": "it recommended as asked"}
    assert check_ratings(low, fitting)["action"] == {"justification": "it gave no information", **raised}
    repeated = turn_facts(domain, "Try The Matrix (1999).", matrix, before=["2571"],
                          asked_for_recommendation=True, inquiry=None, constraints={})  # fmt: skip
    assert check_ratings(low, repeated)["action"]["score"] == 1
    asked = Inquiry("2571", "The Matrix (1999)", ["director"])
    answered = turn_facts(domain, "Lana Wachowski.", [], before=[], asked_for_recommendation=False,
                          inquiry=asked, constraints={})  # fmt: skip
    assert check_ratings(low, answered)["action"]["raised"] == "it answered the question"
