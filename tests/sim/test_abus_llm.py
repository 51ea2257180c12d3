"""`abus` with `nlu: llm` and `nlg: llm`: prompts, grammar, item linking, repair and errors, whole dialogues.

All but one test use the scripted provider, which records every request; the last one runs a single
turn through the real local model (SmolLM2-135M) under the acts grammar and checks structure only.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from crsim.core.components import BuildContext
from crsim.core.errors import ConfigError
from crsim.core.seeding import derive_seed
from crsim.crs.base import CRSReply, CRSSession
from crsim.crs.popular import PopularCRS
from crsim.domains.movielens import movie_domain
from crsim.language.domain_cues import prompt_words
from crsim.llm import LLM, LLMHub, LLMOutputError, LLMSettings, ModelConfig
from crsim.llm.config import CacheConfig
from crsim.llm.grammar import acts_grammar
from crsim.llm.providers.scripted import ScriptedProvider
from crsim.llm.types import Message, ResolvedGeneration
from crsim.model.acts import DialogueAct, Intent, parse_acts
from crsim.model.dialogue import Role, TerminationReason
from crsim.model.domain import Domain
from crsim.model.user import InformationNeed, SimulatedUser, UserProfile
from crsim.runner.loop import run_dialogue
from crsim.sim.agenda.iard_examples import EXAMPLE_FILES, Side, build_iard_examples, iard_acts, load_examples
from crsim.sim.agenda.llm_nlg import LLMNLG
from crsim.sim.agenda.llm_nlu import CRS_INTENTS, LLMNLU, MAX_ACTS, crs_slots
from crsim.sim.agenda.simulator import AgendaBasedSimulator
from crsim.sim.base import UserTurn, simulator_registry
from crsim.sim.shared.nlg import NLGContext
from support import needs_local_model

IARD_GOLD = Path(__file__).parents[1] / "fixtures" / "iard" / "formatted_IARD_annotated_gold.json.gz"
IARD_RECOMMENDER_LABELS = {
    "REQ",
    "CLA",
    "REC-S",
    "REC-E",
    "EXP-I",
    "EXP-P",
    "EXP-S",
    "R-ANS",
    "RESP",
    "OTH",
    "END",
}
HEAT, RONIN, MATRIX, LOVE_ACTUALLY = "6", "2278", "2571", "6942"
#: A sci-fi fan who dislikes romance (MovieLens 0.5-5 ratings).
SCIFI_FAN = {
    "6365": 5.0,
    "6934": 5.0,
    "1240": 5.0,
    "589": 5.0,
    "1214": 4.5,
    "541": 5.0,
    "1721": 1.5,
    "8533": 1.0,
}

Script = Any


def movie_words() -> dict[str, str]:
    """The words the prompts name movies with (the movie domain's `understanding.prompt_verbs`)."""
    return prompt_words(movie_domain())


def scripted(replies: list[str] | Script) -> tuple[LLM, ScriptedProvider]:
    provider = (
        ScriptedProvider.from_replies(replies) if isinstance(replies, list) else ScriptedProvider(replies)
    )
    return LLM("user", ModelConfig(provider="scripted"), provider), provider


class OneModelHub(LLMHub):
    """A hub whose every role is one given client (so a test can script the answers by prompt)."""

    def __init__(self, llm: LLM) -> None:
        super().__init__(LLMSettings(cache=CacheConfig(mode="off")))
        self.llm = llm

    def role(self, name: str) -> LLM:
        return self.llm


def make_user(
    constraints: dict[str, Any] | None = None, targets: list[str] | None = None, **profile: Any
) -> SimulatedUser:
    profile.setdefault("item_ratings", SCIFI_FAN)
    need = InformationNeed(constraints=constraints or {}, targets=targets or [])
    return SimulatedUser(id="u1", profile=UserProfile(**profile), need=need)


def make_sim(domain: Domain, llm: LLM, seed: int = 0, **params: Any) -> AgendaBasedSimulator:
    params.setdefault("opening_disclosure_prob", 0.0)
    params.setdefault("nlu", "llm")
    return AgendaBasedSimulator(
        AgendaBasedSimulator.Params(**params), BuildContext(domain, OneModelHub(llm), seed)
    )


def prompt_of(provider: ScriptedProvider, index: int = 0) -> str:
    return provider.requests[index][0][0]["content"]


def acts_text(turn: UserTurn) -> list[str]:
    return [str(a) for a in turn.acts]


# --- the shipped IARD examples ---------------------------------------------------------------------


def test_shipped_examples_are_the_documented_selection_of_the_iard_gold_file() -> None:
    cases: list[tuple[Side, int]] = [("crs", 4), ("user", 3)]
    for side, per_label in cases:
        rebuilt = build_iard_examples(IARD_GOLD, side, per_label=per_label)
        assert rebuilt == load_examples(EXAMPLE_FILES[side]), side


def test_nlu_examples_cover_every_recommender_label_with_policy_intents(domain: Domain) -> None:
    shipped = load_examples("iard_nlu_examples.json")
    assert 30 <= len(shipped.examples) <= 60
    assert {label for e in shipped.examples for label in e.labels} == IARD_RECOMMENDER_LABELS
    intents = {a.intent for e in shipped.examples for a in e.parsed()}
    assert intents <= set(CRS_INTENTS)
    assert {Intent.GREETING, Intent.ELICIT, Intent.RECOMMEND, Intent.INFORM, Intent.GOODBYE} <= intents
    assert {s for e in shipped.examples for a in e.parsed() for s, _ in a.slots} <= set(crs_slots(domain))
    # the first examples already cover the labels: a short prompt still shows each kind of act
    assert {label for e in shipped.examples[:11] for label in e.labels} == IARD_RECOMMENDER_LABELS
    assert "Apache-2.0" in shipped.licence and "CC BY 4.0" in shipped.licence


def iard(*acts: tuple[str, list[tuple[str, str | None]]]) -> list[dict[str, Any]]:
    return [{"intent": i, "slot_values": [[s, v, None, None] for s, v in slots]} for i, slots in acts]


def test_iard_labels_map_to_the_intents_the_policy_reads() -> None:
    def mapped(text: str, annotated: list[dict[str, Any]]) -> list[str]:
        return [str(a) for a in iard_acts(text, annotated, "crs")]

    greet = mapped("Hi, what kind of movies do you like?", iard(("OTH", []), ("REQ", [("GENRE", None)])))
    assert greet == ["greeting()", "elicit(genre)"]
    assert mapped("lol ok", iard(("OTH", []))) == ["other()"]
    assert mapped("Before the 70s?", iard(("CLA", [("YEAR", "70s")]))) == ["elicit(decade)"]
    assert mapped("Favourite movies?", iard(("REQ", [("TITLE", None)]))) == ["elicit()"]
    rec = iard(("REC-S", [("TITLE", "Elf"), ("ACTOR", "Will Ferrell"), ("TITLE", "Home Alone")]))
    assert mapped("Elf (2003) or Home Alone (1990)", rec) == [
        'recommend(title="Elf")',
        'recommend(title="Home Alone")',
    ]
    answer = iard(("R-ANS", [("PLOT", "a heist"), ("KEYWORDS", "tense"), ("RATING", "9")]))
    assert mapped("It's about a heist, very tense", answer) == ['inform(plot="a heist",keyword="tense")']
    assert mapped("Bye now", iard(("END", []))) == ["goodbye()"]
    with pytest.raises(KeyError, match="XYZ"):
        iard_acts("text", iard(("XYZ", [])), "crs")


# --- nlu: llm --------------------------------------------------------------------------------------


async def test_elicitation_read_by_the_llm_gets_a_disclosure(domain: Domain) -> None:
    llm, provider = scripted(["elicit(genre)"])
    sim = make_sim(domain, llm)
    await sim.start(make_user({"genre": "sci-fi"}))
    assert provider.requests == []  # no CRS greeting: nothing to understand
    turn = await sim.respond(CRSReply("So, what are you in the mood for tonight?"))
    assert acts_text(turn) == ['disclose(genre="sci-fi")']
    assert turn.annotations["understood"] == "elicit(genre)"
    assert turn.annotations["nlu_raw"] == "elicit(genre)"
    assert "So, what are you in the mood for tonight?" in prompt_of(provider)


async def test_recommendation_read_by_the_llm_is_linked_and_accepted(domain: Domain) -> None:
    llm, _ = scripted(['recommend(title="Ronin")|inform(actor="Robert De Niro")'])
    sim = make_sim(domain, llm)
    await sim.start(make_user({"genre": "crime"}, targets=[RONIN]))
    turn = await sim.respond(CRSReply("Ronin (1998) is a tense heist movie with Robert De Niro."))
    assert turn.annotations["understood"] == (
        'recommend(title="Ronin (1998)",item="2278")|inform(actor="Robert De Niro")'
    )
    assert acts_text(turn) == ['accept(title="Ronin (1998)")', "goodbye()"] and turn.end


async def test_recommendation_read_by_the_llm_is_rejected(domain: Domain) -> None:
    llm, _ = scripted(['recommend(title="Love Actually")'])
    sim = make_sim(domain, llm)
    await sim.start(make_user())
    turn = await sim.respond(CRSReply("Have you seen Love Actually (2003)?"))
    assert acts_text(turn) == ['reject(title="Love Actually (2003)")', "request_recommendation()"]
    assert turn.annotations["judged"][LOVE_ACTUALLY]["decision"] == "reject"


async def test_titles_the_text_does_not_contain_are_dropped_and_recorded(domain: Domain) -> None:
    llm, _ = scripted(['recommend(title="The Matrix")'])
    sim = make_sim(domain, llm)
    await sim.start(make_user({"genre": "sci-fi"}))
    turn = await sim.respond(CRSReply("I have a great one for you, trust me."))
    assert turn.annotations["understood"] == ""
    assert turn.annotations["nlu_unlinked_titles"] == ["The Matrix"]
    assert "judged" not in turn.annotations  # no recommendation round


async def test_untitled_recommendation_takes_the_linked_items_but_not_the_focus(domain: Domain) -> None:
    llm, _ = scripted(["recommend()"])
    nlu = LLMNLU(llm, domain, seed=1)
    result = await nlu.understand("Like Heat (1995), Ronin (1998) is great.", [HEAT])
    assert [str(a) for a in result.acts] == [f'recommend(title="Ronin (1998)",item="{RONIN}")']
    titled = await LLMNLU(scripted(['recommend(title="Heat")'])[0], domain, seed=1).understand(
        "Heat (1995) was directed by Michael Mann.", [HEAT]
    )
    assert titled.acts == [] and "nlu_unlinked_titles" not in titled.notes  # the focus is no new item


async def test_elicitations_keep_informable_slots_only(domain: Domain) -> None:
    llm, _ = scripted(["elicit(title)|elicit(genre,year)"])
    result = await LLMNLU(llm, domain, seed=1).understand("Name a movie you liked, or a genre?", [])
    assert [str(a) for a in result.acts] == ["elicit()", "elicit(genre)"]


async def test_prompt_has_the_few_shot_examples_intents_slots_and_focus(domain: Domain) -> None:
    llm, provider = scripted(["other()"])
    nlu = LLMNLU(llm, domain, seed=1, examples=7)
    await nlu.understand("Nice choice!", [MATRIX])
    prompt = prompt_of(provider)
    shipped = load_examples("iard_nlu_examples.json").examples
    for example in shipped[:7]:
        assert f"Message: {example.text}\nActs: {example.acts}" in prompt
    assert shipped[7].text not in prompt
    assert prompt.count("Message: ") == 8 and prompt.rstrip().endswith("Message: Nice choice!\nActs:")
    assert all(f"- {intent}: " in prompt for intent in CRS_INTENTS)
    assert "The Matrix (1999)" in prompt


async def test_grammar_seed_and_temperature_go_to_the_provider(domain: Domain) -> None:
    llm, provider = scripted(["other()"])
    nlu = LLMNLU(llm, domain, seed=42)
    await nlu.understand("Okay.", [])
    await nlu.understand("Alright.", [])
    generations = [g for _, g in provider.requests]
    assert generations[0].grammar == acts_grammar(CRS_INTENTS, crs_slots(domain), max_acts=MAX_ACTS)
    assert "recommend" in (generations[0].grammar or "")
    assert [g.seed for g in generations] == [derive_seed(42, "nlu", n) % 2**31 for n in (1, 2)]
    assert generations[0].temperature == 0.0
    llm, provider = scripted(["other()"])
    await LLMNLU(llm, domain, seed=42, constrain=False).understand("Okay.", [])
    assert provider.requests[0][1].grammar is None


async def test_unreadable_acts_are_repaired_once_then_an_error_keeping_the_raw_text(domain: Domain) -> None:
    llm, provider = scripted(["I think the user wants a comedy", "no idea, sorry"])
    nlu = LLMNLU(llm, domain, seed=1)
    with pytest.raises(LLMOutputError) as caught:
        await nlu.understand("What genre do you like?", [])
    assert caught.value.raw == "no idea, sorry"
    assert len(provider.requests) == 2
    repair = provider.requests[1][0]
    assert repair[1] == {"role": "assistant", "content": "I think the user wants a comedy"}
    assert "could not be read" in repair[2]["content"]


async def test_unknown_intents_without_grammar_are_repaired(domain: Domain) -> None:
    llm, provider = scripted(["request_info(genre)", "elicit(genre)"])
    result = await LLMNLU(llm, domain, seed=1, constrain=False).understand("What genre do you like?", [])
    assert [str(a) for a in result.acts] == ["elicit(genre)"]
    assert result.notes == {"nlu_raw": "elicit(genre)", "nlu_repaired": True}
    assert "unknown intent 'request_info'" in provider.requests[1][0][2]["content"]
    llm, _ = scripted(["elicit(budget)"])
    with pytest.raises(LLMOutputError, match="unknown slot 'budget'"):
        await LLMNLU(llm, domain, seed=1, constrain=False).understand("What is your budget?", [])


async def test_empty_crs_text_costs_no_call(domain: Domain) -> None:
    llm, provider = scripted(["other()"])
    result = await LLMNLU(llm, domain, seed=1).understand("   ", [])
    assert result.acts == [] and provider.requests == []


# --- nlg: llm --------------------------------------------------------------------------------------


async def test_nlg_prompt_has_the_acts_and_titles_and_the_answer_is_the_utterance() -> None:
    llm, provider = scripted(['User: "Not Titanic (1997), I have seen it. Something else?"'])
    nlg = LLMNLG(llm, seed=3, style="impatient", words=movie_words())
    acts = parse_acts('seen(title="Titanic (1997)",liked="no")|request_recommendation()')
    context = NLGContext(crs_text="How about Titanic (1997)?", persona={"age": "30s"})
    result = await nlg.realize(acts, context)
    assert result.text == "Not Titanic (1997), I have seen it. Something else?"
    assert result.notes["nlg_raw"].startswith("User:")
    prompt = prompt_of(provider)
    assert 'seen(title="Titanic (1997)",liked="no")|request_recommendation()' in prompt
    assert "already seen Titanic (1997) and did not like it" in prompt
    assert "exactly as given: Titanic (1997)" in prompt
    assert "impatient" in prompt and "age: 30s" in prompt and "How about Titanic (1997)?" in prompt
    assert provider.requests[0][1].seed == derive_seed(3, "nlg", 1) % 2**31


async def test_nlg_names_the_item_an_inquiry_is_about_and_notes_missing_titles() -> None:
    llm, provider = scripted(["What is it about?"])
    result = await LLMNLG(llm, seed=1, words=movie_words()).realize(
        parse_acts("inquire(plot)"), NLGContext(focus_title="Heat (1995)")
    )
    assert "Ask what Heat (1995) is about." in prompt_of(provider)
    assert result.notes == {"nlg_missing_titles": ["Heat (1995)"]}


async def test_nlg_goodbye_after_giving_up_says_so() -> None:
    llm, provider = scripted(["Nothing fits, bye."])
    context = NLGContext(annotations={"outcome": "patience"})
    await LLMNLG(llm, seed=1, words=movie_words()).realize(parse_acts("goodbye()"), context)
    assert "nothing suited you" in prompt_of(provider)


async def test_empty_generation_is_an_error_after_one_repair() -> None:
    llm, provider = scripted(["  \n ", '""'])
    with pytest.raises(LLMOutputError, match="empty"):
        await LLMNLG(llm, seed=1, words=movie_words()).realize(parse_acts("greeting()"), NLGContext())
    assert len(provider.requests) == 2


# --- the simulator ---------------------------------------------------------------------------------


def test_llm_roles_and_params() -> None:
    cls = AgendaBasedSimulator
    assert cls.needs_llm is True
    assert cls.llm_roles(cls.Params()) == []
    assert cls.llm_roles(cls.Params(nlu="llm")) == ["user"]
    assert cls.llm_roles(cls.Params(nlg="llm", role="sim")) == ["sim"]
    params = simulator_registry.params("abus", {"nlu": "llm", "nlg": "llm", "constrain": False})
    assert params.constrain is False  # type: ignore[attr-defined]
    with pytest.raises(ConfigError):
        simulator_registry.params("abus", {"nlu": "neural"})


def test_an_llm_part_without_models_is_a_config_error(domain: Domain) -> None:
    for part in ("nlu", "nlg"):
        with pytest.raises(ConfigError, match=f"{part}: llm"):
            AgendaBasedSimulator(AgendaBasedSimulator.Params(**{part: "llm"}), BuildContext(domain, seed=0))
    AgendaBasedSimulator(
        AgendaBasedSimulator.Params(), BuildContext(domain, seed=0)
    )  # rules and templates need none


def fake_model(domain: Domain) -> Script:
    """Answers NLU prompts by reading the CRS message and NLG prompts by wording the listed acts."""

    def nlu(text: str) -> str:
        low = text.lower()
        if re.search(r"\b(bye|enjoy)\b", low):
            return "goodbye()"
        titles = [domain.items[m.item_id].title for m in domain.items.linker.link(text)]
        if titles:
            return "|".join(f'recommend(title="{t}")' for t in titles)
        if "?" in text and re.search(r"genre|kind|mood", low):
            return "greeting()|elicit(genre)" if low.startswith("hi") else "elicit(genre)"
        return "ask()" if "?" in text else "other()"

    def nlg(acts: list[DialogueAct]) -> str:
        words = {
            "greeting": "Hi!",
            "request_recommendation": "Can you recommend a movie?",
            "goodbye": "Thanks, bye!",
        }
        out = []
        for act in acts:
            title, value = act.value("title"), act.slots[0][1] if act.slots else None
            if act.intent == Intent.DISCLOSE:
                out.append(f"I'd like a {value} movie." if value else "I don't mind.")
            elif act.intent in (Intent.ACCEPT, Intent.REJECT, Intent.SEEN):
                out.append(
                    {"accept": "Great, I'll watch", "reject": "I don't want", "seen": "I've seen"}[act.intent]
                    + f" {title}."
                )
            else:
                out.append(words.get(act.intent, "Okay."))
        return "User: " + " ".join(out)

    def answer(messages: list[Message], _generation: ResolvedGeneration) -> str:
        prompt = messages[0]["content"]
        if prompt.startswith("You label messages"):
            return nlu(prompt.rsplit("Message: ", 1)[1].removesuffix("\nActs:"))
        listed = re.search(r"^\(As dialogue acts: (.*)\)$", prompt, re.M)
        assert listed is not None, prompt
        return nlg(parse_acts(listed.group(1)))

    return answer


async def test_whole_dialogue_with_llm_nlu_and_nlg_against_the_popular_crs(domain: Domain) -> None:
    llm, provider = scripted(fake_model(domain))
    sim = make_sim(domain, llm, seed=3, nlg="llm")
    crs = PopularCRS(PopularCRS.Params(), BuildContext(domain))
    user = make_user({"genre": "sci-fi"})
    dialogue = await run_dialogue(
        sim, crs, user, dialogue_id="d1", session=CRSSession("d1", 3), items=domain.items
    )
    assert dialogue.termination is not None and dialogue.termination.error is None
    assert dialogue.termination.reason == TerminationReason.USER_ENDED
    users = [u for u in dialogue.utterances if u.role == Role.USER]
    first, last = users[0], users[-1]
    assert first.text == "Hi! I'd like a sci-fi movie."  # the greeting's elicit answered, NLG output used
    assert first.annotations["understood"] == "greeting()|elicit(genre)"
    assert last.has_intent(Intent.ACCEPT) and last.has_intent(Intent.GOODBYE)
    accepted = last.acts[0].value("title")
    assert last.text == f"Great, I'll watch {accepted}. Thanks, bye!"
    assert 'recommend(title="' in last.annotations["understood"] and "item=" in last.annotations["understood"]
    # each user utterance cost one NLU call (on the CRS text before it) and one NLG call
    assert all(len(u.llm_calls) == 2 and {c.role for c in u.llm_calls} == {"user"} for u in users)
    assert len(provider.requests) == 2 * len(users)
    assert dialogue.llm_usage is not None


async def test_unreadable_acts_end_the_dialogue_with_an_error_keeping_the_raw_answer(domain: Domain) -> None:
    llm, _ = scripted(["the recommender greets the user"])
    sim = make_sim(domain, llm)
    crs = PopularCRS(PopularCRS.Params(), BuildContext(domain))
    dialogue = await run_dialogue(sim, crs, make_user(), dialogue_id="d2", session=CRSSession("d2", 1))
    assert dialogue.termination is not None
    assert dialogue.termination.reason == TerminationReason.USER_ERROR
    error = dialogue.termination.error
    assert error is not None and error.source == "user" and error.type == "LLMOutputError"
    assert "the recommender greets the user" in error.message
    assert [u.role for u in dialogue.utterances] == [Role.CRS]  # nothing made up for the user


# --- the real local model ------------------------------------------------------------------------


@needs_local_model
async def test_one_turn_with_the_local_model_under_the_grammar(domain: Domain) -> None:
    hub = LLMHub(
        LLMSettings(default=ModelConfig(provider="local", max_tokens=48), cache=CacheConfig(mode="off"))
    )
    try:
        params = AgendaBasedSimulator.Params(nlu="llm", nlu_examples=4, opening_disclosure_prob=0.0)
        sim = AgendaBasedSimulator(params, BuildContext(domain, hub, 5))
        await sim.start(make_user({"genre": "sci-fi"}))
        turn = await sim.respond(CRSReply("Which genre do you enjoy?"))
    finally:
        await hub.aclose()
    understood = parse_acts(turn.annotations["understood"])
    assert understood, turn.annotations
    assert {a.intent for a in understood} <= set(CRS_INTENTS)
    assert {s for a in understood for s, _ in a.slots} <= set(crs_slots(domain)) | {"item"}
    assert turn.acts and turn.text
