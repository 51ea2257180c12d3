"""The features of `learned_crsarena` that read failures independently of the CRS (issue 22, round 2):
degenerate repetition, replies that go elsewhere, and recommendations that do not fit the catalogue
entries of what the user asked for."""

from __future__ import annotations

import pytest

from crsim.core.components import BuildContext
from crsim.domains import domain_named
from crsim.eval.learned.catalogue_fit import ReplyFit, reply_fits
from crsim.eval.learned.crsarena import LearnedCrsarena
from crsim.eval.learned.crsarena_features import (
    DIALOGUE_FEATURES,
    TURN_FEATURES,
    dialogue_features,
    repeated_trigrams,
    stutter,
)
from crsim.model import Dialogue, Role, Utterance
from crsim.model.text import normalize

MATRIX, TITANIC, TOY_STORY = "2571", "1721", "1"  # ids of the shipped movie domain


def _dialogue(*turns: tuple[Role, str] | tuple[Role, str, list[str]]) -> Dialogue:
    utterances = [
        Utterance(role=t[0], text=t[1], recommended_items=list(t[2]) if len(t) == 3 else [])  # type: ignore[misc]
        for t in turns
    ]
    return Dialogue(id="d", utterances=utterances)


def _words(text: str) -> list[str]:
    return normalize(text).split()


def _turn(dialogue: Dialogue, index: int) -> dict[str, float]:
    return dict(zip(TURN_FEATURES, dialogue_features(dialogue).turns[index].dense, strict=True))


def _whole(dialogue: Dialogue) -> dict[str, float]:
    return dict(zip(DIALOGUE_FEATURES, dialogue_features(dialogue).dialogue.dense, strict=True))


def test_stutter_counts_words_repeating_the_word_before() -> None:
    assert stutter(_words("sure he wrote the the the last last last stand")) == pytest.approx(4 / 9)
    assert stutter(_words("a fine reply with no loops")) == 0.0
    assert stutter(["one"]) == stutter([]) == 0.0


def test_repeated_trigrams_counts_loops_inside_one_utterance() -> None:
    words = _words("you might like it you might like it")
    assert repeated_trigrams(words) == pytest.approx(2 / 6)  # the last two repeat the first two
    assert repeated_trigrams(_words("you might like this one")) == 0.0
    assert repeated_trigrams(["too", "short"]) == 0.0


def test_degenerate_replies_are_seen_at_both_levels() -> None:
    dialogue = _dialogue(
        (Role.USER, "Can you recommend a movie?"),
        (Role.CRS, "Yes, I can can can i i i can can you like The The House?"),
        (Role.USER, "What do you mean?"),
        (Role.CRS, "How about a comedy?"),
    )
    first, second = _turn(dialogue, 0), _turn(dialogue, 1)
    assert first["stutter"] > 0.4 and second["stutter"] == 0.0
    whole = _whole(dialogue)
    assert whole["stutter_max"] == pytest.approx(first["stutter"])
    assert whole["stutter_mean"] == pytest.approx(first["stutter"] / 2)
    assert whole["disfluent_share"] == pytest.approx(0.5)


def test_an_unanswered_question_and_an_unmet_request() -> None:
    dialogue = _dialogue(
        (Role.USER, "What is Titanic about?"),
        (Role.CRS, "I like the weather today."),
        (Role.USER, "Could you recommend me a good comedy film?"),
        (Role.CRS, "I am fine and you."),
        (Role.USER, "What is Titanic about?"),
        (Role.CRS, "Titanic is a romance on a sinking ship."),
    )
    assert [_turn(dialogue, i)["question_unanswered"] for i in range(3)] == [1.0, 1.0, 0.0]
    assert [_turn(dialogue, i)["request_unmet"] for i in range(3)] == [0.0, 1.0, 0.0]
    assert [_turn(dialogue, i)["pleasantry_unprompted"] for i in range(3)] == [0.0, 1.0, 0.0]
    whole = _whole(dialogue)
    assert whole["unanswered_question_share"] == pytest.approx(2 / 3)
    assert whole["request_unmet_share"] == pytest.approx(1 / 3)


def test_small_talk_after_a_greeting_is_not_counted() -> None:
    dialogue = _dialogue((Role.USER, "Hi, how are you?"), (Role.CRS, "I'm good, thanks! What do you like?"))
    assert _turn(dialogue, 0)["pleasantry_unprompted"] == 0.0
    assert _turn(dialogue, 0)["request_unmet"] == 0.0


def test_a_reply_that_asks_back_or_recommends_meets_a_request() -> None:
    dialogue = _dialogue(
        (Role.USER, "Can you recommend a movie?"),
        (Role.CRS, "What kind of movies do you like?"),
        (Role.USER, "Recommend me a movie please"),
        (Role.CRS, "You might like this one.", [MATRIX]),
    )
    assert _turn(dialogue, 0)["request_unmet"] == 0.0 and _turn(dialogue, 1)["request_unmet"] == 0.0


def test_recommendations_are_checked_against_what_the_user_said_before() -> None:
    dialogue = _dialogue(
        (Role.CRS, "Hello! What are you in the mood for?", [TITANIC]),
        (Role.USER, "I want a sci-fi movie, nothing animated. I have seen Titanic."),
        (Role.CRS, "Try these.", [MATRIX, TOY_STORY]),
        (Role.CRS, "Or this one.", [TITANIC]),
        (Role.CRS, "Something unknown.", ["no-such-id"]),
    )
    fits = reply_fits(dialogue)
    # before the user spoke nothing is known; afterwards The Matrix fits sci-fi, Toy Story is
    # animated (a disliked genre) and not sci-fi, Titanic was seen; an unknown item is not judged
    assert fits[0] == ReplyFit()
    assert fits[2] == ReplyFit(known=1.0, match=0.5, clash=0.5, seen=0.0)
    assert fits[3] == ReplyFit(known=1.0, match=0.0, clash=0.0, seen=1.0)
    assert fits[4] == ReplyFit()
    whole = _whole(dialogue)
    assert whole["fit_known_share"] == pytest.approx(2 / 4)
    assert whole["fit_match_mean"] == pytest.approx(0.25)
    assert whole["fit_seen_mean"] == pytest.approx(0.25)
    assert _turn(dialogue, 1)["fit_match"] == 0.5


def test_items_outside_the_catalogue_are_not_judged() -> None:
    dialogue = _dialogue(
        (Role.USER, "I want a sci-fi movie."),
        (Role.CRS, "Try this one.", ["no-such-movie"]),
    )
    assert reply_fits(dialogue) == {1: ReplyFit()}


def test_the_runs_domain_is_the_catalogue_when_given() -> None:
    restaurants = domain_named("restaurants")
    prezzo, hk_fusion = "12700", "19172"  # an Italian and a Chinese restaurant
    dialogue = _dialogue(
        (Role.USER, "I would like Italian food, but no Chinese please."),
        (Role.CRS, "How about these two?", [prezzo, hk_fusion]),
    )
    assert reply_fits(dialogue, restaurants) == {1: ReplyFit(known=1.0, match=0.5, clash=0.5)}
    # the evaluator reads the domain of the run it is built for
    evaluator = LearnedCrsarena(ctx=BuildContext(domain=restaurants))
    assert evaluator.domain is restaurants
    assert LearnedCrsarena().domain is None
    assert {v.aspect for v in evaluator.values(dialogue)} >= {"overall", "relevance"}
