"""The agenda user and a CRS's buttons (it picks the one that says its act) and the progress it notices
(turns without progress use up its patience; after "no results" it relaxes a constraint)."""

from __future__ import annotations

from typing import Any

import pytest

from crsim.crs.base import BaseCRS, CRSReply, CRSSession
from crsim.model.acts import Intent
from crsim.model.dialogue import ReplyOption, TerminationReason
from crsim.runner.loop import run_dialogue
from crsim.sim.options import option_for_act, option_score
from crsim.sim.progress import Setback, setback
from sim.test_abus_simulator import HEAT, intents, make_sim, make_user, started

ALIENS = "1200"

#: The buttons IAI MovieBot offers after a recommendation: titles and payloads as its
#: moviebot/controller/http_data_formatter.py makes them (SHORT_ANSWER, create_buttons; iai-group/MovieBot
#: at commit 159a4cc5b0c5606c61af67db9a9887a914e8cf78); OTHER_WORDS: the same meanings worded otherwise.
MOVIEBOT = [
    ReplyOption(label="Seen it", payload="I have already watched it."),
    ReplyOption(label="Something else", payload="Recommend me something else please."),
    ReplyOption(label="I like this", payload="I like this recommendation."),
    ReplyOption(label="More information", payload="Tell me something about it."),
    ReplyOption(label="Restart", payload="/restart"),
]
OTHER_WORDS = [
    ReplyOption(label="Not for me"),
    ReplyOption(label="Seen it already!"),
    ReplyOption(label="Love it"),
    ReplyOption(label="More info"),
]


@pytest.mark.parametrize("options", [MOVIEBOT, OTHER_WORDS], ids=["moviebot", "other_words"])
async def test_a_rejection_picks_the_something_else_button(options: list[ReplyOption]) -> None:
    sim = await started(make_user())
    turn = await sim.respond(CRSReply("You might like Love Actually (2003).", options=options))
    assert intents(turn) == [Intent.REJECT, Intent.REQUEST_RECOMMENDATION]
    assert turn.option == options[0 if options is OTHER_WORDS else 1]
    assert turn.text == turn.option.label


@pytest.mark.parametrize("options", [MOVIEBOT, OTHER_WORDS], ids=["moviebot", "other_words"])
async def test_seen_accept_and_inquire_pick_their_buttons(options: list[ReplyOption]) -> None:
    by_meaning = dict(zip(["seen", "reject", "accept", "inquire"], MOVIEBOT[:4], strict=True))
    if options is OTHER_WORDS:
        by_meaning = dict(zip(["reject", "seen", "accept", "inquire"], OTHER_WORDS, strict=True))
    seen = await (await started(make_user())).respond(CRSReply("How about Titanic (1997)?", options=options))
    assert intents(seen)[0] == Intent.SEEN and seen.option == by_meaning["seen"]
    asker = await started(make_user(requests=["director"], targets=[HEAT]))
    asked = await asker.respond(CRSReply("I recommend Heat (1995).", options=options))
    assert intents(asked) == [Intent.INQUIRE] and asked.option == by_meaning["inquire"]
    accepter = await started(make_user(targets=[HEAT]))
    accepted = await accepter.respond(CRSReply("I recommend Heat (1995).", options=options))
    assert accepted.end and accepted.option == by_meaning["accept"] and accepted.text == accepted.option.label


async def test_own_words_when_no_button_says_the_whole_turn() -> None:
    # a rejection followed by a wish the need holds: a button cannot say the wish
    sim = await started(make_user({"genre": "sci-fi"}))
    turn = await sim.respond(CRSReply("You might like Love Actually (2003).", options=MOVIEBOT))
    assert intents(turn) == [Intent.REJECT, Intent.DISCLOSE] and turn.option is None
    assert turn.text not in {o.label for o in MOVIEBOT}
    # a button that negates what the user means is not picked
    plain = await started(make_user())
    turn = await plain.respond(
        CRSReply("How about Titanic (1997)?", options=[ReplyOption(label="I haven't seen it")])
    )
    assert intents(turn)[0] == Intent.SEEN and turn.option is None


