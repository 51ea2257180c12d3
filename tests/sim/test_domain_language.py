"""Language that fits any noun and any catalogue (issue 34, item 3).

a/an and plurals for any item noun; an alternatives question gets a choice or "no preference",
never a bare yes; goals never ask about a slot they constrain; a value two slots share goes to the
slot the user named; `popular` says how it ranks; no movie words outside movies (describe texts,
the `llm` CRS's prompt, its option names, the `gcdf1` goal domain); answers carry units.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
from pydantic import ValidationError

from catalogues import awkward_domain
from crsim.core.components import BuildContext
from crsim.crs.base import CRSReply, CRSSession
from crsim.crs.llm import LLMCRS
from crsim.crs.nlg import sentences_for
from crsim.crs.popular import PopularCRS
from crsim.crs.retrieval import RetrievalCRS
from crsim.domains import domain_named
from crsim.language.crs_text import RuleNLU
from crsim.language.understanding import Context, understand
from crsim.model.acts import DialogueAct, Intent
from crsim.model.dialogue import Dialogue, Utterance
from crsim.model.domain import Domain, indefinite, plural
from crsim.model.user import InformationNeed, SimulatedUser, UserProfile
from crsim.sim.agenda.simulator import AgendaBasedSimulator
from crsim.sim.shared.nlg import DomainWords, NLGContext, TemplateNLG, load_templates
from crsim.studies.gcdf1.evaluator import Gcdf1Evaluator
from crsim.users.goals import build_goal_population
from crsim.users.population import PopulationConfig


@pytest.fixture(scope="module")
def awkward(tmp_path_factory: pytest.TempPathFactory) -> Domain:
    return awkward_domain(tmp_path_factory.mktemp("awkward"), count=60, seed=5)


# --- nouns ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [
        ("attraction", "an attraction"),
        ("hotel", "a hotel"),
        ("hour", "an hour"),
        ("university", "a university"),
        ("European car", "a European car"),
        ("MP3 player", "an MP3 player"),
        ("8-cylinder car", "an 8-cylinder car"),
        ("umbrella", "an umbrella"),
    ],
)
def test_indefinite_article(phrase: str, expected: str) -> None:
    assert indefinite(phrase) == expected


@pytest.mark.parametrize(
    ("noun", "expected"),
    [
        ("attraction", "attractions"),
        ("city", "cities"),
        ("bus", "buses"),
        ("day", "days"),
        ("wine glass", "wine glasses"),
    ],
)
def test_plural(noun: str, expected: str) -> None:
    assert plural(noun) == expected


def test_no_a_before_a_vowel_noun_in_any_generic_sentence(awkward: Domain) -> None:
    templates = load_templates("generic")
    words = DomainWords.of(awkward)
    texts = set()
    acts = [
        DialogueAct(intent=Intent.REQUEST_RECOMMENDATION),
        DialogueAct(intent=Intent.DISCLOSE, slots=[("type", "museum")]),
        DialogueAct(intent=Intent.DISCLOSE, slots=[("rooms", "8")]),
    ]
    for seed in range(40):
        nlg = TemplateNLG(templates, random.Random(seed), words)
        texts.update(nlg.generate([a], NLGContext()) for a in acts)
    said = " ".join(texts)
    assert "an attraction" in said and "a attraction" not in said
    rng = random.Random(0)
    greetings = {sentences_for(awkward).greeting(rng) for _ in range(20)}
    assert any("an attraction" in g for g in greetings) and not any("a attraction" in g for g in greetings)


# --- alternatives questions ----------------------------------------------------------------------


def _user(constraints: dict[str, str]) -> SimulatedUser:
    need = InformationNeed(constraints=constraints, requests=[], targets=["a1"])
    return SimulatedUser(id="u", profile=UserProfile(persona={"source": "goals"}), need=need)


async def _answer(domain: Domain, user: SimulatedUser, question: str) -> tuple[str, list[DialogueAct]]:
    params = AgendaBasedSimulator.Params(opening_disclosure_prob=0.0)
    sim = AgendaBasedSimulator(params, BuildContext(domain, seed=1))
    await sim.start(user)
    turn = await sim.respond(CRSReply(text=question))
    return turn.text, turn.acts


def test_an_alternatives_question_is_read_as_one(awkward: Domain) -> None:
    acts = RuleNLU(awkward).parse("Would you rather go indoors, outdoors or on the water?", [])
    assert [a.intent for a in acts] == [Intent.ASK] and acts[0].value("alternatives")


async def test_an_alternatives_question_gets_no_preference_not_yes(awkward: Domain) -> None:
    text, acts = await _answer(
        awkward, _user({"area": "north"}), "Would you rather go indoors, outdoors or on the water?"
    )
    assert [a.intent for a in acts] == [Intent.DISCLOSE] and acts[0].slots[0][1] is None
    assert not text.lower().startswith(("yes", "sure"))


async def test_an_alternatives_question_naming_the_wanted_value_gets_it(awkward: Domain) -> None:
    text, acts = await _answer(
        awkward, _user({"type": "museum"}), "Would you like a museum, a park or a gallery?"
    )
    assert acts[0].intent == Intent.DISCLOSE and acts[0].slots == [("type", "museum")]
    assert "museum" in text and not text.lower().startswith("yes")


async def test_a_domain_question_elicits_its_slot() -> None:
    hotels = domain_named("hotels")
    acts = RuleNLU(hotels).parse("Do you need parking?", [])
    assert acts == [DialogueAct(intent=Intent.ELICIT, slots=[("parking", None)])]


# --- goals and shared values -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["restaurants", "hotels", "awkward"])
def test_goals_never_request_a_slot_they_constrain(name: str, awkward: Domain) -> None:
    domain = awkward if name == "awkward" else domain_named(name)
    users = build_goal_population(PopulationConfig(size=200), domain, seed=3)
    for user in users:
        constrained = {domain.attribute(s) for s in user.need.constraints}
        assert not constrained & {domain.attribute(s) for s in user.need.requests}, user.need
    assert any(user.need.requests for user in users)


@pytest.mark.parametrize(
    ("text", "context", "expected"),
    [
        ("I'd like the entrance to be free.", None, {"entrance": ["free"]}),
        ("For the price range, free would be great.", None, {"pricerange": ["free"]}),
        ("free", "pricerange", {"pricerange": ["free"]}),
        ("free", "entrance", {"entrance": ["free"]}),
    ],
)
def test_a_shared_value_goes_to_the_slot_named(
    awkward: Domain, text: str, context: str | None, expected: dict[str, list[str]]
) -> None:
    assert understand(text, awkward, Context(elicited=context)).likes == expected


# --- popular says how it ranks -------------------------------------------------------------------


async def _ask_about_first(crs: PopularCRS, opening: str) -> tuple[list[str], str]:
    session = CRSSession(id="s", seed=0)
    await crs.start(session)
    rec = await crs.respond(session, opening)
    answer = await crs.respond(session, "What is the phone number of it?")
    return rec.recommended_items, answer.text


async def test_popular_without_ratings_says_it_keeps_catalogue_order(awkward: Domain) -> None:
    items, answer = await _ask_about_first(
        PopularCRS(PopularCRS.Params(max_questions=0), BuildContext(awkward)), "I want a museum"
    )
    assert "popular" not in answer and "in the order of my list" in answer
    museums = [i.id for i in awkward.items if i.values("type") == ["museum"]]
    assert items == museums[:1]  # catalogue order among the matches


async def test_popular_ranks_by_a_declared_field_and_says_so(awkward: Domain) -> None:
    ranked = dataclasses.replace(awkward, popularity="rating")
    items, answer = await _ask_about_first(
        PopularCRS(PopularCRS.Params(max_questions=0), BuildContext(ranked)), "I want a museum"
    )
    assert "by their rating, highest first" in answer
    museums = [i for i in ranked.items if i.values("type") == ["museum"]]
    assert int(ranked.items[items[0]].values("rating")[0]) == max(int(i.values("rating")[0]) for i in museums)


def test_a_declared_popularity_field_must_hold_numbers(tmp_path: Path) -> None:
    from crsim.domains.loader import check_domain_file

    domain = awkward_domain(tmp_path, count=20)
    assert domain.source is not None
    text = domain.source.read_text(encoding="utf-8").replace(
        "item_noun: attraction", "item_noun: attraction\npopularity: area"
    )
    domain.source.write_text(text, encoding="utf-8")
    problems = check_domain_file(domain.source).problems
    assert any("popularity" in p and "non-numeric" in p for p in problems), problems


# --- units and movie words -----------------------------------------------------------------------


async def test_answers_carry_the_unit(awkward: Domain) -> None:
    crs = RetrievalCRS(RetrievalCRS.Params(max_questions=0), BuildContext(awkward))
    session = CRSSession(id="s", seed=0)
    await crs.start(session)
    rec = await crs.respond(session, "I want a museum")
    item = awkward.items[rec.recommended_items[0]]
    answer = await crs.respond(session, "What is the entrance fee of it?")
    assert f"{item.values('fee')[0]} pounds" in answer.text


def test_popular_describes_itself_without_movie_words() -> None:
    assert PopularCRS.__doc__ is not None
    for word in ("movie", "film", "genre", "most-rated"):
        assert word not in PopularCRS.__doc__.lower()


def test_llm_crs_prompt_names_the_domains_facts(awkward: Domain) -> None:
    from crsim.crs.llm import LLMCRSState

    class _Hub:
        def role(self, name: str) -> object:
            return object()

    crs = LLMCRS(LLMCRS.Params(), BuildContext(domain=awkward, llms=_Hub()))  # type: ignore[arg-type]
    state = LLMCRSState()
    state.messages.append({"role": "user", "content": "a museum in the north"})
    system, *_ = crs._messages(state, crs._candidates(state))
    assert "genres" not in system["content"] and "plot" not in system["content"]
    assert "entrance fee" in system["content"]


def test_llm_crs_old_option_name_is_a_clear_error() -> None:
    with pytest.raises(ValidationError, match="description_chars"):
        LLMCRS.Params.model_validate({"plot_chars": 60})


def test_gcdf1_goal_domain_is_the_runs_domain() -> None:
    dialogue = Dialogue(
        id="d",
        utterances=[Utterance(role="user", text="hi", acts=[DialogueAct(intent=Intent.GREETING)])],
        metadata={"domain": "restaurants"},
    )
    assert Gcdf1Evaluator(Gcdf1Evaluator.Params()).domain_of(dialogue) == "restaurants"
    assert Gcdf1Evaluator(Gcdf1Evaluator.Params(domain="movie")).domain_of(dialogue) == "movie"
