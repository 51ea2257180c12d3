"""LLM answers are text from outside: lone surrogates are replaced and counted, unreadable JSON is
an `LLMError`, for every HTTP provider, against real servers on 127.0.0.1 (tests/llm_servers.py)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from pydantic import BaseModel

from crsim.llm import usage
from crsim.llm.cache import ResponseCache
from crsim.llm.client import LLM
from crsim.llm.config import ModelConfig
from crsim.llm.errors import LLMError, LLMProtocolError
from crsim.llm.providers.base import create_provider
from crsim.llm.structured import parse_model
from crsim.llm.types import system, user
from llm_servers import OllamaLikeServer, OpenAILikeServer, Reply, _Planned

MESSAGES = [system("You are a movie fan."), user("What should I watch tonight?")]
MODELS = {"ollama": "smollm2:135m", "openai": "tiny-chat"}
#: Deeper than any JSON parser recursion limit in CPython; an integer longer than int() converts.
DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "9" * 5_000


@pytest.fixture(scope="module", params=["ollama", "openai"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, _Planned]]:
    planned: _Planned = OllamaLikeServer() if request.param == "ollama" else OpenAILikeServer()
    with planned.running():
        yield request.param, planned


@pytest.fixture
def provider(server: tuple[str, _Planned], monkeypatch: pytest.MonkeyPatch) -> tuple[str, _Planned]:
    server[1].reset()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return server


@asynccontextmanager
async def client(name: str, base_url: str, cache: ResponseCache | None = None) -> AsyncIterator[LLM]:
    url = base_url if name == "ollama" else f"{base_url}/v1"
    config = ModelConfig(provider=name, model=MODELS[name], base_url=url, backoff=0.0, max_retries=0)
    llm = LLM("user", config, create_provider(config), cache=cache)
    try:
        yield llm
    finally:
        await llm.provider.aclose()


def _answer(name: str, content_json: str) -> str:
    """A well-formed answer body of the provider whose text is the JSON string `content_json`."""
    message = f'{{"role": "assistant", "content": {content_json}}}'
    if name == "ollama":
        return f'{{"model": "{MODELS[name]}", "message": {message}, "done": true}}'
    choice = f'{{"index": 0, "message": {message}, "finish_reason": "stop"}}'
    return f'{{"id": "c", "object": "chat.completion", "model": "tiny-chat", "choices": [{choice}]}}'


async def test_lone_surrogates_are_replaced_counted_cached_and_recorded(
    provider: tuple[str, _Planned], tmp_path: Path
) -> None:
    name, planned = provider
    planned.plan.append(Reply(raw_body=_answer(name, r'"Heat \ud800 or Alien \udfff"')))
    cache = ResponseCache(tmp_path / "cache.sqlite")
    try:
        async with client(name, planned.base_url, cache) as llm:
            with usage.collect(0) as log:
                answer = await llm.generate(MESSAGES)
                again = await llm.generate(MESSAGES)  # from the cache: the stored answer is the clean one
    finally:
        cache.close()
    assert answer.text == "Heat \ufffd or Alien \ufffd"
    assert answer.replaced_code_points == 4  # two in the text, the same two in the raw body kept
    json.dumps(answer.raw).encode("utf-8")  # raises for a lone surrogate
    assert (again.text, again.cached) == (answer.text, True)
    calls = log.drain()
    assert [c.replaced_code_points for c in calls] == [4, 4]
    assert '"replaced_code_points":4' in calls[0].model_dump_json()


@pytest.mark.parametrize("body", [DEEP, HUGE], ids=["deep_json", "huge_int"])
async def test_unreadable_json_is_an_llm_error(provider: tuple[str, _Planned], body: str) -> None:
    name, planned = provider
    planned.plan.append(Reply(raw_body=body))
    async with client(name, planned.base_url) as llm:
        with pytest.raises(LLMError) as caught:
            await llm.generate(MESSAGES)
    assert type(caught.value) is LLMProtocolError  # the endpoint's fault; not RecursionError / ValueError
    assert len(str(caught.value)) < 1_000


class _Answer(BaseModel):
    title: str
    year: int


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ('{"title": ' + "[" * 20_000 + "]" * 20_000 + ', "year": 1995}', "recursion limit"),
        ('{"title": "Heat \\ud800", "year": ' + HUGE + "}", "4300 digits"),
    ],
    ids=["deep_json", "huge_int"],
)
def test_structured_answers_that_cannot_be_read_are_value_errors(raw: str, reason: str) -> None:
    """`generate_structured` repairs on ValueError; a RecursionError would end the dialogue instead."""
    with pytest.raises(ValueError, match=reason):
        parse_model(raw, _Answer)


def test_a_structured_answer_with_a_lone_surrogate_escape_is_read_with_the_replacement() -> None:
    assert parse_model(r'{"title": "Heat \ud800", "year": 1995}', _Answer) == _Answer(
        title="Heat \ufffd", year=1995
    )
