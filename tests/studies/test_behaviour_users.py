"""The simulator measures of `crsim.studies.behaviour` on hand-written dialogues: each must fire on
the behaviour it names and stay silent on its near miss."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from crsim.language.message_rules import role_flip_patterns
from crsim.model.dialogue import Dialogue, Role, Termination, TerminationReason, Utterance
from crsim.model.domain import Domain
from crsim.model.user import InformationNeed
from crsim.studies.behaviour import Observation
from crsim.studies.behaviour.facts import Facts
from crsim.studies.behaviour.users import simulator_observations

HEAT, GUMP, GROUNDHOG = (
    "6",
    "356",
    "1265",
)  # Heat (1995, no comedy), Forrest Gump (1994), Groundhog Day (1993)

#: (role, text) or (role, text, recommended item ids)
Turn = tuple[str, str] | tuple[str, str, list[str]]


def dialogue(
    turns: Sequence[Turn],
    *,
    need: InformationNeed | None = None,
    ended: TerminationReason | None = TerminationReason.USER_ENDED,
    simulator: str = "sim",
    crs: str = "crs",
    did: str = "d1",
) -> Dialogue:
    """A dialogue record from turns; `need` defaults to a comedy from the 1990s, asking for the year."""
    utterances = [
        Utterance(role=Role(t[0]), text=t[1], recommended_items=list(t[2]) if len(t) > 2 else [])  # type: ignore[misc]
        for t in turns
    ]
    return Dialogue(
        id=did,
        utterances=utterances,
        crs_id=crs,
        simulator_id=simulator,
        information_need=need
        if need is not None
        else InformationNeed(
            constraints={"genre": "comedy", "decade": "1990s"}, requests=["year"], targets=[GUMP]
        ),
        termination=Termination(reason=ended) if ended else None,
    )


def observed(domain: Domain, d: Dialogue, measure: str) -> list[Observation]:
    found = simulator_observations(Facts(d, domain), role_flip_patterns(domain))
    return [o for o in found if o.measure == measure]


def hit(domain: Domain, d: Dialogue, measure: str) -> bool | None:
    (one,) = observed(domain, d, measure)
    return one.hit


def test_first_turn_end_by_ending_or_marker(domain: Domain) -> None:
    ended_at_once = dialogue([("crs", "Hi! What would you like?"), ("user", "Thanks, bye.")])
    assert hit(domain, ended_at_once, "first_turn_end") is True
    marker = dialogue(
        [("user", "Comedy [END]"), ("crs", "Any actor?"), ("user", "No.")], ended=TerminationReason.MAX_TURNS
    )
    assert hit(domain, marker, "first_turn_end") is True
    normal = dialogue(
        [("user", "A comedy please."), ("crs", "Try Groundhog Day (1993).", [GROUNDHOG]), ("user", "Thanks!")]
    )
    assert hit(domain, normal, "first_turn_end") is False
    unknown = dialogue([("user", "A comedy please.")], ended=None)
    assert observed(domain, unknown, "first_turn_end")[0].hit is None


def test_constraints_stated_per_constraint_and_dialogue(domain: Domain) -> None:
    half = dialogue([("user", "I want a comedy."), ("crs", "Sure.")])
    assert [o.hit for o in observed(domain, half, "constraints_stated")] == [True, False]
    assert hit(domain, half, "all_constraints_stated") is False
    full = dialogue([("user", "I want a comedy."), ("crs", "From when?"), ("user", "From the 1990s.")])
    assert hit(domain, full, "all_constraints_stated") is True
    no_need = dialogue([("user", "Hello")], need=InformationNeed())
    assert hit(domain, no_need, "all_constraints_stated") is None


def test_requests_asked(domain: Domain) -> None:
    need = InformationNeed(constraints={"genre": "comedy"}, requests=["year", "director"])
    one = dialogue(
        [
            ("user", "A comedy."),
            ("crs", "Try Groundhog Day (1993).", [GROUNDHOG]),
            ("user", "Who directed it?"),
        ],
        need=need,
    )
    assert [(o.note, o.hit) for o in observed(domain, one, "requests_asked")] == [
        ("year", False),
        ("director", True),
    ]
    assert hit(domain, one, "all_requests_asked") is False
    both = dialogue([("user", "Who directed it and what year was it released?")], need=need)
    assert hit(domain, both, "all_requests_asked") is True
    none = dialogue([("user", "A comedy.")], need=InformationNeed(constraints={"genre": "comedy"}))
    assert hit(domain, none, "all_requests_asked") is None


def test_target_leaked_only_before_the_crs_named_it(domain: Domain) -> None:
    leaked = dialogue([("user", "Something like Forrest Gump, please."), ("crs", "Any actor?")])
    (obs,) = observed(domain, leaked, "target_leaked")
    assert obs.hit is True and obs.note == "Forrest Gump (1994)"
    echoed = dialogue(
        [
            ("user", "A comedy."),
            ("crs", "Try Forrest Gump (1994).", [GUMP]),
            ("user", "Forrest Gump sounds good."),
        ]
    )
    assert hit(domain, echoed, "target_leaked") is False
    lowercase_word = dialogue(
        [("user", "Something with heat and speed.")], need=InformationNeed(targets=[HEAT])
    )
    assert hit(domain, lowercase_word, "target_leaked") is False  # a weak one-word title needs its capital


def test_role_flip_by_cue(domain: Domain) -> None:
    flipped = dialogue(
        [
            ("user", "I want a comedy."),
            ("crs", "Any actor?"),
            ("user", "Here are some movies you might like!"),
        ]
    )
    assert [o.hit for o in observed(domain, flipped, "role_flip")] == [False, True]
    assert hit(domain, flipped, "role_flip_dialogue") is True
    asking = dialogue([("user", "Can you recommend a comedy? What kind of movies do you have?")])
    assert hit(domain, asking, "role_flip_dialogue") is False
    domain_noun = dialogue([("user", "What kind of movies do you like?")])
    assert hit(domain, domain_noun, "role_flip_dialogue") is True
    asked_back = dialogue([("user", "Just curious about what kind of movie you're looking for.")])
    assert hit(domain, asked_back, "role_flip_dialogue") is True


def test_meta_text(domain: Domain) -> None:
    leaked = dialogue(
        [("user", "Sure, here's my next message: I want a comedy."), ("crs", "OK."), ("user", "User: thanks")]
    )
    assert [(o.hit, o.note) for o in observed(domain, leaked, "meta_text")] == [
        (True, "here's my next message"),
        (True, "User:"),
    ]
    plain = dialogue([("user", "Here is what I want: a comedy. The user reviews say it's fun.")])
    assert [o.hit for o in observed(domain, plain, "meta_text")] == [False]


def test_user_truncated(domain: Domain) -> None:
    d = dialogue(
        [("user", "I'd like to see something that's not just a on"), ("crs", "OK."), ("user", "A comedy.")]
    )
    assert [o.hit for o in observed(domain, d, "user_truncated")] == [True, False]


def test_repeats_and_parroting(domain: Domain) -> None:
    loop = dialogue(
        [
            ("user", "I want a funny movie."),
            ("crs", "Any actor?"),
            ("user", "I want a funny movie!"),
            ("crs", "OK."),
        ]
    )
    assert hit(domain, loop, "user_repeats") is True
    assert hit(domain, loop, "parroting") is False
    parrot = dialogue(
        [
            ("user", "Hello."),
            ("crs", "Groundhog Day (1993) is a comedy about a man reliving the same day over and over."),
            ("user", "Groundhog Day is a comedy about a man reliving the same day over and over."),
        ]
    )
    assert hit(domain, parrot, "parroting") is True
    assert hit(domain, parrot, "user_repeats") is False
    single = dialogue([("user", "Hello.")])
    assert hit(domain, single, "user_repeats") is None


def test_contradicting_acceptance(domain: Domain) -> None:
    need = InformationNeed(constraints={"genre": "comedy"})
    wrong = dialogue(
        [("user", "A comedy."), ("crs", "Try Heat (1995).", [HEAT]), ("user", "Great, I'll watch it!")],
        need=need,
    )
    (obs,) = observed(domain, wrong, "contradicting_acceptance")
    assert obs.hit is True and obs.note.startswith("Heat (1995): genre=comedy")
    right = dialogue(
        [
            ("user", "A comedy."),
            ("crs", "Try Groundhog Day (1993).", [GROUNDHOG]),
            ("user", "Great, I'll watch it!"),
        ],
        need=need,
    )
    assert hit(domain, right, "contradicting_acceptance") is False
    hedged = dialogue(
        [
            ("user", "A comedy."),
            ("crs", "Try Heat (1995).", [HEAT]),
            ("user", "Sounds great! Any other recommendations?"),
        ],
        need=need,
    )
    assert hit(domain, hedged, "contradicting_acceptance") is None  # no acceptance: nothing to check
    satisfied = dialogue(
        [("user", "A comedy."), ("crs", "Try Heat (1995).", [HEAT]), ("user", "Thank you, goodbye!")],
        need=need,
    )
    assert (
        hit(domain, satisfied, "contradicting_acceptance") is True
    )  # ended right after it, not turning it down
    turned_down = dialogue(
        [("user", "A comedy."), ("crs", "Try Heat (1995).", [HEAT]), ("user", "No, not that one. Bye.")],
        need=need,
    )
    assert hit(domain, turned_down, "contradicting_acceptance") is None


def test_stop_before_recommendation(domain: Domain) -> None:
    early = dialogue([("user", "A comedy."), ("crs", "Any actor?"), ("user", "Bye.")])
    assert hit(domain, early, "stop_before_recommendation") is True
    late = dialogue(
        [("user", "A comedy."), ("crs", "Try Groundhog Day (1993).", [GROUNDHOG]), ("user", "Bye.")]
    )
    assert hit(domain, late, "stop_before_recommendation") is False
    crs_ended = dialogue([("user", "A comedy.")], ended=TerminationReason.CRS_ENDED)
    assert hit(domain, crs_ended, "stop_before_recommendation") is None


@pytest.mark.parametrize("text", ["", "   "])
def test_empty_messages_do_not_crash(domain: Domain, text: str) -> None:
    d = dialogue([("user", text), ("crs", text), ("user", text)])
    assert {o.measure for o in simulator_observations(Facts(d, domain), role_flip_patterns(domain))}


def test_broken_dialogues_do_not_count_as_unstated(domain: Domain) -> None:
    broke = dialogue([("crs", "Hi! What would you like?")], ended=TerminationReason.USER_ERROR)
    assert hit(domain, broke, "all_constraints_stated") is None
    assert hit(domain, broke, "all_requests_asked") is None
    assert observed(domain, broke, "constraints_stated") == []
    cut = dialogue([("user", "A comedy.")], ended=TerminationReason.INFRASTRUCTURE_ERROR)
    assert (
        observed(domain, cut, "all_constraints_stated")[0].note == "the dialogue broke (infrastructure_error)"
    )
