"""The LLM client: cache keys and modes, retries only for retryable errors, timeouts, shared in-flight
requests, usage accounting per dialogue; structured output with one repair; prompt templates."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import BaseModel

from crsim.core.errors import ConfigError
from crsim.llm import usage
from crsim.llm.cache import ResponseCache, cache_stats, clear_cache
from crsim.llm.client import LLM, LLMHub
from crsim.llm.config import LLMSettings, ModelConfig
from crsim.llm.errors import LLMAuthError, LLMOutputError, LLMServerError, LLMTimeout
from crsim.llm.prompts import load_template, render
from crsim.llm.providers.scripted import ScriptedProvider
from crsim.llm.structured import generate_acts, generate_json
from crsim.llm.types import GenerationConfig, Message, ResolvedGeneration, user

HELLO: list[Message] = [user("hello")]


def _llm(provider: ScriptedProvider, tmp_path: Path | None = None, **config: object) -> LLM:
    cache = ResponseCache(tmp_path / "cache.sqlite") if tmp_path is not None else None
    return LLM("user", ModelConfig(provider="scripted", backoff=0.0, **config), provider, cache=cache)  # type: ignore[arg-type]


async def test_cache_answers_a_repeated_request_without_a_call(tmp_path: Path) -> None:
    provider = ScriptedProvider.from_replies(["one", "two"])
    llm = _llm(provider, tmp_path)
    first = await llm.generate(HELLO)
    second = await llm.generate(HELLO)
    assert (first.text, first.cached) == ("one", False)
    assert (second.text, second.cached, second.latency) == ("one", True, 0.0)
    assert len(provider.requests) == 1


async def test_a_new_cache_object_on_the_same_file_makes_no_call(tmp_path: Path) -> None:
    await _llm(ScriptedProvider.from_replies(["one"]), tmp_path).generate(HELLO)
    again = ScriptedProvider.from_replies(["other"])
    answer = await _llm(again, tmp_path).generate(HELLO)
    assert answer.text == "one" and again.requests == []


async def test_trial_index_and_parameters_are_part_of_the_key(tmp_path: Path) -> None:
    provider = ScriptedProvider.from_replies(["a", "b", "c", "d"])
    llm = _llm(provider, tmp_path)
    with usage.collect(trial=0):
        assert (await llm.generate(HELLO)).text == "a"
    with usage.collect(trial=1):
        assert (await llm.generate(HELLO)).text == "b"
    assert (await llm.generate(HELLO, GenerationConfig(temperature=0.0))).text == "c"
    assert (await llm.generate(HELLO, GenerationConfig(seed=7))).text == "d"
    with usage.collect(trial=1):
        assert (await llm.generate(HELLO)).text == "b"
    assert len(provider.requests) == 4


async def test_read_only_cache_reads_but_never_writes(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    writer = LLM("user", ModelConfig(provider="scripted"), ScriptedProvider.from_replies(["kept"]))
    writer.cache = ResponseCache(path)
    await writer.generate(HELLO)
    provider = ScriptedProvider.from_replies(["fresh"])
    reader = LLM("user", ModelConfig(provider="scripted"), provider, cache=ResponseCache(path, "read-only"))
    assert (await reader.generate(HELLO)).text == "kept"
    assert (await reader.generate([user("new")])).text == "fresh"
    assert (await reader.generate([user("new")])).text == "fresh"
    assert len(provider.requests) == 2
    assert cache_stats(path).entries == 1


async def test_cache_off_always_calls(tmp_path: Path) -> None:
    provider = ScriptedProvider.from_replies(["x"])
    llm = LLM("user", ModelConfig(provider="scripted"), provider, cache=ResponseCache(tmp_path / "c", "off"))
    await llm.generate(HELLO)
    await llm.generate(HELLO)
    assert len(provider.requests) == 2 and not (tmp_path / "c").exists()


def test_cache_stats_and_clear(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    llm = _llm(ScriptedProvider.from_replies(["x"], label="m1"), tmp_path)
    asyncio.run(llm.generate(HELLO))
    asyncio.run(llm.generate([user("again")]))
    stats = cache_stats(path)
    assert stats.entries == 2 and stats.by_model == {"m1": 2} and stats.size_bytes > 0
    assert clear_cache(path) == 2
    assert cache_stats(path).entries == 0
    with pytest.raises(ConfigError, match="no LLM cache"):
        cache_stats(tmp_path / "missing.sqlite")


async def test_retryable_errors_are_retried_then_succeed() -> None:
    outcomes: list[str | BaseException] = [LLMServerError("503"), LLMServerError("502"), "fine"]
    provider = ScriptedProvider(lambda _m, _g: outcomes.pop(0))
    answer = await _llm(provider, max_retries=3).generate(HELLO)
    assert answer.text == "fine" and len(provider.requests) == 3


async def test_retries_stop_at_the_limit_and_name_the_role() -> None:
    provider = ScriptedProvider(lambda _m, _g: LLMServerError("HTTP 500: boom"))
    with pytest.raises(LLMServerError, match=r"LLM role 'user' .*HTTP 500: boom"):
        await _llm(provider, max_retries=2).generate(HELLO)
    assert len(provider.requests) == 3


async def test_retries_wait_the_backoff_doubling_each_time() -> None:
    """Two retries after 0.1 s and 0.2 s: the calls are at least that far apart (timers never fire
    early; the upper bound only guards against a wait that does not double but grows much faster)."""
    moments: list[float] = []

    def answer(_m: list[Message], _g: ResolvedGeneration) -> str | BaseException:
        moments.append(time.monotonic())
        return LLMServerError("503") if len(moments) < 3 else "fine"

    llm = LLM("user", ModelConfig(provider="scripted", backoff=0.1, max_retries=2), ScriptedProvider(answer))
    assert (await llm.generate(HELLO)).text == "fine"
    gaps = [b - a for a, b in itertools.pairwise(moments)]
    assert gaps[0] >= 0.1 and gaps[1] >= 0.2 and sum(gaps) < 2.0, gaps


def test_the_backoff_is_capped() -> None:
    llm = LLM("user", ModelConfig(provider="scripted", backoff=1.0), ScriptedProvider(lambda _m, _g: "x"))
    waits = [llm._wait(SimpleNamespace(attempt_number=n)) for n in (1, 2, 3, 7, 8, 500)]  # type: ignore[arg-type]
    assert waits == [1.0, 2.0, 4.0, 60.0, 60.0, 60.0]


async def test_other_errors_are_not_retried() -> None:
    provider = ScriptedProvider(lambda _m, _g: LLMAuthError("HTTP 401: bad key"))
    with pytest.raises(LLMAuthError):
        await _llm(provider, max_retries=5).generate(HELLO)
    assert len(provider.requests) == 1


async def test_timeout_is_an_llm_error() -> None:
    class Slow(ScriptedProvider):
        async def complete(self, messages: list[Message], generation: ResolvedGeneration):  # type: ignore[no-untyped-def]
            await asyncio.sleep(5)
            return await super().complete(messages, generation)

    slow = Slow(lambda _m, _g: "late")
    with pytest.raises(LLMTimeout, match=r"no answer within 0\.05 s"):
        await _llm(slow, timeout=0.05, max_retries=0).generate(HELLO)


async def test_concurrent_identical_requests_share_one_call() -> None:
    gate = asyncio.Event()

    class Gated(ScriptedProvider):
        async def complete(self, messages: list[Message], generation: ResolvedGeneration):  # type: ignore[no-untyped-def]
            await gate.wait()
            return await super().complete(messages, generation)

    provider = Gated(lambda _m, _g: "shared")
    llm = _llm(provider)
    tasks = [asyncio.create_task(llm.generate(HELLO)) for _ in range(5)]
    await asyncio.sleep(0.01)
    gate.set()
    answers = await asyncio.gather(*tasks)
    assert {a.text for a in answers} == {"shared"} and len(provider.requests) == 1
    assert sum(not a.cached for a in answers) == 1


class InFlight(ScriptedProvider):
    """A scripted provider that counts the calls in flight and the most there were at once."""

    active = peak = 0

    async def complete(self, messages: list[Message], generation: ResolvedGeneration):  # type: ignore[no-untyped-def]
        self.active += 1
        self.peak = max(self.peak, self.active)
        await asyncio.sleep(0.01)
        self.active -= 1
        return await super().complete(messages, generation)


async def test_concurrency_limit_per_endpoint() -> None:
    hub = LLMHub(LLMSettings(default=ModelConfig(provider="scripted", replies=["x"], max_concurrency=3)))
    provider = InFlight(lambda _m, _g: "x")
    hub._providers = {}  # the hub builds scripted providers from config; swap in the counting one
    user_llm, crs_llm = hub.role("user"), hub.role("crs")
    user_llm.provider = crs_llm.provider = provider
    await asyncio.gather(*(llm.generate([user(str(i))]) for i in range(10) for llm in (user_llm, crs_llm)))
    assert provider.peak == 3 and len(provider.requests) == 20


def test_a_hub_serves_a_second_event_loop_after_closing(tmp_path: Path) -> None:
    """`crsim run` holds its dialogues in one event loop and scores them with the same hub in the next:
    the endpoint's limit (a call waited on it in the first loop) and the cache, closed in between,
    must serve the second loop too, the cache still answering what the first loop stored."""
    settings = LLMSettings(default=ModelConfig(provider="scripted", replies=["x"], max_concurrency=2))
    hub = LLMHub(settings, cache_path=tmp_path / "cache.sqlite")
    provider = InFlight(lambda _m, _g: "x")
    hub.role("user").provider = provider

    async def calls(first: int) -> list[bool]:
        try:
            answers = await asyncio.gather(
                *(hub.role("user").generate([user(str(i))]) for i in range(first, 6))
            )
            return [a.cached for a in answers]
        finally:
            await hub.aclose()

    assert asyncio.run(calls(0)) == [False] * 6
    assert asyncio.run(calls(3)) == [True] * 3  # the cache opened again
    hub.role("user").cache = None  # now every call reaches the provider, waiting on the limit
    assert asyncio.run(calls(0)) == [False] * 6
    assert provider.peak == 2 and len(provider.requests) == 12


async def test_usage_is_logged_per_call_with_role_tokens_and_errors(tmp_path: Path) -> None:
    outcomes: list[str | BaseException] = ["two words", LLMAuthError("no")]
    llm = _llm(ScriptedProvider(lambda _m, _g: outcomes.pop(0), label="m"), tmp_path, model="m")
    with usage.collect() as log:
        await llm.generate(HELLO)
        await llm.generate(HELLO)
        with pytest.raises(LLMAuthError):
            await llm.generate([user("other")])
    calls = log.drain()
    assert [(c.role, c.model, c.completion_tokens, c.cached, c.error) for c in calls] == [
        ("user", "m", 2, False, None),
        ("user", "m", 2, True, None),
        ("user", "m", 0, False, "LLMAuthError"),
    ]
    assert log.drain() == []


class Pick(BaseModel):
    genre: str
    year: int


async def test_json_answers_are_validated_and_repaired_once() -> None:
    provider = ScriptedProvider.from_replies(
        ['{"genre": "drama"}', '```json\n{"genre": "drama", "year": 1999}\n```']
    )
    result = await generate_json(_llm(provider), HELLO, Pick)
    assert result.ok and result.repaired and result.unwrap() == Pick(genre="drama", year=1999)
    first_request = provider.requests[0][1]
    assert first_request.json_schema == Pick.model_json_schema()
    repair = provider.requests[1][0]
    assert repair[-2] == {"role": "assistant", "content": '{"genre": "drama"}'}
    assert "year" in repair[-1]["content"]


async def test_an_unreadable_answer_is_an_error_keeping_the_raw_text() -> None:
    provider = ScriptedProvider.from_replies(["no idea", "still no idea"])
    result = await generate_json(_llm(provider), HELLO, Pick)
    assert not result.ok and result.value is None and result.raw == "still no idea"
    with pytest.raises(LLMOutputError) as caught:
        result.unwrap()
    assert caught.value.raw == "still no idea"


async def test_act_answers_pass_the_grammar_and_parse() -> None:
    provider = ScriptedProvider.from_replies(['elicit(genre)|recommend(title="Heat")'])
    result = await generate_acts(_llm(provider), HELLO, grammar='root ::= "x"')
    assert [str(a) for a in result.unwrap()] == ["elicit(genre)", 'recommend(title="Heat")']
    assert provider.requests[0][1].grammar == 'root ::= "x"'


def test_prompt_templates_are_strict(tmp_path: Path) -> None:
    path = tmp_path / "p.j2"
    path.write_text("Hello {{ name }}!\n")
    template = load_template("crsim", str(path))
    assert render(template, name="Ann") == "Hello Ann!"
    with pytest.raises(ConfigError, match="'name' is undefined"):
        render(template)
    with pytest.raises(ConfigError, match="neither a file nor a template"):
        load_template("crsim", "no-such-template.j2")


def test_settings_give_each_role_its_model() -> None:
    settings = LLMSettings.model_validate(
        {
            "default": {"provider": "scripted", "replies": ["d"]},
            "roles": {"judge": {"provider": "scripted", "replies": ["j"]}},
        }
    )
    assert settings.for_role("user").replies == ["d"] and settings.for_role("judge").replies == ["j"]
    hub = LLMHub(settings)
    assert hub.role("user") is hub.role("user") and hub.role("user").provider is hub.role("crs").provider
    assert hub.role("judge").provider is not hub.role("user").provider


def test_unknown_provider_and_empty_script_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="at least one reply"):
        LLMHub(LLMSettings(default=ModelConfig(provider="scripted"))).check(["user"])
