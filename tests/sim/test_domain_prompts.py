"""LLM prompts name the domain's items: the abus LLM NLU/NLG prompts render for movies exactly as
they did when movies were the only domain (fixture rendered by main fc21365), and for restaurants
name restaurants and their slots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from crsim.core.components import BuildContext
from crsim.crs.llm import LLMCRS, LLMCRSState
from crsim.domains import domain_named
from crsim.model.acts import DialogueAct
from crsim.model.domain import Domain
from crsim.sim.agenda.simulator import AgendaBasedSimulator
from crsim.sim.shared.nlg import NLGContext

FIXTURE = Path(__file__).parents[1] / "fixtures" / "movie_prompts_abus.json"

ACTS = [
    [DialogueAct(intent="greeting"), DialogueAct(intent="disclose", slots=[("genre", "comedy")])],
    [
        DialogueAct(intent="inquire", slots=[("plot", None)]),
        DialogueAct(intent="inquire", slots=[("budget", None)]),
    ],
    [DialogueAct(intent="accept", slots=[("title", "Heat (1995)")]), DialogueAct(intent="goodbye")],
    [DialogueAct(intent="reject", slots=[]), DialogueAct(intent="request_recommendation")],
    [
        DialogueAct(intent="seen", slots=[("title", "Heat (1995)"), ("liked", "yes")]),
        DialogueAct(intent="seen"),
    ],
    [DialogueAct(intent="disclose", slots=[("actor", None)])],
]


class _Hub:
    """Hands out no model: the prompts are rendered, never sent."""

    def role(self, name: str) -> Any:
        return None


def render(domain: Domain, focus: str) -> dict[str, str]:
    """The abus LLM prompts of `domain` for a fixed set of CRS texts and user acts."""
    params = AgendaBasedSimulator.Params(nlg="llm", nlu="llm")
    sim = AgendaBasedSimulator(params, BuildContext(domain=domain, llms=_Hub(), seed=3))  # type: ignore[arg-type]
    out = {
        "abus_nlu": sim.nlu.messages("How about The Matrix (1999)? It stars Keanu Reeves.", [focus]),  # type: ignore[attr-defined]
        "abus_nlu_nofocus": sim.nlu.messages("What kind of movie do you like?", []),  # type: ignore[attr-defined]
    }
    context = NLGContext(
        focus_title="Heat (1995)",
        crs_text="Any actor you like?",
        persona={"age": 30},
        annotations={"outcome": "patience"},
    )
    for k, acts in enumerate(ACTS):
        out[f"abus_nlg_{k}"] = sim.nlg.messages(acts, context)  # type: ignore[attr-defined]
    return {key: messages[0]["content"] for key, messages in out.items()}


def test_movie_prompts_render_as_before() -> None:
    assert render(domain_named("movies"), "2571") == json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_restaurant_prompts_name_restaurants_and_their_slots() -> None:
    prompts = render(domain_named("restaurants"), "508")
    # the instructions (the few-shot examples are IARD movie dialogues, kept as they are)
    nlu = prompts["abus_nlu"].split("Examples:")[0]
    assert "restaurant recommender" in nlu and "movie" not in nlu.lower()
    assert "(food, area, pricerange)" in nlu and 'inform(food="...")' in nlu
    nlg = [v.split("This is how people write")[0] for k, v in prompts.items() if k.startswith("abus_nlg")]
    assert "find a restaurant" in nlg[0] and "that restaurant" in nlg[4]
    assert "movie" not in " ".join(nlg).lower()


@pytest.mark.parametrize("domain", ["restaurants", "hotels"])
def test_llm_crs_shows_the_attributes_of_candidates(domain: str) -> None:
    crs = LLMCRS(LLMCRS.Params(), BuildContext(domain=domain_named(domain), llms=_Hub()))  # type: ignore[arg-type]
    state = LLMCRSState()
    state.messages.append({"role": "user", "content": "somewhere cheap in the centre"})
    candidates = crs._candidates(state)
    system, *_, turn = crs._messages(state, candidates)
    assert domain in system["content"]
    assert "area: " in turn["content"] and "pricerange: " in turn["content"]


def test_llm_crs_movie_prompts_render_as_before() -> None:
    """The llm CRS's system and turn prompts for movies (candidates, recent items), as main rendered."""
    crs = LLMCRS(LLMCRS.Params(), BuildContext(domain=domain_named("movies"), llms=_Hub()))  # type: ignore[arg-type]
    state = LLMCRSState()
    state.messages.append({"role": "user", "content": "a funny movie from the nineties with tom hanks"})
    state.last_recommended = ["2571", "6"]
    messages = crs._messages(state, crs._candidates(state))
    expected = json.loads((FIXTURE.parent / "movie_prompts_llm_crs.json").read_text(encoding="utf-8"))
    assert [m["content"] for m in messages] == expected
