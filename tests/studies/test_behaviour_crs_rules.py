"""The CRS-side behaviour rules as the labelled set's readers read them (tests/fixtures/behaviour_labels/
GUIDE.md): a CRS that shuffles its words is not judged for cuts, a list left open is cut, a title whose
words are all there names the item in any order, a repeat may reorder its words, claims after "what you
asked for:" or after the title are claims, several named items keep their own sentences, and a CRS
doubting which item to take speaks as the seeker. Every sentence here is made up; ordinary replies of
three domains must fire neither the claim rule nor the role-flip rule (the `llm` CRS re-asks on them)."""

from __future__ import annotations

import pytest

from crsim.domains import domain_named
from crsim.language.claims import claim_phrases, contradicting_claims
from crsim.language.message_rules import crs_role_flip, ends_cut, scrambled, title_words_in
from crsim.model.dialogue import Dialogue, Role, Termination, TerminationReason, Utterance
from crsim.model.domain import Domain
from crsim.model.user import InformationNeed
from crsim.studies.behaviour.crs import crs_observations, same_words
from crsim.studies.behaviour.facts import Facts

#: movies: Heat (1995; action, crime, thriller, drama; Al Pacino, Robert De Niro, Val Kilmer),
#: Groundhog Day (1993). restaurants: Midsummer House Restaurant (british, centre, expensive).
#: hotels: Ashley Hotel (hotel, north, moderate).
HEAT, GROUNDHOG, MIDSUMMER, ASHLEY = "6", "1265", "508", "7"


@pytest.fixture(scope="module")
def domains() -> dict[str, Domain]:
    return {name: domain_named(name) for name in ("movies", "restaurants", "hotels")}


def crs_talk(*turns: tuple[str, list[str]]) -> Dialogue:
    """A dialogue of the given CRS messages (text, recommended item ids) with "Ok." between them."""
    utterances: list[Utterance] = []
    for text, items in turns:
        utterances += [
            Utterance(role=Role.CRS, text=text, recommended_items=items),
            Utterance(role=Role.USER, text="Ok."),
        ]
    return Dialogue(
        id="d1",
        utterances=utterances[:-1],
        crs_id="some-crs",
        simulator_id="abus",
        information_need=InformationNeed(constraints={}, requests=[]),
        termination=Termination(reason=TerminationReason.MAX_TURNS),
    )


def hits(domain: Domain, d: Dialogue, measure: str, caps: dict[str, int] | None = None) -> list[bool | None]:
    found = crs_observations(Facts(d, domain), caps or {}, claim_phrases(domain))
    return [o.hit for o in found if o.measure == measure]


def test_a_list_left_open_at_the_end_is_cut() -> None:
    assert ends_cut("1. Heat (1995), a tense heist film. 2. Groundhog Day (1993), a comedy. 3.")
    assert ends_cut("Two picks: 1) Heat 2)")
    assert not ends_cut("I would give it a 9.")
    assert not ends_cut("My top pick is number 2.")


def test_shuffled_words_are_told_from_ordinary_text() -> None:
    assert scrambled("tonight. like might You Heat")
    assert scrambled("Heat. enjoy you will")
    assert scrambled("about Heat How")
    for text in (
        "How about Heat (1995)? It's a tense heist film.",
        "Try The Matrix, e.g. the first one.",
        "OK.",
    ):
        assert not scrambled(text), text


def test_a_crs_that_shuffles_its_words_is_not_judged_for_cuts(domains: dict[str, Domain]) -> None:
    movies = domains["movies"]
    shuffled = crs_talk(
        ("for? looking you What are", []),
        ("Heat. might like You", [HEAT]),
        ("Day? How Groundhog about", [GROUNDHOG]),
    )
    assert hits(movies, shuffled, "truncated") == [None, None, None]
    one_slip = crs_talk(
        ("hi! What are you looking for?", []), ("You might like Heat, a film about a crew of", [HEAT])
    )
    assert hits(movies, one_slip, "truncated") == [False, True]  # one odd message does not make a shuffler


def test_the_character_cap_alone_is_no_cut(domains: dict[str, Domain]) -> None:
    movies = domains["movies"]
    whole = crs_talk(("You might like Heat (1995), a tense heist film.", [HEAT]))
    assert hits(movies, whole, "truncated", caps={"some-crs": 20}) == [False]
    cut = crs_talk(("You might like Heat (1995), a tense heist film about a", [HEAT]))
    (obs,) = [
        o for o in crs_observations(Facts(cut, movies), {"some-crs": 20}, {}) if o.measure == "truncated"
    ]
    assert obs.hit is True and "cap of 20" in obs.note


