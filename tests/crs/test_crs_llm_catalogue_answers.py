"""The `llm` CRS answers from the catalogue in any domain: the model sees every requestable value of the
items under discussion, and a request its message leaves unanswered is answered from the catalogue,
recorded in the reply's annotations and counted by `requests_answered`. Scripted models (plumbing)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from crsim.core.components import BuildContext
from crsim.crs.base import CRSReply, CRSSession
from crsim.crs.llm import LLMCRS
from crsim.domains import domain_named
from crsim.eval.metrics.requests import RequestsAnswered
from crsim.llm.client import LLMHub
from crsim.llm.config import CacheConfig, LLMSettings, ModelConfig
from crsim.llm.providers.scripted import ScriptedProvider
from crsim.llm.types import Message
from crsim.model import annotations as keys
from crsim.model.acts import Intent, parse_acts
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.domain import Domain

_FIRST = re.compile(r"^1\. (.+?) \(", re.M)


@pytest.fixture(scope="module")
def restaurants() -> Domain:
    return domain_named("restaurants")


def scripted(domain: Domain, messages: list[str], **args: Any) -> tuple[LLMCRS, ScriptedProvider]:
    """An `llm` CRS whose model first recommends candidate 1 by its title, then says `messages`."""
    settings = LLMSettings(
        default=ModelConfig(provider="scripted", replies=["-"]), cache=CacheConfig(mode="off")
    )
    llms = LLMHub(settings)
    provider = llms.role("crs").provider
    assert isinstance(provider, ScriptedProvider)
    queue = list(messages)

    def script(sent: list[Message], _generation: Any) -> str:
        if not provider.requests[:-1]:  # the first call: recommend the first candidate by its title
            title = _FIRST.search(sent[-1]["content"])
            assert title is not None
            return json.dumps({"recommend": [1], "message": f"You might like {title.group(1)}."})
        return json.dumps({"recommend": [], "message": queue.pop(0)})

    provider.script = script
    return LLMCRS(LLMCRS.Params.model_validate(args), BuildContext(domain, llms)), provider


ASK = "British food in the centre, please."
PHONE = "What's the phone number?"


async def two_turns(crs: LLMCRS) -> tuple[CRSReply, CRSReply]:
    session = CRSSession("d1", 1)
    await crs.start(session)
    return await crs.respond(session, ASK), await crs.respond(session, PHONE)


async def test_the_model_sees_every_requestable_value_of_the_item_under_discussion(
    restaurants: Domain,
) -> None:
    crs, provider = scripted(restaurants, ["It is lovely."], description_chars=60)
    first, _ = await two_turns(crs)
    item = restaurants.items[first.recommended_items[0]]
    (messages, _), *_ = provider.requests[1:]
    prompt = messages[-1]["content"]
    recent = prompt.split("Details of what you recommended last:")[1]
    for slot in restaurants.requestable:
        for value in item.values(slot.attribute):
            if len(value) <= 60:
                assert value in recent, slot.name
            else:  # a long text (a description) is cut as the plot is, at description_chars
                assert value[:30] in recent and value not in recent, slot.name
    assert item.values("phone") and item.values("address") and item.values("postcode")


async def test_an_ignored_phone_question_gets_the_catalogue_phone_and_the_record_says_so(
    restaurants: Domain,
) -> None:
    crs, _ = scripted(restaurants, ["It is a lovely place with a great atmosphere."])
    first, second = await two_turns(crs)
    item = restaurants.items[first.recommended_items[0]]
    phone = item.values("phone")[0]
    assert second.text.startswith("It is a lovely place with a great atmosphere. ")
    assert phone in second.text
    assert second.annotations[keys.ANSWERED_FROM_CATALOGUE.name] == [{"item": item.id, "slot": "phone"}]
    assert [a.slots for a in second.acts if a.intent == Intent.INFORM] == [[("phone", phone)]]

    # `requests_answered` counts the appended answer; the model's words alone answered nothing
    def dialogue(answer: str) -> Dialogue:
        return Dialogue(
            id="d1",
            utterances=[
                Utterance(role=Role.USER, text=ASK, acts=parse_acts('disclose(food="british")')),
                Utterance(role=Role.CRS, text=first.text, recommended_items=first.recommended_items),
                Utterance(role=Role.USER, text=PHONE, acts=parse_acts("inquire(phone)")),
                Utterance(role=Role.CRS, text=answer),
            ],
        )

    metric = RequestsAnswered(None, BuildContext(domain=restaurants))
    assert metric.score(dialogue(second.text)) == 1.0
    assert metric.score(dialogue("It is a lovely place with a great atmosphere.")) == 0.0


async def test_an_answered_question_is_left_as_the_model_said_it(restaurants: Domain) -> None:
    probe, _ = scripted(restaurants, [])
    item = restaurants.items[(await probe.respond(CRSSession("d1", 1), ASK)).recommended_items[0]]
    phone = item.values("phone")[0]
    crs, _ = scripted(restaurants, [f"Sure, call them on {phone}."])
    _, second = await two_turns(crs)
    assert second.text == f"Sure, call them on {phone}."
    assert keys.ANSWERED_FROM_CATALOGUE.name not in second.annotations
