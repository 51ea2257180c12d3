"""The user-side rules of `crsim analyze behaviour` on made-up dialogues: repeats of a sentence,
answers of no preference, parroting a clause, a scrambled title still naming the item, asking a
stated slot, and an acceptance that states a contrary wish."""

from __future__ import annotations

import pytest

from crsim.domains import domain_named
from crsim.language.message_rules import role_flip_patterns
from crsim.model.dialogue import Dialogue, Role, Termination, TerminationReason, Utterance
from crsim.model.domain import Domain
from crsim.model.user import InformationNeed
from crsim.studies.behaviour.facts import Facts
from crsim.studies.behaviour.users import simulator_observations

#: Midsummer House Restaurant: british, centre, expensive; J Restaurant: asian oriental, centre, cheap.
MIDSUMMER, J_RESTAURANT = "508", "19215"


@pytest.fixture(scope="module")
def restaurants() -> Domain:
    return domain_named("restaurants")


def talk(
    *turns: tuple[str, str] | tuple[str, str, list[str]],
    constraints: dict[str, str] | None = None,
    ended: TerminationReason = TerminationReason.USER_ENDED,
) -> Dialogue:
    return Dialogue(
        id="d1",
        utterances=[
            Utterance(role=Role(t[0]), text=t[1], recommended_items=list(t[2]) if len(t) > 2 else [])  # type: ignore[misc]
            for t in turns
        ],
        crs_id="llm",
        simulator_id="llm_single",
        information_need=InformationNeed(
            constraints=constraints or {"food": "british", "area": "centre"}, requests=["postcode"]
        ),
        termination=Termination(reason=ended),
    )


def hits(domain: Domain, d: Dialogue, measure: str) -> list[bool | None]:
    found = simulator_observations(Facts(d, domain), role_flip_patterns(domain))
    return [o.hit for o in found if o.measure == measure]


def test_a_sentence_said_again_in_the_next_user_message_is_a_repeat(restaurants: Domain) -> None:
    said = "Sorry, the menu you sent me earlier would not open on my phone at all."
    d = talk(
        ("crs", "Which area?"),
        ("user", said),
        ("crs", "Any price range?"),
        ("user", f"Hmm. {said[7:]} Is it cheap?"),
        ended=TerminationReason.MAX_TURNS,
    )
    assert hits(restaurants, d, "user_repeats") == [True]


def test_no_preference_given_to_two_different_questions_is_no_repeat(restaurants: Domain) -> None:
    asked = ("crs", "Which part of town would you like?"), ("crs", "What price range do you have in mind?")
    d = talk(asked[0], ("user", "I don't mind."), asked[1], ("user", "I don't mind."))
    assert hits(restaurants, d, "user_repeats") == [False]
    same = talk(asked[0], ("user", "I don't mind."), asked[0], ("user", "I don't mind."))
    assert hits(restaurants, same, "user_repeats") == [True]  # the same question twice: said again
    wish = talk(
        asked[0], ("user", "A British place, please."), asked[1], ("user", "A British place, please.")
    )
    assert hits(restaurants, wish, "user_repeats") == [True]


def test_copying_a_clause_of_the_crs_message_is_parroting(restaurants: Domain) -> None:
    crs = "Honestly I am not sure which of these three places you would enjoy most. Try Midsummer House."
    d = talk(
        ("crs", crs, [MIDSUMMER]),
        ("user", "Right, I am not sure which of these three places you would enjoy."),
    )
    assert hits(restaurants, d, "parroting") == [True]
    quoted = talk(
        ("crs", "How about Midsummer House Restaurant?", [MIDSUMMER]),
        ("user", "Midsummer House Restaurant? What is the postcode of it?"),
    )
    assert hits(restaurants, quoted, "parroting") == [False]


def test_a_title_with_its_words_scrambled_still_names_the_item(restaurants: Domain) -> None:
    d = talk(
        ("crs", "Restaurant. House suggest Midsummer I would", [MIDSUMMER]),
        ("user", "Could you suggest a restaurant?"),
        ended=TerminationReason.MAX_TURNS,
    )
    assert hits(restaurants, d, "missed_recommendation") == [True]
    missing = talk(
        ("crs", "House suggest I would", [MIDSUMMER]),
        ("user", "Could you suggest a restaurant?"),
        ended=TerminationReason.MAX_TURNS,
    )
    assert hits(restaurants, missing, "missed_recommendation") == [None]  # the text does not name it


def test_asking_a_stated_value_counts_only_for_a_single_valued_slot_of_an_item(restaurants: Domain) -> None:
    food = talk(
        ("crs", "What kind of food?"),
        ("user", "I want British food."),
        ("crs", "How about Midsummer House Restaurant?", [MIDSUMMER]),
        ("user", "What food do they serve?"),
    )
    assert hits(restaurants, food, "asked_stated_slot") == [True]
    flipped = talk(
        ("crs", "What kind of food?"),
        ("user", "I want British food."),
        ("crs", "Sure."),
        ("user", "What kind of food do you want?"),
    )
    assert hits(restaurants, flipped, "asked_stated_slot") == [False]
    movies = domain_named("movies")
    actors = talk(
        ("crs", "Any actor you like?"),
        ("user", "I'm a big fan of Tom Hanks."),
        ("crs", "How about Forrest Gump (1994)?", ["356"]),
        ("user", "Which actors are in it?"),
        constraints={"genre": "drama"},
    )
    assert hits(movies, actors, "asked_stated_slot") == [False]
    hotels = domain_named("hotels")
    kind = talk(
        ("crs", "Hello!"),
        ("user", "I'm looking for a hotel."),
        ("crs", "How about it?"),
        ("user", "What type of place is it?"),
        constraints={"area": "north"},
    )
    assert hits(hotels, kind, "asked_stated_slot") == [False]


def test_ending_on_a_contrary_wish_accepts_nothing(restaurants: Domain) -> None:
    accepted = talk(
        ("crs", "How about J Restaurant?", [J_RESTAURANT]), ("user", "Perfect, I'll go there. Bye!")
    )
    assert hits(restaurants, accepted, "contradicting_acceptance") == [True]
    wish = talk(
        ("crs", "How about J Restaurant?", [J_RESTAURANT]), ("user", "Great, but I'd like British food.")
    )
    assert hits(restaurants, wish, "contradicting_acceptance") != [True]


def test_ending_the_dialogue_right_after_a_fitting_item_is_no_miss(restaurants: Domain) -> None:
    crs = ("crs", "You might like Midsummer House Restaurant.", [MIDSUMMER])
    ended = talk(("user", "British food in the centre."), crs, ("user", "Thanks, goodbye!"))
    assert hits(restaurants, ended, "missed_recommendation") == [False]
    again = talk(
        ("user", "British food in the centre."),
        crs,
        ("user", "Could you suggest a restaurant?"),
        ended=TerminationReason.MAX_TURNS,
    )
    assert hits(restaurants, again, "missed_recommendation") == [True]
