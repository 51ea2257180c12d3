"""The behaviour rules' known errors, read on 16 restaurant dialogues of the LLM users and the `llm` CRS
on a 1.5B model (issue: role flips, meta text, claims, a false leak, a bare END), as
`crsim analyze behaviour` counts them; and ordinary user messages of both domains that must not fire."""

from __future__ import annotations

import pytest

from crsim.domains import domain_named
from crsim.language.claims import claim_phrases
from crsim.language.message_rules import role_flip_patterns
from crsim.model.dialogue import Dialogue, Role, Termination, TerminationReason, Utterance
from crsim.model.domain import Domain
from crsim.model.user import InformationNeed
from crsim.studies.behaviour.crs import crs_observations
from crsim.studies.behaviour.facts import Facts
from crsim.studies.behaviour.users import simulator_observations

#: Midsummer House Restaurant: british, centre, expensive; J Restaurant: asian oriental, centre, cheap.
MIDSUMMER, J_RESTAURANT = "508", "19215"


@pytest.fixture(scope="module")
def restaurants() -> Domain:
    return domain_named("restaurants")


def talk(*turns: tuple[str, str] | tuple[str, str, list[str]], targets: list[str] | None = None) -> Dialogue:
    return Dialogue(
        id="d1",
        utterances=[
            Utterance(role=Role(t[0]), text=t[1], recommended_items=list(t[2]) if len(t) > 2 else [])  # type: ignore[misc]
            for t in turns
        ],
        crs_id="llm",
        simulator_id="llm_single",
        information_need=InformationNeed(
            constraints={"food": "british", "area": "centre"}, requests=["postcode"], targets=targets or []
        ),
        termination=Termination(reason=TerminationReason.USER_ENDED),
    )


def user_hits(domain: Domain, d: Dialogue, measure: str) -> list[bool | None]:
    found = simulator_observations(Facts(d, domain), role_flip_patterns(domain))
    return [o.hit for o in found if o.measure == measure]


def crs_hits(domain: Domain, d: Dialogue, measure: str) -> list[bool | None]:
    found = crs_observations(Facts(d, domain), {}, claim_phrases(domain))
    return [o.hit for o in found if o.measure == measure]


@pytest.mark.parametrize(
    "text",
    [
        "Do you want to try it out?",
        "I'm sorry, but I can't help with that.",
        "Would you like me to book a table for you?",
        "Which part of town would you prefer?",
        "Do you have a price range in mind?",
        "Great choice! Enjoy your meal!",
        "Is there a particular cuisine you'd like?",
    ],
)
def test_a_user_offering_asking_the_others_wishes_or_refusing_flips_role(
    restaurants: Domain, text: str
) -> None:
    d = talk(("crs", "Hello! How can I help?"), ("user", text))
    assert user_hits(restaurants, d, "role_flip") == [True]


@pytest.mark.parametrize(
    ("domain_name", "text"),
    [
        ("restaurants", "Do you know any good Italian places?"),
        ("restaurants", "I'm looking for a cheap restaurant in the north."),
        ("restaurants", "Do you have any Italian restaurants in the centre?"),
        ("restaurants", "I'm sorry, but I can't afford that. Anything cheaper?"),
        ("restaurants", "Can you book a table for two?"),
        ("restaurants", "What kind of food do they serve?"),
        ("restaurants", "Thanks, I'll check it out."),
        ("restaurants", "What is the address and postcode?"),
        ("movies", "What would you recommend?"),
        ("movies", "Which one would you recommend for tonight?"),
        ("movies", "I think I will enjoy the movie."),
        ("movies", "I'll ask my friends if they've seen it."),
        ("movies", "I like the human side of the story."),
        ("movies", "I can't stand horror movies, sorry."),
        ("movies", "What do you think of it? Who directed it?"),
    ],
)
def test_ordinary_user_messages_of_both_domains_fire_neither_rule(domain_name: str, text: str) -> None:
    domain = domain_named(domain_name)
    d = talk(("crs", "Hi! What are you in the mood for?"), ("user", text))
    assert user_hits(domain, d, "role_flip") == [False]
    assert user_hits(domain, d, "meta_text") == [False]