def test_a_title_names_its_item_with_its_words_in_any_order(domains: dict[str, Domain]) -> None:
    movies, restaurants = domains["movies"], domains["restaurants"]
    midsummer = restaurants.items[MIDSUMMER]
    assert title_words_in("Restaurant. House Midsummer suggest I'd", midsummer)
    assert not title_words_in("I'd suggest a cosy house restaurant.", midsummer)  # "midsummer" missing
    assert not title_words_in(
        "the heat is on", movies.items[HEAT]
    )  # one short word: as the catalogue writes it
    shuffled = crs_talk(("Day Groundhog like might You", [GROUNDHOG]))
    assert hits(movies, shuffled, "text_names_item") == [True]
    other = crs_talk(("You might like this one, a day to remember.", [GROUNDHOG]))
    assert hits(movies, other, "text_names_item") == [False]


def test_a_crs_repeating_its_words_in_another_order_repeats() -> None:
    assert same_words("Which part of town do you like?", "town you Which do of like? part")
    assert not same_words("Which part of town do you like?", "Which price range do you like?")


def test_claims_the_readers_count(domains: dict[str, Domain]) -> None:
    movies, restaurants, hotels = domains["movies"], domains["restaurants"], domains["hotels"]
    heat, groundhog = movies.items[HEAT], movies.items[GROUNDHOG]
    mids, ashley = restaurants.items[MIDSUMMER], hotels.items[ASHLEY]

    def wrong(domain: Domain, text: str, items: list) -> bool:  # type: ignore[type-arg]
        found = contradicting_claims(text, items, domain, claim_phrases(domain))
        return found is not None and bool(found[1])

    assert wrong(
        restaurants,
        "Have a look at Midsummer House Restaurant. It matches what you asked for: food italian.",
        [mids],
    )
    assert wrong(hotels, "Ashley Hotel fits what you wanted: area east.", [ashley])
    assert wrong(restaurants, "You might like Midsummer House Restaurant, an Italian place.", [mids])
    assert wrong(movies, "You might like Heat (1995). It's a romance movie.", [heat])
    assert wrong(movies, "Try Heat (1995), a film with Tom Hanks and Meg Ryan.", [heat])
    assert wrong(movies, "Try Heat (1995). It stars Tom Hanks.", [heat])
    assert not wrong(movies, "Try Heat (1995), a film with Al Pacino and Robert De Niro.", [heat])
    several = "1. Heat (1995), a romance. 2. Groundhog Day (1993), a comedy with Bill Murray."
    assert wrong(movies, several, [heat, groundhog])
    assert not wrong(
        movies, "1. Heat (1995), a crime film. 2. Groundhog Day (1993), a comedy.", [heat, groundhog]
    )
    assert not wrong(movies, "Heat or Groundhog Day, both romances.", [heat, groundhog])  # not pinned to one


@pytest.mark.parametrize(
    ("name", "items", "text"),
    [
        ("movies", [HEAT], "If you like crime stories, Heat (1995) with Al Pacino is a great pick."),
        ("movies", [HEAT], "You might like Heat (1995). It's a tense crime thriller from the 1990s."),
        ("movies", [HEAT, GROUNDHOG], "Heat (1995) is a crime drama; Groundhog Day (1993) is lighter."),
        ("movies", [HEAT], "Since you asked for something with action: Heat (1995) is a classic."),
        ("restaurants", [MIDSUMMER], "Midsummer House Restaurant serves British food in the centre."),
        (
            "restaurants",
            [MIDSUMMER],
            "You wanted Italian, but Midsummer House Restaurant is a fine British place.",
        ),
        (
            "restaurants",
            [MIDSUMMER],
            "Midsummer House Restaurant. It matches what you asked for: food british.",
        ),
        ("hotels", [ASHLEY], "Ashley Hotel is a moderately priced hotel in the north with free parking."),
        ("hotels", [ASHLEY], "If you'd rather stay in the centre, Ashley Hotel is in the north though."),
    ],
)
def test_ordinary_crs_replies_fire_neither_claims_nor_role_flip(
    domains: dict[str, Domain], name: str, items: list[str], text: str
) -> None:
    domain = domains[name]
    found = contradicting_claims(text, [domain.items[i] for i in items], domain, claim_phrases(domain))
    assert found is not None and found[1] == [], found
    assert crs_role_flip(text) is None


def test_a_crs_doubting_which_item_to_take_speaks_as_the_seeker() -> None:
    assert crs_role_flip("Heat or Big? I'm not sure which of these to choose.")
    assert crs_role_flip("I can't decide which one to watch tonight.")
    assert crs_role_flip("I'm not sure which of these you'd prefer, so here are both.") is None
    assert crs_role_flip("Not sure which to pick? Heat is my favourite.") is None