def test_matching_by_meaning_table() -> None:
    assert option_score("Seen it!", "seen it") == 100.0
    assert option_score("I haven't seen it", "seen it") == 0.0
    assert option_score("Show me something else please", "something else") == 95.0
    assert option_for_act(
        "accept", [ReplyOption(label="I dont like it"), ReplyOption(label="I like it")]
    ) == (ReplyOption(label="I like it"))
    assert option_for_act("disclose", MOVIEBOT) is None


class _ButtonCRS(BaseCRS):
    """Recommends Love Actually with MovieBot's buttons, then Heat; keeps the options it was handed."""

    def __init__(self) -> None:
        self.chosen: list[ReplyOption | None] = []

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        self.chosen.append(session.chosen_option)
        title = "Love Actually (2003)" if len(self.chosen) == 1 else "Heat (1995)"
        return CRSReply(f"You might like {title}.", options=MOVIEBOT)


async def test_the_loop_records_options_and_hands_the_choice_to_the_crs() -> None:
    crs = _ButtonCRS()
    dialogue = await run_dialogue(
        make_sim(), crs, make_user(targets=[HEAT]), dialogue_id="d", session=CRSSession("d", 0), max_turns=5
    )
    crs_turns = [u for u in dialogue.utterances if u.role == "crs"]
    assert all(u.options == MOVIEBOT for u in crs_turns)
    users = [u for u in dialogue.utterances if u.role == "user"]
    assert users[1].chosen_option == MOVIEBOT[1] and users[1].text == "Something else"
    assert users[2].chosen_option == MOVIEBOT[2]  # Heat is the target: "I like this"
    assert crs.chosen == [None, MOVIEBOT[1]]  # the user's own opening words, then the button
    assert dialogue.termination is not None and dialogue.termination.detail == "accepted"


# --- progress ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("I believe I am stuck.", Setback.CANNOT_HELP),
        ("Sorry I can't help you with that.", Setback.CANNOT_HELP),
        ("Sorry, I didn't understand what you meant.", Setback.CANNOT_HELP),
        (
            "Sorry, I couldn't find any comedy films. Please select from the list of options.",
            Setback.NO_RESULTS,
        ),
        ("There are no hotels that match.", Setback.NO_RESULTS),
        ("Sorry, I don't have any other comedy films.", Setback.NO_RESULTS),
        ("No results for that, sorry.", Setback.NO_RESULTS),
        ("You might like Heat (1995). Have you seen it?", None),
        ("I don't have details about Heat (1995), but it's one of the most watched movies around.", None),
    ],
)
def test_setbacks_in_general_words(text: str, kind: Setback | None) -> None:
    assert setback(text) is kind


class _StuckCRS(BaseCRS):
    """Never progresses: the same text whatever the user says (IAI MovieBot's fallbacks)."""

    def __init__(self, text: str) -> None:
        self.text = text

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        return CRSReply(self.text)


@pytest.mark.parametrize("text", ["I believe I am stuck.", "Sorry I can't help you with that.", "Okay."])
async def test_a_crs_that_never_progresses_is_left_well_before_the_turn_limit(text: str) -> None:
    dialogue = await run_dialogue(
        make_sim(),
        _StuckCRS(text),
        make_user({"genre": "sci-fi"}),
        dialogue_id="d",
        session=CRSSession("d", 0),
        max_turns=20,
    )
    assert dialogue.termination is not None
    assert dialogue.termination.reason is TerminationReason.USER_ENDED
    assert dialogue.termination.detail == "no_progress"
    assert dialogue.num_turns == 4  # the opening, then patience (3) turns without progress
    last = dialogue.utterances[-1].annotations
    assert last["outcome"] == "no_progress" and last["stalled_turns"] == 3


async def _relaxing(user: Any, seed: int = 0) -> tuple[Any, Any]:
    sim = await started(user, seed=seed, patience=5)
    await sim.respond(CRSReply("What genre are you in the mood for?"))
    await sim.respond(CRSReply("From which decade?"))
    return sim, await sim.respond(CRSReply("Sorry, I couldn't find any films like that."))


