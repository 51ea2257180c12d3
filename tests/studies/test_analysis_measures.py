"""Measures of one user utterance: words, rule-based formality and key points, categories, entropy."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.domain import Domain
from crsim.model.user import UserProfile
from crsim.studies.language.diversity import distribution, normalized_entropy
from crsim.studies.language.formality import FormalityRules, classify_formality, formality_cues
from crsim.studies.language.judge import KIND_MEANINGS
from crsim.studies.language.measures import Measure, Thresholds, UtteranceMeasures, word_count
from crsim.studies.language.measuring import RuleMeasurer, measure_dialogue, persona_pattern
from crsim.studies.language.richness import KEY_POINT_KINDS, RuleKeyPoints

# --- length ---------------------------------------------------------------------------------------


def test_words_count_contractions_and_hyphenated_words_once_and_skip_punctuation_and_emoji() -> None:
    assert word_count("I don't want a feel-good movie!!! 😊") == 6
    assert word_count("   ") == 0
    assert word_count("Amélie (2001), please.") == 3


def test_length_categories_follow_the_thresholds_at_their_bounds() -> None:
    thresholds = Thresholds()
    assert [thresholds.length_category(n) for n in (0, 20, 21, 40, 41)] == [
        "short",
        "short",
        "medium",
        "medium",
        "long",
    ]
    custom = Thresholds(short_max=5, medium_max=6, low_richness_max=0)
    assert [custom.length_category(n) for n in (5, 6, 7)] == ["short", "medium", "long"]
    assert [custom.richness_category(n) for n in (0, 1)] == ["low", "high"]
    assert [Thresholds().richness_category(n) for n in (2, 3)] == ["low", "high"]


def test_thresholds_must_be_ordered() -> None:
    with pytest.raises(ValidationError, match="medium_max"):
        Thresholds(short_max=20, medium_max=20)


# --- formality ------------------------------------------------------------------------------------

FORMAL = [
    "Good evening. Could you please recommend a thoughtful historical drama? Thank you.",
    "I would appreciate a suggestion for a documentary regarding classical music, if possible.",
    "Would it be possible to suggest a film suitable for a family evening? I am fond of musicals.",
]
INFORMAL = [
    "lol yeah gimme something scary!!",
    "omg that sounds sooo cool 😂",
    "nah dude, idk, anything w/ explosions i guess",
    "hey u got any good flicks?",
]
NEUTRAL = [
    "I'd like a comedy from the 90s.",
    "Sure, that sounds good.",
    "Can you find me something with Tom Hanks?",
    "I have seen that one already.",
]


@pytest.mark.parametrize("text", FORMAL)
def test_formal_writing_is_formal(text: str) -> None:
    assert classify_formality(text).value == "formal"


@pytest.mark.parametrize("text", INFORMAL)
def test_informal_writing_is_informal(text: str) -> None:
    assert classify_formality(text).value == "informal"


@pytest.mark.parametrize("text", NEUTRAL)
def test_plain_writing_is_neutral(text: str) -> None:
    assert classify_formality(text).value == "neutral"


def test_formality_details_name_the_cues_and_the_score() -> None:
    reading = classify_formality("yeah that's cool lol")
    assert reading.details[-1] == "score -6"
    assert any("text-speak 'lol'" in d for d in reading.details)
    assert any("lower-case sentence start" in d for d in reading.details)


def test_each_cue_family_counts_only_up_to_its_cap() -> None:
    cues = formality_cues("Please, please, please, please, please recommend something.")
    assert sum(w for name, w in cues if name.startswith("politeness")) == 1  # one distinct marker
    many = formality_cues("lol omg idk tbh btw imo thx")
    assert sum(w for name, w in many if name.startswith("text-speak")) == -8  # capped at 4 cues × -2


def test_abbreviations_and_hyphenated_words_are_not_text_speak() -> None:
    assert not [
        c for c in formality_cues("An R-rated thriller set in the U.S. please.") if "text-speak" in c[0]
    ]


def test_formality_bounds_are_configurable() -> None:
    text = "Could you recommend a comedy?"  # +1 politeness, +1 well-formed
    assert classify_formality(text).value == "formal"
    assert classify_formality(text, FormalityRules(formal_at=3)).value == "neutral"
    with pytest.raises(ValidationError):
        FormalityRules(formal_at=0)


# --- key points -----------------------------------------------------------------------------------


def test_one_key_point(domain: Domain) -> None:
    reading = RuleKeyPoints(domain).count("I want a comedy.")
    assert reading.value == 1
    assert reading.details == ("genre: comedy",)


def test_four_key_points_of_four_kinds(domain: Domain) -> None:
    reading = RuleKeyPoints(domain).count("Tonight with my kids I want a comedy with Tom Hanks.")
    assert reading.value == 4
    assert sorted(d.split(":")[0] for d in reading.details) == ["company", "genre", "person", "time"]


def test_greetings_and_thanks_carry_no_key_point(domain: Domain) -> None:
    assert RuleKeyPoints(domain).count("Hello, thank you so much!").value == 0


def test_company_words_are_not_counted_again_as_genres(domain: Domain) -> None:
    """'kids' would read as the children and family genres; as company it counts once."""
    reading = RuleKeyPoints(domain).count("Anything for the kids?")
    assert reading.details == ("company: for the kids",)


def test_a_phrase_naming_two_genres_counts_once(domain: Domain) -> None:
    reading = RuleKeyPoints(domain).count("Any romantic comedy?")
    assert reading.value == 1
    two = RuleKeyPoints(domain).count("A horror film or a western.")
    assert two.value == 2


def test_rich_request_counts_every_kind(domain: Domain) -> None:
    text = (
        "Is there anything with Meryl Streep from the 80s, maybe something highly rated and under two "
        "hours for movie night on Netflix with my parents?"
    )
    kinds = {d.split(":")[0] for d in RuleKeyPoints(domain).count(text).details}
    assert kinds == {"person", "period", "preference", "constraint", "occasion", "place", "company"}


def test_feedback_on_the_item_under_discussion_is_a_key_point(domain: Domain) -> None:
    item = next(iter(domain.items)).id
    counter = RuleKeyPoints(domain)
    assert counter.count("I have already seen it.", recommended=item).details == ("feedback: seen",)
    assert counter.count("What is it about?", recommended=item).details == ("question: plot",)


def test_without_a_domain_only_the_cue_patterns_count() -> None:
    reading = RuleKeyPoints(None).count("A comedy for tonight with my wife, under 2 hours.")
    assert sorted(reading.details) == ["company: with my wife", "constraint: under 2 hours", "time: tonight"]


def test_the_judge_knows_every_kind_the_rules_use() -> None:
    assert set(KIND_MEANINGS) == {*KEY_POINT_KINDS, "other"}


# --- measuring dialogues --------------------------------------------------------------------------


async def test_a_dialogue_is_measured_per_user_utterance_with_the_recommended_item_as_context(
    domain: Domain,
) -> None:
    item = next(iter(domain.items)).id
    dialogue = Dialogue(
        id="d1",
        simulator_id="sim",
        user_profile=UserProfile(persona={"sentence_length": " Short ", "formality": "FORMAL", "age": 30}),
        utterances=[
            Utterance(role=Role.CRS, text="Hello! What would you like?"),
            Utterance(role=Role.USER, text="lol a comedy pls"),
            Utterance(role=Role.CRS, text="How about this one?", recommended_items=[item]),
            Utterance(role=Role.USER, text="I have seen it already."),
        ],
    )
    measured = await measure_dialogue(dialogue, RuleMeasurer(domain), Thresholds())
    assert measured.pattern == {"sentence_length": "short", "formality": "formal"}
    assert [u.turn for u in measured.utterances] == [1, 2]
    first, second = measured.utterances
    assert (first.words, first.length, first.formality, first.key_points, first.richness) == (
        4,
        "short",
        "informal",
        1,
        "low",
    )
    assert second.key_points_found == ["feedback: seen"]


def test_persona_pattern_reads_only_the_pattern_keys() -> None:
    assert persona_pattern(Dialogue(id="x")) == {}
    profile = UserProfile(persona={"information_richness": "High", "formality": "", "mood": "happy"})
    assert persona_pattern(Dialogue(id="x", user_profile=profile)) == {"information_richness": "high"}


# --- distributions and entropy --------------------------------------------------------------------


def test_entropy_is_one_for_a_uniform_distribution_and_zero_for_a_single_category() -> None:
    assert normalized_entropy([5, 5, 5]) == pytest.approx(1.0)
    assert normalized_entropy([7, 0, 0]) == 0.0
    assert normalized_entropy([0, 0]) is None
    assert normalized_entropy([3]) is None


def test_entropy_of_a_skewed_distribution_by_hand() -> None:
    # p = (3/4, 1/4) over 2 categories: H = -(0.75 ln 0.75 + 0.25 ln 0.25) / ln 2
    expected = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25)) / math.log(2)
    assert normalized_entropy([3, 1]) == pytest.approx(expected)
    assert expected == pytest.approx(0.811278, abs=1e-6)


def _utterance(words: int, formality: str | None, key_points: int | None) -> UtteranceMeasures:
    thresholds = Thresholds()
    return UtteranceMeasures(
        dialogue_id="d",
        turn=1,
        text="x",
        words=words,
        length=thresholds.length_category(words),
        formality=formality,
        formality_error=None if formality else "unreadable answer",
        key_points=key_points,
        key_points_error=None if key_points is not None else "unreadable answer",
        richness=None if key_points is None else thresholds.richness_category(key_points),
    )


def test_a_distribution_counts_categories_and_errors_apart() -> None:
    utterances = [
        _utterance(5, "formal", 1),
        _utterance(30, "informal", 4),
        _utterance(50, None, None),
        _utterance(10, "informal", 0),
    ]
    length = distribution(utterances, Measure.LENGTH)
    assert length.counts == {"short": 2, "medium": 1, "long": 1}
    assert (length.n, length.errors, length.mean) == (4, 0, pytest.approx(23.75))
    formality = distribution(utterances, Measure.FORMALITY)
    assert formality.counts == {"informal": 2, "neutral": 0, "formal": 1}
    assert (formality.n, formality.errors) == (3, 1)
    assert formality.proportions["informal"] == pytest.approx(2 / 3)
    assert formality.mean == pytest.approx(-1 / 3)
    richness = distribution(utterances, Measure.RICHNESS)
    assert richness.counts == {"low": 2, "high": 1}
    assert richness.entropy == pytest.approx(normalized_entropy([2, 1]))


def test_every_public_name_of_the_package_resolves() -> None:
    import crsim.studies.language as analysis

    assert all(getattr(analysis, name) is not None for name in analysis.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        analysis.nothing  # noqa: B018
