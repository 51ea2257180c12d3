"""The `llm` CRS's generation-time guards beyond repeats: a draft in the seeker's voice, or one whose
claims about its item the catalogue contradicts, is asked again once (what happened annotated), and a
retry that slips again is replaced by the reply composed from the catalogue. Scripted model, shipped
restaurants (the wording of the 16 restaurant dialogues read for the issue)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from crsim.crs.base import CRSSession
from crsim.domains import domain_named
from crsim.llm.types import Message
from crsim.model.domain import Domain
from test_crs_llm import answer, scripted_crs

#: "1. Midsummer House Restaurant (food: british; area: centre; ..." in the turn prompt.
_CANDIDATE = re.compile(r"^(\d+)\. (.+?) \(food: ([^;]+); area: (\w+);", re.M)
_AREAS = ("centre", "north", "south", "east", "west")


@pytest.fixture(scope="module")
def restaurants() -> Domain:
    return domain_named("restaurants")


def first_candidate(messages: list[Message]) -> tuple[str, str, str]:
    """(title, food, area) of candidate 1 in the last turn prompt among `messages`."""
    turn = next(m["content"] for m in reversed(messages) if "Candidates for your reply" in m["content"])
    number, title, food, area = _CANDIDATE.findall(turn)[0]
    assert number == "1"
    return title, food, area


def elsewhere(area: str) -> str:
    return next(a for a in _AREAS if a != area)


async def test_a_draft_speaking_as_the_seeker_is_asked_again(restaurants: Domain) -> None:
    def script(messages: list[Message], _generation: Any) -> str:
        title, food, _ = first_candidate(messages)
        if "speaks as the user" in messages[-1]["content"]:
            return answer([1], f"{title} serves {food} food; you could try it.")
        return answer([1], "I'm looking for a cheap Italian place. Can you help?")

    crs, provider = scripted_crs(restaurants, script)
    reply = await crs.respond(CRSSession("d1", 1), "I want a restaurant in the centre.")
    assert len(provider.requests) == 2
    assert reply.annotations["role_flip"] == "I'm looking for a"
    assert reply.annotations["first_message"].startswith("I'm looking for")
    assert reply.annotations["agreement"] == "reasked" and "looking for" not in reply.text
    assert reply.recommended_items == [reply.annotations["candidates"][0]]


async def test_a_draft_contradicting_its_item_is_asked_again_then_composed(restaurants: Domain) -> None:
    def contradicts(messages: list[Message], _generation: Any) -> str:
        title, food, area = first_candidate(messages)
        return answer([1], f"{title} serves {food} food and it is in the {elsewhere(area)}.")

    crs, provider = scripted_crs(restaurants, contradicts)
    reply = await crs.respond(CRSSession("d1", 1), "I want a restaurant in the centre.")
    item = restaurants.items[reply.recommended_items[0]]
    (claim,) = reply.annotations["contradicting_claims"]
    assert claim.startswith(f"{item.display_title}: says area ") and claim.endswith(item.values("area")[0])
    assert len(provider.requests) == 2 and "its details contradict" in provider.requests[1][0][-1]["content"]
    assert reply.annotations["agreement"] == "composed" and item.display_title in reply.text
    assert " in the " not in reply.text  # the composed reply states nothing the catalogue lacks

    def corrects(messages: list[Message], _generation: Any) -> str:
        title, food, area = first_candidate(messages)
        if "its details contradict" in messages[-1]["content"]:
            return answer([1], f"{title} serves {food} food in the {area}.")
        return answer([1], f"{title} serves {food} food and it is in the {elsewhere(area)}.")

    crs, provider = scripted_crs(restaurants, corrects)
    reply = await crs.respond(CRSSession("d2", 1), "I want a restaurant in the centre.")
    assert len(provider.requests) == 2 and reply.annotations["agreement"] == "reasked"
    assert "contradicting_claims" in reply.annotations and reply.text.endswith(".")
    item = restaurants.items[reply.recommended_items[0]]
    assert f"in the {item.values('area')[0]}" in reply.text


async def test_a_true_description_is_not_asked_again(restaurants: Domain) -> None:
    def script(messages: list[Message], _generation: Any) -> str:
        title, food, area = first_candidate(messages)
        return answer([1], f"If you're looking for {food} food, {title} in the {area} is a fine choice.")

    crs, provider = scripted_crs(restaurants, script)
    reply = await crs.respond(CRSSession("d1", 1), "I want a restaurant in the centre.")
    assert len(provider.requests) == 1
    assert not {"role_flip", "contradicting_claims", "first_message"} & reply.annotations.keys()