async def test_after_no_results_the_next_turn_drops_the_least_important_constraint() -> None:
    # the sci-fi fan's ratings back sci-fi, not the 1990s (Titanic, Notting Hill rated low)
    sim, turn = await _relaxing(make_user({"genre": "sci-fi", "decade": "1990s"}))
    assert [str(a) for a in turn.acts] == ["disclose(decade)", "request_recommendation()"]
    assert turn.annotations["relaxed"] == {"decade": ["1990s"]}
    assert turn.annotations["setback"] == "no_results"
    # the dropped constraint is no longer asked of an item: a sci-fi film of the 1980s is accepted now,
    # turned down for its decade by the same user who did not relax
    after = await sim.respond(CRSReply("You might like Aliens (1986)."))
    assert intents(after) == [Intent.ACCEPT, Intent.GOODBYE]
    strict = await (await started(make_user({"genre": "sci-fi", "decade": "1990s"}))).respond(
        CRSReply("You might like Aliens (1986).")
    )
    assert (
        intents(strict)[0] == Intent.REJECT and strict.annotations["judged"][ALIENS]["violated"] == "decade"
    )


async def test_a_wish_outside_the_need_is_given_up_before_the_need_and_ties_are_seeded() -> None:
    # no ratings: both constraints are equally (un)backed; the seed decides, the same way every time
    picks = {}
    for seed in range(12):
        first = (await _relaxing(make_user({"genre": "comedy", "decade": "1980s"}, item_ratings={}), seed))[1]
        second = (await _relaxing(make_user({"genre": "comedy", "decade": "1980s"}, item_ratings={}), seed))[
            1
        ]
        assert first.acts == second.acts
        picks[seed] = first.annotations["relaxed"]
    assert {next(iter(p)) for p in picks.values()} == {"genre", "decade"}
    # the genre answered from taste (not in the need) goes before the need's decade
    _, turn = await _relaxing(make_user({"decade": "1980s"}))
    assert list(turn.annotations["relaxed"]) == ["genre"]


class _StuckAndBrokenOnClose(_StuckCRS):
    async def close(self, session: CRSSession) -> None:
        raise RuntimeError("cannot free the session")


async def test_a_failing_close_keeps_why_the_user_ended() -> None:
    dialogue = await run_dialogue(
        make_sim(),
        _StuckAndBrokenOnClose("I believe I am stuck."),
        make_user(),
        dialogue_id="d",
        session=CRSSession("d", 0),
    )
    assert dialogue.termination is not None and dialogue.termination.detail == "no_progress"
    assert dialogue.termination.error is not None and "on close" in dialogue.termination.error.message


async def test_a_relaxed_wish_presses_the_button_that_drops_it() -> None:
    """MovieBot's buttons after "no results": one per constraint to drop, and /restart (moviebot/nlg/
    nlg.py, `_user_options_remove_preference_CIN`, iai-group/MovieBot at commit 0022d77a; the
    formatter keeps such long texts as their own titles)."""
    dropping = [ReplyOption(label='Won\'t prefer a "comedy" film.', payload='Won\'t prefer a "comedy" film.')]
    options = [*dropping, ReplyOption(label="Restart", payload="/restart")]
    sim = await started(make_user({"genre": "comedy"}), patience=5)
    await sim.respond(CRSReply("What genre are you in the mood for?"))
    turn = await sim.respond(CRSReply("Sorry, I couldn't find any comedy films.", options=options))
    assert [str(a) for a in turn.acts] == ["disclose(genre)", "request_recommendation()"]
    assert turn.option == dropping[0] and turn.text == dropping[0].label
    # no button drops it: the user says so in its own words
    sim = await started(make_user({"genre": "comedy"}), patience=5)
    await sim.respond(CRSReply("What genre are you in the mood for?"))
    turn = await sim.respond(CRSReply("Sorry, no results.", options=options[1:]))
    assert turn.option is None and turn.text != "Restart"


async def test_an_inquiry_prefers_the_button_naming_its_detail_and_giving_up_is_said_in_words() -> None:
    # MovieBot's buttons after "More information" name the details (moviebot/nlg/nlg.py,
    # `_user_options_inquire`, commit 0022d77a)
    details = [ReplyOption(label="More information"), ReplyOption(label="director name")]
    asker = await started(make_user(requests=["director"], targets=[HEAT]))
    asked = await asker.respond(CRSReply("I recommend Heat (1995).", options=details))
    assert asked.option == details[1]
    # the user that runs out of patience on a film it has seen leaves in its own words, not "Seen it"
    leaver = await started(make_user(), patience=1)
    left = await leaver.respond(CRSReply("How about Titanic (1997)?", options=MOVIEBOT))
    assert left.end and intents(left) == [Intent.SEEN, Intent.GOODBYE] and left.option is None
