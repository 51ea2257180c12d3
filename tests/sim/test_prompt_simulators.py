"""`llm_single` and `llm_dual`: prompts, stopping, cleaning, examples, errors, and whole dialogues.

The scripted provider stands in for the model (its script sees every request); one test drives
the real local model for a single turn and checks only the structure of what comes back.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from crsim.core.components import BuildContext
from crsim.core.errors import ConfigError
from crsim.core.seeding import derive_seed
from crsim.crs.base import CRSReply, CRSSession
from crsim.crs.popular import PopularCRS
from crsim.llm.client import LLMHub
from crsim.llm.config import CacheConfig, LLMSettings, ModelConfig
from crsim.llm.errors import LLMOutputError
from crsim.llm.providers.scripted import ScriptedProvider
from crsim.llm.types import Message, ResolvedGeneration
from crsim.model.dialogue import Role, TerminationReason
from crsim.model.domain import Domain
from crsim.model.io import iter_dialogues
from crsim.model.user import InformationNeed, SimulatedUser, SlotPreferences, UserProfile
from crsim.runner.batch import run_batch
from crsim.runner.build import build_experiment
from crsim.runner.config import ExperimentConfig
from crsim.runner.loop import run_dialogue
from crsim.sim.base import simulator_registry
from crsim.sim.prompt.dual import DualPromptSimulator
from crsim.sim.prompt.prompt_parts import split_at_stop, within_chars
from crsim.sim.prompt.single import SinglePromptSimulator
from crsim.sim.shared.conversation import Entry, recent_turns
from support import ScriptedHub, needs_local_model

EXAMPLES = Path(__file__).parents[1] / "fixtures" / "prompt_examples.jsonl"
Script = Callable[[list[Message], ResolvedGeneration], str]


def replies(*answers: str) -> ScriptedProvider:
    queue = list(answers)
    return ScriptedProvider(lambda _m, _g: queue.pop(0))


def single(provider: ScriptedProvider, domain: Domain, seed: int = 11, **args: Any) -> SinglePromptSimulator:
    params = simulator_registry.params("llm_single", args)
    return SinglePromptSimulator(params, BuildContext(domain, ScriptedHub(provider), seed))  # type: ignore[arg-type]


def dual(provider: ScriptedProvider, domain: Domain, seed: int = 11, **args: Any) -> DualPromptSimulator:
    params = simulator_registry.params("llm_dual", args)
    return DualPromptSimulator(params, BuildContext(domain, ScriptedHub(provider), seed))  # type: ignore[arg-type]


def movie_fan(**persona: Any) -> SimulatedUser:
    return SimulatedUser(
        id="u7",
        profile=UserProfile(
            preferences={"actor": SlotPreferences(likes=["Keanu Reeves"], dislikes=["Adam Sandler"])},
            persona=persona,
        ),
        need=InformationNeed(
            constraints={"genre": ["sci-fi", "action"], "decade": "1990s"},
            requests=["director"],
            targets=["2571"],
        ),
    )


def decision(value: str, reason: str = "r") -> str:
    return json.dumps({"decision": value, "reason": reason})


def is_decision(generation: ResolvedGeneration) -> bool:
    return generation.json_schema is not None


async def test_the_prompt_holds_task_persona_need_and_history(domain: Domain) -> None:
    provider = replies("Hi, I want a film.", "Something from the nineties.")
    sim = single(provider, domain, persona="A retired teacher who loves long films.")
    first = await sim.start(movie_fan(), CRSReply("Hello! What are you in the mood for?"))
    await sim.respond(CRSReply("Any particular decade?"))
    assert first.text == "Hi, I want a film." and not first.end

    (system_1, conv_1), _ = provider.requests[0]
    (system_2, conv_2), _ = provider.requests[1]
    assert (system_1["role"], conv_1["role"]) == ("system", "user")
    prompt = system_1["content"]
    for fact in (
        "sci-fi or action",
        "1990s",
        "The Matrix (1999)",
        "director",
        "Keanu Reeves",
        "Adam Sandler",
    ):
        assert fact in prompt
    assert "A retired teacher who loves long films." in prompt
    assert "[END]" in prompt  # llm_single tells the model how to stop
    assert conv_1["content"].startswith("The conversation so far")
    assert "Recommender: Hello! What are you in the mood for?" in conv_1["content"]
    history = conv_2["content"]
    assert history.index("Recommender: Hello!") < history.index("User: Hi, I want a film.")
    assert history.index("User: Hi, I want a film.") < history.index("Recommender: Any particular decade?")
    assert system_2["content"] == prompt  # the task part stays the same during the dialogue


async def test_the_users_own_persona_wins_and_none_is_fine(domain: Domain) -> None:
    provider = replies("Hello.", "Hello.", "Hello.", "Hello.")
    await single(provider, domain, persona="configured persona").start(movie_fan(description="A night owl."))
    await single(provider, domain).start(movie_fan(mean_rating=3.9))
    await single(provider, domain, include_preferences=False).start(movie_fan())
    await single(provider, domain).start(SimulatedUser(id="blank"))
    own, statistics_only, no_preferences, blank = (request[0][0]["content"] for request in provider.requests)
    assert "A night owl." in own and "configured persona" not in own
    assert "Who you are" not in statistics_only and "3.9" not in statistics_only
    assert "Keanu Reeves" not in no_preferences and "The Matrix (1999)" in no_preferences
    assert "open to suggestions" in blank and "Who you are" not in blank
    opening = provider.requests[3][0][1]["content"]
    assert opening.startswith(
        "The conversation has not started yet. Write the user's first message, and only its text.\n\n["
    )
    assert "Nothing has been recommended to you yet: do not end the conversation" in opening


async def test_the_stop_token_ends_the_dialogue(domain: Domain) -> None:
    # the user asks about the director (its request) before it ends: an end is taken once nothing is pending
    answers = (
        "I'd like a thriller.",
        "Who directed it?",
        "Great, I'll watch it tonight. [END] Recommender: Enjoy!",
    )
    sim = single(replies(*answers), domain)
    opening = await sim.start(movie_fan())
    await sim.respond(CRSReply("How about Heat (1995)?"))
    last = await sim.respond(CRSReply("Michael Mann."))
    assert opening.annotations["stop_token_seen"] is False and not opening.end
    assert last.end and last.text == "Great, I'll watch it tonight."
    assert last.annotations["stop_token_seen"] is True
    assert last.annotations["raw_answer"].endswith("Recommender: Enjoy!")


async def test_a_bare_stop_token_gives_the_closing_utterance(domain: Domain) -> None:
    sim = single(replies("Hi.", "User: [end]"), domain, closing_utterance="Bye now.", patience=1)
    await sim.start(movie_fan())
    last = await sim.respond(CRSReply("Anything else?"))
    assert (last.text, last.end) == ("Bye now.", True)
    assert last.annotations["closing_utterance"] is True and last.annotations["raw_answer"] == "User: [end]"


async def test_a_custom_stop_token(domain: Domain) -> None:
    provider = replies("That settles it <<DONE>>")
    turn = await single(provider, domain, stop_token="<<DONE>>", patience=1).start(movie_fan())
    assert (turn.text, turn.end) == ("That settles it", True)
    assert "<<DONE>>" in provider.requests[0][0][0]["content"]


def test_split_at_stop() -> None:
    assert split_at_stop("Thanks! [END]", "[END]") == ("Thanks!", True)
    assert split_at_stop("thanks [End] and more", "[END]") == ("thanks", True)
    assert split_at_stop("no token here", "[END]") == ("no token here", False)


async def test_cleaning_is_applied_and_the_raw_answer_kept(domain: Domain) -> None:
    raw = "User: Maybe something with robots?\nRecommender: I suggest The Matrix."
    turn = await single(replies(raw), domain).start(movie_fan())
    assert turn.text == "Maybe something with robots?"
    assert turn.annotations == {"stop_token_seen": False, "raw_answer": raw}
    plain = await single(replies("Just talking."), domain).start(movie_fan())
    assert plain.annotations == {"stop_token_seen": False}


@pytest.mark.parametrize("raw", ["", "  \n ", "Recommender: What genre do you like?", "User:"])
async def test_an_empty_answer_is_an_error_keeping_the_raw_text(domain: Domain, raw: str) -> None:
    with pytest.raises(LLMOutputError, match="empty once cleaned") as caught:
        await single(replies(raw), domain).start(movie_fan())
    assert caught.value.raw == raw
    with pytest.raises(LLMOutputError) as from_dual:
        await dual(replies(raw), domain).start(movie_fan())
    assert from_dual.value.raw == raw


async def test_the_conversation_as_alternating_messages(domain: Domain) -> None:
    provider = replies("Hi there.", "A drama, please.", "Hello.")
    sim = single(provider, domain, history_format="messages", max_history_turns=1)
    await sim.start(movie_fan())
    await sim.respond(CRSReply("What genre?"))
    await single(provider, domain, history_format="messages").start(movie_fan(), CRSReply("Welcome!"))
    opening, second, greeted = (request[0] for request in provider.requests)
    assert [m["role"] for m in opening] == ["system", "user"]
    assert opening[1]["content"].startswith(
        "Start the conversation: write your first message to the recommender."
    )
    assert "The messages you receive are the recommender's" in opening[0]["content"]
    assert "The Matrix (1999)" in opening[0]["content"] and "[END]" in opening[0]["content"]
    assert second[1] == {"role": "assistant", "content": "Hi there."}
    assert second[2]["role"] == "user" and second[2]["content"].startswith("What genre?\n\n[")
    assert second[0] == opening[0]
    assert len(greeted) == 2 and greeted[1]["content"].startswith("Welcome!\n\n[Nothing has been recommended")


async def test_old_turns_are_left_out_of_the_response_prompt(domain: Domain) -> None:
    provider = replies("one", "two", "three")
    sim = single(provider, domain, max_history_turns=1)
    await sim.start(movie_fan(), CRSReply("greeting"))
    await sim.respond(CRSReply("reply one"))
    third = await sim.respond(CRSReply("reply two"))
    conversation = provider.requests[2][0][1]["content"]
    assert (
        "greeting" not in conversation and "reply one" not in conversation and "User: one" not in conversation
    )
    assert "User: two\nRecommender: reply two" in conversation
    assert "first 3 messages left out" in conversation
    assert third.annotations["history_omitted"] == 3


def test_history_windows() -> None:
    history = [Entry(Role.CRS, "hi"), Entry(Role.USER, "a"), Entry(Role.CRS, "b"), Entry(Role.USER, "c")]
    history.append(Entry(Role.CRS, "d"))
    assert recent_turns(history, None) == (history, 0)
    assert recent_turns(history, 2) == (history, 0)
    assert recent_turns(history, 1) == (history[3:], 3)
    assert within_chars(history, None) == (history, 0)
    assert within_chars(history, 1000) == (history, 0)
    assert within_chars(history, len("User: c\nRecommender: d\n")) == (history[3:], 3)
    assert within_chars(history, 1) == (history[4:], 4)  # the last message stays, however long


async def test_few_shot_examples_come_from_a_file(domain: Domain) -> None:
    provider = replies("hello", "hello")
    await single(provider, domain, examples=str(EXAMPLES), num_examples=1).start(movie_fan())
    await single(provider, domain, examples=str(EXAMPLES), num_examples=3).start(movie_fan())
    one, three = (request[0][0]["content"] for request in provider.requests)
    assert "Example 1:\nRecommender: Hello, what kind of film are you after tonight?" in one
    assert "User: Perfect, I haven't seen that one. Thanks!" in one
    assert "Iron Giant" not in one and "Example 2" not in one
    assert "Example 2:\nUser: Can you suggest an animated film" in three
    assert "Example 3:\nRecommender: Hi there!\nUser: I want a slow science fiction film" in three
    assert "User: \n" not in three  # blank utterances are not shown
    zero_shot = await single(replies("hi"), domain).start(movie_fan())
    assert zero_shot.text == "hi"


def test_bad_examples_and_templates_fail_when_the_config_is_validated(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"args\.examples.*holds only 3 dialogue"):
        simulator_registry.params(
            "llm_single", {"examples": str(EXAMPLES), "num_examples": 4}, where="sims[0]"
        )
    with pytest.raises(ConfigError, match="file not found"):
        simulator_registry.params("llm_dual", {"examples": str(tmp_path / "missing.jsonl")})
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "x", "utterances": [{"role": "robot", "text": "hi"}]}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"record 1.*utterances\.0\.role"):
        simulator_registry.params("llm_single", {"examples": str(broken)})
    with pytest.raises(ConfigError, match=r"args\.prompt.*nowhere\.j2"):
        simulator_registry.params("llm_single", {"prompt": "nowhere.j2"})
    bad = tmp_path / "bad.j2"
    bad.write_text("{% if part %}unclosed", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"args\.stop_prompt"):
        simulator_registry.params("llm_dual", {"stop_prompt": str(bad)})
    with pytest.raises(ConfigError, match="stop token"):
        simulator_registry.params("llm_single", {"stop_token": "  "})


async def test_a_custom_template_file(domain: Domain, tmp_path: Path) -> None:
    template = tmp_path / "terse.j2"
    template.write_text(
        '{% if part == "system" %}Be {{ need.constraints[0].values[0] }} fan.'
        "{% else %}{{ transcript }}|{{ user_label }}{% endif %}",
        encoding="utf-8",
    )
    provider = replies("ok")
    await single(provider, domain, prompt=str(template)).start(movie_fan(), CRSReply("Hi"))
    sent = [m["content"] for m in provider.requests[0][0]]
    assert sent[0] == "Be sci-fi fan." and sent[1].startswith("Recommender: Hi|User\n\n[")  # + the guidance
    one_part = tmp_path / "one_part.j2"
    one_part.write_text('{% if part == "system" %}Only a system part.{% endif %}', encoding="utf-8")
    with pytest.raises(ConfigError, match="renders nothing for part 'conversation'"):
        await single(replies("ok"), domain, prompt=str(one_part)).start(movie_fan())


async def test_an_unknown_target_item_is_an_error(domain: Domain) -> None:
    user = SimulatedUser(id="u9", need=InformationNeed(targets=["no-such-item"]))
    with pytest.raises(Exception, match=r"u9.*'no-such-item' is not among the movies items"):
        await single(replies("hi"), domain).start(user)


async def test_seeds_and_generation_settings_follow_the_dialogue_seed(domain: Domain) -> None:
    provider = replies("a", "b", "c", "d")
    sim = single(provider, domain, seed=5, temperature=0.2, max_tokens=30)
    await sim.start(movie_fan())
    await sim.respond(CRSReply("x"))
    await single(provider, domain, seed=6).start(movie_fan())
    seeds = [generation.seed for _, generation in provider.requests]
    assert seeds[:2] == [derive_seed(5, "turn", 1) % 2**31, derive_seed(5, "turn", 2) % 2**31]
    assert seeds[2] == derive_seed(6, "turn", 1) % 2**31 and len(set(seeds)) == 3
    first = provider.requests[0][1]
    assert (first.temperature, first.max_tokens) == (0.2, 30)
    assert "\nRecommender:" in first.stop
    assert provider.requests[2][1].temperature == ModelConfig().temperature  # the role's default


def test_registration_and_llm_roles() -> None:
    assert simulator_registry.get("llm_single") is SinglePromptSimulator
    assert simulator_registry.get("llm_dual") is DualPromptSimulator
    for name in ("llm_single", "llm_dual"):
        cls = simulator_registry.get(name)
        assert cls.needs_llm is True
        assert cls.llm_roles(simulator_registry.params(name, {"role": "tester"})) == ["tester"]
        assert cls.llm_roles(simulator_registry.params(name, {})) == ["user"]


async def test_dual_asks_the_stopping_prompt_before_later_turns(domain: Domain) -> None:
    said = iter(["I want a film.", "Who directed it?", "Do you have something else?"])

    def script(messages: list[Message], generation: ResolvedGeneration) -> str:
        if is_decision(generation):
            return decision("continue", "Nothing suitable yet.")
        return next(said)

    provider = ScriptedProvider(script)
    sim = dual(provider, domain, max_history_turns=1, persona="A film student.")
    first = await sim.start(movie_fan(), CRSReply("Welcome!"))
    assert len(provider.requests) == 1 and "stop_decision" not in first.annotations
    response_system = provider.requests[0][0][0]["content"]
    assert "[END]" not in response_system and "end your message" not in response_system
    await sim.respond(CRSReply("How about Heat (1995)?"))
    third = await sim.respond(CRSReply("Or Toy Story (1995)?"))
    assert third.text == "Do you have something else?" and not third.end
    assert third.annotations["stop_decision"] == "continue"
    assert third.annotations["stop_reason"] == "Nothing suitable yet."
    assert third.annotations["history_omitted"] == 3  # the response prompt saw only the last turn

    kinds = ["stop" if is_decision(g) else "utterance" for _, g in provider.requests]
    assert kinds == ["utterance", "stop", "utterance", "stop", "utterance"]
    (stop_system, stop_conversation), stop_generation = provider.requests[3]
    assert stop_generation.json_schema is not None
    assert set(stop_generation.json_schema["properties"]) == {"decision", "reason"}
    assert stop_generation.seed == derive_seed(11, "stop", 3) % 2**31
    assert "A film student." in stop_system["content"] and "The Matrix (1999)" in stop_system["content"]
    whole = stop_conversation["content"]  # the stopping prompt sees everything, both sides
    for line in ("Recommender: Welcome!", "User: Who directed it?", "Recommender: Or Toy Story"):
        assert line in whole
    assert whole.index("Welcome!") < whole.index("Heat") < whole.index("Toy Story")


async def test_dual_stops_with_the_closing_utterance(domain: Domain) -> None:
    def script(messages: list[Message], generation: ResolvedGeneration) -> str:
        return decision("stop", "They accepted Heat.") if is_decision(generation) else "I like crime films."

    provider = ScriptedProvider(script)
    sim = dual(provider, domain, closing_utterance="Thanks, bye!")
    # a user without requests: a stop right after a fitting item with a request open is overruled
    await sim.start(SimulatedUser(id="u8", need=InformationNeed(constraints={"genre": ["action"]})))
    last = await sim.respond(CRSReply("How about Heat (1995)?"))
    assert (last.text, last.end) == ("Thanks, bye!", True)
    assert last.annotations == {
        "stop_decision": "stop",
        "stop_reason": "They accepted Heat.",
        "closing_utterance": True,
    }
    assert len(provider.requests) == 2  # no utterance is generated after a stop


async def test_dual_repairs_a_decision_once(domain: Domain) -> None:
    provider = replies("hi", "I think we should keep going", decision("continue"), "more please")
    sim = dual(provider, domain)
    await sim.start(movie_fan())
    turn = await sim.respond(CRSReply("Hm?"))
    assert turn.text == "more please"
    assert turn.annotations["stop_decision_repaired"] is True
    repair = provider.requests[2][0]
    assert repair[-2] == {"role": "assistant", "content": "I think we should keep going"}


async def test_an_unreadable_decision_is_an_error_with_the_raw_answer(domain: Domain) -> None:
    provider = replies("hi", "maybe", '{"decision": "perhaps", "reason": "unsure"}')
    sim = dual(provider, domain)
    await sim.start(movie_fan())
    with pytest.raises(LLMOutputError, match="stopping decision") as caught:
        await sim.respond(CRSReply("Hm?"))
    assert caught.value.raw == '{"decision": "perhaps", "reason": "unsure"}'


async def test_the_stopping_prompt_cuts_history_only_beyond_its_budget(domain: Domain) -> None:
    def script(messages: list[Message], generation: ResolvedGeneration) -> str:
        return decision("continue") if is_decision(generation) else "tell me more " * 30

    provider = ScriptedProvider(script)
    sim = dual(provider, domain, stop_history_chars=500)
    await sim.start(movie_fan(), CRSReply("Welcome!"))
    second = await sim.respond(CRSReply("Sure."))
    assert "stop_history_omitted" not in second.annotations
    await sim.respond(CRSReply("And?"))
    fourth = await sim.respond(CRSReply("Last one."))
    assert fourth.annotations["stop_history_omitted"] >= 1
    last_stop_prompt = provider.requests[-2][0][1]["content"]
    assert "Welcome!" not in last_stop_prompt and "Recommender: Last one." in last_stop_prompt


async def _talk_to_popular(domain: Domain, sim: Any) -> Any:
    crs = PopularCRS(PopularCRS.Params(), BuildContext(domain))
    return await run_dialogue(
        sim, crs, movie_fan(), dialogue_id="d1", session=CRSSession("d1", 3), max_turns=6, items=domain.items
    )


async def test_a_whole_single_prompt_dialogue_with_the_popular_crs(domain: Domain) -> None:
    answers = iter(
        [
            "Hi! I'd like a science fiction film.",
            "User: Anything from the nineties?",
            "Sounds good, thanks! [END]",
        ]
    )
    provider = ScriptedProvider(lambda _m, _g: next(answers))
    dialogue = await _talk_to_popular(domain, single(provider, domain))
    assert dialogue.termination is not None and dialogue.termination.reason == TerminationReason.USER_ENDED
    users, crss = dialogue.by(Role.USER), dialogue.by(Role.CRS)
    assert [u.text for u in users] == [
        "Hi! I'd like a science fiction film.",
        "Anything from the nineties? Who directed it?",  # the need's request, by the policy
        "Sounds good, thanks!",
    ]
    assert users[-1].annotations["stop_token_seen"] is True
    assert dialogue.utterances[-1].role == Role.USER and len(crss) >= 2
    last_prompt = provider.requests[-1][0][1]["content"]
    for reply in crss:  # every CRS reply reached the simulator
        assert f"Recommender: {' '.join(reply.text.split())}" in last_prompt


async def test_a_whole_dual_prompt_dialogue_and_its_failure(domain: Domain) -> None:
    decisions = iter([decision("continue"), decision("stop", "Got one.")])

    def script(messages: list[Message], generation: ResolvedGeneration) -> str:
        return next(decisions) if is_decision(generation) else "A sci-fi film please."

    dialogue = await _talk_to_popular(domain, dual(ScriptedProvider(script), domain))
    assert dialogue.termination is not None and dialogue.termination.reason == TerminationReason.USER_ENDED
    assert [u.annotations.get("stop_decision") for u in dialogue.by(Role.USER)] == [None, "continue", "stop"]
    assert dialogue.utterances[-1].text == DualPromptSimulator.Params().closing_utterance

    broken = dual(replies("hello", "no idea", "still no idea"), domain)
    failed = await _talk_to_popular(domain, broken)
    assert failed.termination is not None and failed.termination.error is not None
    assert failed.termination.reason == TerminationReason.USER_ERROR
    assert (failed.termination.error.source, failed.termination.error.type) == ("user", "LLMOutputError")
    assert "still no idea" in failed.termination.error.message
    assert failed.num_turns == 1  # the dialogue up to the failure is kept


@needs_local_model
async def test_one_turn_with_the_real_local_model(domain: Domain) -> None:
    hub = LLMHub(
        LLMSettings(default=ModelConfig(provider="local", max_tokens=40), cache=CacheConfig(mode="off"))
    )
    try:
        params = SinglePromptSimulator.Params(include_preferences=False)  # a shorter prompt
        sim = SinglePromptSimulator(params, BuildContext(domain, hub, 1))
        turn = await sim.start(movie_fan(), CRSReply("Hi! What kind of movie would you like to watch?"))
    finally:
        await hub.aclose()
    assert isinstance(turn.text, str) and turn.text.strip()
    assert isinstance(turn.annotations["stop_token_seen"], bool)
    assert sim.history[-1] == Entry(Role.USER, turn.text)


def test_a_three_dialogue_dual_prompt_run(tmp_path: Path) -> None:
    """build -> batch with llm_dual from a config: components get the hub, records carry LLM usage."""
    config = ExperimentConfig.model_validate(
        {
            "users": {"size": 3},
            # the user may stop on popular's first suggestion whether or not it fits the need
            "simulators": [
                {
                    "name": "llm_dual",
                    "args": {
                        "closing_utterance": "Done, bye.",
                        "giving_up_utterance": "Done, bye.",
                        "give_up_after": 1,
                    },
                }
            ],
            "crss": [{"name": "popular"}],
            "max_turns": 5,
            "concurrency": 1,  # the scripted replies alternate utterance / decision within one dialogue
            "llm": {
                "default": {"provider": "scripted", "replies": ["unused"]},
                "roles": {
                    "user": {"provider": "scripted", "replies": ["A comedy, please.", decision("stop")]}
                },
            },
        }
    )
    experiment = build_experiment(config)
    result = asyncio.run(run_batch(experiment, tmp_path / "run"))
    assert (result.planned, result.ran) == (3, 3)
    dialogues = list(iter_dialogues(tmp_path / "run" / "dialogues.jsonl"))
    assert len({d.user_id for d in dialogues}) == 3
    for dialogue in dialogues:
        assert (
            dialogue.termination is not None and dialogue.termination.reason == TerminationReason.USER_ENDED
        )
        assert [u.text for u in dialogue.by(Role.USER)] == ["A comedy, please.", "Done, bye."]
        assert dialogue.by(Role.USER)[1].annotations["stop_decision"] == "stop"
        assert dialogue.llm_usage["user"].calls == 2  # one utterance, one decision
        assert [len(u.llm_calls) for u in dialogue.by(Role.USER)] == [1, 1]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))
    simulator = manifest["components"]["simulators"][0]
    assert simulator["name"] == "llm_dual" and simulator["args"]["closing_utterance"] == "Done, bye."