@pytest.mark.parametrize(
    "text",
    [
        "I'll ask about the postcode and address.",
        "This person is looking for a movie with a lot of action.",
        "The user wants a cheap place in the centre.",
        "Okay. Now I will inquire about the price range.",
    ],
)
def test_announcing_ones_move_or_narrating_the_user_is_meta_text(restaurants: Domain, text: str) -> None:
    d = talk(("crs", "Midsummer House Restaurant is a British place.", [MIDSUMMER]), ("user", text))
    assert user_hits(restaurants, d, "meta_text") == [True]


def test_the_crs_speaking_as_the_seeker_flips_role(restaurants: Domain) -> None:
    d = talk(
        ("crs", "Hi! What are you in the mood for?"),
        ("user", "British food in the centre."),
        ("crs", "I'm looking for a cheap Italian place. Can you recommend one?"),
        ("user", "What?"),
        ("crs", "If you're looking for British food, try Midsummer House Restaurant.", [MIDSUMMER]),
        ("user", "Thanks."),
        ("crs", "I found a few British places for you, and I'd like to recommend the first."),
        ("user", "Which?"),
        ("crs", "I need a bit more information: which part of town?"),
    )
    assert crs_hits(restaurants, d, "crs_role_flip") == [False, True, False, False, False]


def test_restaurant_claims_with_the_value_before_its_cue_contradict_the_item(restaurants: Domain) -> None:
    wrong = [
        "Midsummer House Restaurant serves Italian cuisine.",
        "Midsummer House Restaurant is a lovely place in the east.",
        "Midsummer House Restaurant is affordable and friendly.",
        "Midsummer House Restaurant is a great choice. They offer Italian food.",
    ]
    right = [
        "Midsummer House Restaurant is an expensive British restaurant in the centre.",
        "If you want something affordable, Midsummer House Restaurant is a fine British place.",
        "Midsummer House Restaurant is not cheap, but the British food is worth it.",
    ]
    for text in wrong:
        assert crs_hits(restaurants, talk(("crs", text, [MIDSUMMER])), "claim_contradicts_item") == [True], (
            text
        )
    for text in right:
        assert crs_hits(restaurants, talk(("crs", text, [MIDSUMMER])), "claim_contradicts_item") == [False], (
            text
        )


def test_a_short_title_beside_a_generic_word_is_no_leak(restaurants: Domain) -> None:
    """ "J Restaurant" against "a restaurant": partial_ratio 91.7, over the old threshold of 90."""
    generic = talk(("user", "I want a restaurant in the centre."), targets=[J_RESTAURANT])
    named = talk(("user", "Is J Restaurant in the centre?"), targets=[J_RESTAURANT])
    slipped = talk(("user", "I heard of midsumer house restaurant."), targets=[MIDSUMMER])
    assert user_hits(restaurants, generic, "target_leaked") == [False]
    assert user_hits(restaurants, named, "target_leaked") == [True]
    assert user_hits(restaurants, slipped, "target_leaked") == [True]  # a slip inside a long word


def test_a_bare_end_marker_is_no_cut_message(restaurants: Domain) -> None:
    d = talk(
        ("user", "END"), ("crs", "Bye."), ("user", "Thanks, bye! END"), ("crs", "Bye."), ("user", "I want a")
    )
    assert user_hits(restaurants, d, "user_truncated") == [False, False, True]
    assert user_hits(restaurants, talk(("user", "END")), "first_turn_end") == [True]


def test_smollm2_users_asking_the_others_pleasure_or_unsure_how_to_help(restaurants: Domain) -> None:
    """Read on the shipped SmolLM2-135M against the `llm` CRS (configs/restaurants-llm-local.yaml)."""
    d = talk(
        ("crs", "Hi! What are you in the mood for today?"),
        ("user", "Hey! I'm in the mood for something! What's your pleasure?"),
        ("crs", "How about Pipasha Restaurant?"),
        ("user", "I'm sorry, I'm not sure how to help you. Can you please explain what you mean?"),
        ("crs", "It is a nice place."),
        ("user", "I'm sorry, I'm not sure how to provide you with a response."),
    )
    assert user_hits(restaurants, d, "role_flip") == [True, True, False]
    assert user_hits(restaurants, d, "meta_text") == [False, False, True]
