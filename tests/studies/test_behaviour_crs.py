"""The CRS measures of `crsim.studies.behaviour` on hand-written dialogues: cut messages, text that
does not name the recommended item, claims the item's metadata contradicts, repeated messages."""

from __future__ import annotations

from crsim.language.claims import claim_phrases
from crsim.model.domain import Domain
from crsim.studies.behaviour import Observation
from crsim.studies.behaviour.crs import crs_observations
from crsim.studies.behaviour.facts import Facts
from test_behaviour_users import GROUNDHOG, HEAT, dialogue


def observed(
    domain: Domain, turns: list, measure: str, caps: dict[str, int] | None = None
) -> list[Observation]:  # type: ignore[type-arg]
    facts = Facts(dialogue(turns), domain)
    return [o for o in crs_observations(facts, caps or {}, claim_phrases(domain)) if o.measure == measure]


def hits(domain: Domain, turns: list, measure: str, caps: dict[str, int] | None = None) -> list[bool | None]:  # type: ignore[type-arg]
    return [o.hit for o in observed(domain, turns, measure, caps)]


def test_truncated_by_ending(domain: Domain) -> None:
    turns = [
        ("crs", "Hi! What are you in the mood for today?"),
        ("user", "A comedy."),
        (
            "crs",
            "Groundhog Day (1993) is a film about a weatherman who, stuck in a town, keeps reliving the",
        ),
        ("user", "And?"),
        ("crs", "You could try The Sisterhood of the…"),
        ("user", "Ok."),
        ("crs", "Enjoy 🎬"),
    ]
    assert hits(domain, turns, "truncated") == [False, True, True, False]
    assert hits(domain, [("crs", "Try Heat (1995).")], "truncated", caps={"crs": 16}) == [False]  # ends whole
    assert hits(domain, [("crs", "Try Heat (1995).")], "truncated", caps={"crs": 160}) == [False]
    assert hits(domain, [("crs", "   ")], "truncated") == [None]


def test_truncation_looks_at_the_text_before_an_appended_label(domain: Domain) -> None:
    whole = [("crs", "You might like Casablanca. Suggestion: Heat (1995).", [HEAT])]
    assert hits(domain, whole, "truncated") == [False]
    not_a_label = [("crs", "Heat is tense and the Note: a great pick.", [HEAT])]
    assert hits(domain, not_a_label, "truncated") == [
        False
    ]  # a closing "Word: ..." naming no listed item is text
    cut = [("crs", "You might like a film about a weatherman who Suggestion: Heat (1995).", [HEAT])]
    assert hits(domain, cut, "truncated") == [True]


def test_text_names_every_recommended_item(domain: Domain) -> None:
    appended = [("crs", "You will love Casablanca, a classic. Suggestion: Heat (1995).", [HEAT])]
    (obs,) = observed(domain, appended, "text_names_item")
    assert obs.hit is False and obs.note == "does not name Heat (1995)"
    named = [("crs", "Heat (1995) is a tense crime film.", [HEAT])]
    assert hits(domain, named, "text_names_item") == [True]
    lotr = [("crs", "Take a look at The Lord of the Rings: The Fellowship of the Ring (2001).", ["4993"])]
    assert hits(domain, lotr, "text_names_item") == [True]  # "Rings: The Fellowship ..." is no label
    assert hits(domain, lotr, "truncated") == [False]
    in_a_list = [
        (
            "crs",
            "Try Big (1988), Sherlock Holmes: A Game of Shadows (2011) or Heat (1995). It's tense.",
            ["6"],
        )
    ]
    assert hits(domain, in_a_list, "truncated") == [False]  # "Holmes: ..." holds more than listed titles
    stutter = [("crs", "Heat is a great pick. Suggest: Suggestion: Groundhog Day (1993).", [HEAT, GROUNDHOG])]
    assert hits(domain, stutter, "truncated") == [True]  # the text before the label ends "Suggest:"
    colon = [("crs", "A space classic. Suggestion: Star Wars: Episode IV - A New Hope (1977).", ["260"])]
    assert hits(domain, colon, "text_names_item") == [False]
    one_of_two = [("crs", "Try Heat. Suggestion: Groundhog Day (1993).", [HEAT, GROUNDHOG])]
    assert hits(domain, one_of_two, "text_names_item") == [False]
    unknown = [("crs", "Try this one.", ["no-such-item"])]
    assert hits(domain, unknown, "text_names_item") == [None]
    assert hits(domain, [("crs", "What do you like?")], "text_names_item") == []


def test_claims_that_contradict_the_item(domain: Domain) -> None:
    wrong_year = [("crs", "Heat is a great film from 1985.", [HEAT])]
    (obs,) = observed(domain, wrong_year, "claim_contradicts_item")
    assert obs.hit is True and "1985" in obs.note
    wrong_decade = [("crs", "You might like Heat (1995). It's a classic from the 1970s.", [HEAT])]
    assert hits(domain, wrong_decade, "claim_contradicts_item") == [True]
    wrong_genre = [("crs", "Heat (1995) is a comedy movie.", [HEAT])]
    assert hits(domain, wrong_genre, "claim_contradicts_item") == [True]
    wrong_director = [("crs", "Heat (1995), directed by Steven Spielberg.", [HEAT])]
    assert hits(domain, wrong_director, "claim_contradicts_item") == [True]
    right = [("crs", "Heat (1995) is a crime movie from the 1990s, directed by Michael Mann.", [HEAT])]
    assert hits(domain, right, "claim_contradicts_item") == [False]
    off_by_one = [("crs", "Heat came out in 1996.", [HEAT])]
    assert hits(domain, off_by_one, "claim_contradicts_item") == [False]
    other_sentence = [("crs", "Heat (1995) is tense. Back in 1985 there was nothing like it.", [HEAT])]
    assert hits(domain, other_sentence, "claim_contradicts_item") == [False]
    two_items = [("crs", "Heat or Groundhog Day, both from 1985.", [HEAT, GROUNDHOG])]
    assert hits(domain, two_items, "claim_contradicts_item") == [False]  # a claim pinned to no single item


def test_claims_leave_open_vocabularies_out(domain: Domain) -> None:
    slots = {slot for meanings in claim_phrases(domain).values() for slot, _ in meanings}
    assert slots == {"genre", "actor", "director"}  # keywords: listed incompletely by the catalogue


def test_crs_repeats(domain: Domain) -> None:
    loop = [("crs", "Is there an actor you like?"), ("user", "No."), ("crs", "Is there an actor you like?")]
    assert hits(domain, loop, "crs_repeats") == [True]
    varied = [("crs", "Is there an actor you like?"), ("user", "No."), ("crs", "Which decade do you prefer?")]
    assert hits(domain, varied, "crs_repeats") == [False]
    assert hits(domain, [("crs", "Hi.")], "crs_repeats") == [None]
