"""The `ollama` provider against a real HTTP server on 127.0.0.1 (tests/llm_servers.py).

Ollama itself cannot be installed here, so the server follows Ollama's documented `/api/chat`
request and response shapes and refuses malformed requests; the tests check what the provider
sends (model, messages, stream false, format, options), how it reads the answer (text, usage from
prompt_eval_count/eval_count, done_reason) and how each failure becomes a crsim LLM error.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict

from crsim.errors import ConfigError
from crsim.llm.client import LLM
from crsim.llm.config import ModelConfig
from crsim.llm.errors import (
    LLMBadRequest,
    LLMConnectionError,
    LLMError,
    LLMModelNotFound,
    LLMRateLimited,
    LLMServerError,
    LLMTimeout,
)
from crsim.llm.providers.base import create_provider
from crsim.llm.providers.ollama import OllamaProvider, create
from crsim.llm.structured import generate_json
from crsim.llm.types import GenerationConfig, Usage, system, user
from llm_servers import DEFAULT_TEXT, OllamaLikeServer, Reply, closed_port_url

MODEL = "smollm2:135m"
MESSAGES = [system("You are a movie fan."), user("What should I watch tonight?")]  # 5 + 5 words


class Opinion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    genre: Literal["comedy", "drama", "horror"]
    liked: bool


@pytest.fixture(scope="module")
def running_ollama() -> Iterator[OllamaLikeServer]:
    server = OllamaLikeServer()
    with server.running():
        yield server


@pytest.fixture
def ollama(running_ollama: OllamaLikeServer) -> OllamaLikeServer:
    running_ollama.reset()
    return running_ollama


@asynccontextmanager
async def ollama_llm(base_url: str, **settings: Any) -> AsyncIterator[LLM]:
    """A client for one role on the `ollama` provider, built the way a run builds it."""
    config = ModelConfig(
        provider="ollama", model=settings.pop("model", MODEL), base_url=base_url, backoff=0.0, **settings
    )
    llm = LLM("user", config, create_provider(config))
    try:
        yield llm
    finally:
        await llm.provider.aclose()


async def test_request_follows_the_documented_chat_shape(ollama: OllamaLikeServer) -> None:
    schema = Opinion.model_json_schema()
    ollama.text = '{"genre": "drama", "liked": true}'
    generation = GenerationConfig(temperature=0.2, max_tokens=40, seed=7, stop=("\n\n",), json_schema=schema)
    async with ollama_llm(ollama.base_url, options={"num_ctx": 1024, "top_p": 0.9}) as llm:
        await llm.generate(MESSAGES, generation)
    assert ollama.requests == [
        {
            "model": MODEL,
            "messages": [
                {"role": "system", "content": "You are a movie fan."},
                {"role": "user", "content": "What should I watch tonight?"},
            ],
            "stream": False,
            "format": schema,
            "options": {
                "temperature": 0.2,
                "num_predict": 40,
                "seed": 7,
                "stop": ["\n\n"],
                "num_ctx": 1024,
                "top_p": 0.9,
            },
        }
    ]


async def test_unset_parameters_are_left_out(ollama: OllamaLikeServer) -> None:
    async with ollama_llm(ollama.base_url, temperature=0.5, max_tokens=64) as llm:
        await llm.generate(MESSAGES)
    (request,) = ollama.requests
    assert "format" not in request
    assert request["options"] == {"temperature": 0.5, "num_predict": 64}


async def test_response_is_mapped_with_usage_and_finish_reason(ollama: OllamaLikeServer) -> None:
    async with ollama_llm(ollama.base_url) as llm:
        full = await llm.generate(MESSAGES)
        cut = await llm.generate(MESSAGES, GenerationConfig(max_tokens=4))
    assert full.text == DEFAULT_TEXT
    assert full.usage == Usage(prompt_tokens=10, completion_tokens=len(DEFAULT_TEXT.split()))
    assert (full.model, full.finish_reason) == (MODEL, "stop")
    assert full.raw is not None and full.raw["done"] is True and full.raw["eval_count"] == 9
    assert full.latency > 0
    assert cut.text == "Try Heat from 1995"
    assert (cut.usage.completion_tokens, cut.finish_reason) == (4, "length")


async def test_missing_prompt_count_reads_as_zero(ollama: OllamaLikeServer) -> None:
    """Ollama leaves prompt_eval_count out when the prompt came from its cache."""
    body = '{"model": "smollm2:135m", "message": {"role": "assistant", "content": "Heat."}, "done": true, '
    body += '"done_reason": "stop", "eval_count": 3}'
    ollama.plan.append(Reply(raw_body=body))
    async with ollama_llm(ollama.base_url) as llm:
        completion = await llm.generate(MESSAGES)
    assert (completion.text, completion.usage) == ("Heat.", Usage(prompt_tokens=0, completion_tokens=3))


async def test_generate_json_sends_the_schema_as_format(ollama: OllamaLikeServer) -> None:
    ollama.text = '{"genre": "horror", "liked": false}'
    async with ollama_llm(ollama.base_url) as llm:
        result = await generate_json(llm, MESSAGES, Opinion)
    assert result.unwrap() == Opinion(genre="horror", liked=False)
    assert [r["format"] for r in ollama.requests] == [Opinion.model_json_schema()]


async def test_unknown_model_is_model_not_found_and_not_retried(ollama: OllamaLikeServer) -> None:
    async with ollama_llm(ollama.base_url, model="llama9:70b", max_retries=3) as llm:
        with pytest.raises(LLMModelNotFound) as caught:
            await llm.generate(MESSAGES)
    message = str(caught.value)
    assert "'llama9:70b'" in message and "HTTP 404" in message and "model 'llama9:70b' not found" in message
    assert len(ollama.requests) == 1


async def test_base_url_with_v1_gets_a_hint(ollama: OllamaLikeServer) -> None:
    async with ollama_llm(f"{ollama.base_url}/v1", max_retries=0) as llm:
        with pytest.raises(LLMModelNotFound, match="without /v1"):
            await llm.generate(MESSAGES)
    assert ollama.requests == []


async def test_connection_refused(ollama: OllamaLikeServer) -> None:
    url = closed_port_url()
    async with ollama_llm(url, max_retries=1) as llm:
        with pytest.raises(LLMConnectionError) as caught:
            await llm.generate(MESSAGES)
    assert f"{url}/api/chat" in str(caught.value) and "ollama serve" in str(caught.value)
    assert llm.calls == 2  # connection errors are retried


@pytest.mark.parametrize(("status", "error_type"), [(429, LLMRateLimited), (500, LLMServerError)])
async def test_retryable_statuses_are_retried(
    ollama: OllamaLikeServer, status: int, error_type: type[LLMError]
) -> None:
    ollama.plan.extend([Reply(status, "busy, try later"), Reply()])
    async with ollama_llm(ollama.base_url, max_retries=2) as llm:
        completion = await llm.generate(MESSAGES)
    assert completion.text == DEFAULT_TEXT and len(ollama.requests) == 2
    ollama.reset()
    ollama.plan.extend([Reply(status, "busy, try later")] * 2)
    async with ollama_llm(ollama.base_url, max_retries=1) as llm:
        with pytest.raises(error_type, match=f"HTTP {status}: busy, try later"):
            await llm.generate(MESSAGES)
    assert len(ollama.requests) == 2


async def test_rejected_request_is_bad_request_with_the_server_message(ollama: OllamaLikeServer) -> None:
    async with ollama_llm(ollama.base_url, options={"num_ctx": -1}) as llm:
        with pytest.raises(LLMBadRequest, match="HTTP 400: invalid option num_ctx: -1"):
            await llm.generate(MESSAGES)
    assert len(ollama.requests) == 1


async def test_grammar_is_refused_before_sending(ollama: OllamaLikeServer) -> None:
    async with ollama_llm(ollama.base_url) as llm:
        with pytest.raises(LLMBadRequest, match=r"GBNF.*json_schema"):
            await llm.generate(MESSAGES, GenerationConfig(grammar='root ::= "yes" | "no"'))
    assert ollama.requests == []


async def test_slow_answer_times_out(ollama: OllamaLikeServer) -> None:
    """The client's deadline ends a call the server holds (the provider keeps no timer of its own)."""
    ollama.plan.append(Reply(delay=10.0))
    async with ollama_llm(ollama.base_url, timeout=1.0, max_retries=0) as llm:
        with pytest.raises(LLMTimeout, match=r"no answer within 1 s"):
            await llm.generate(MESSAGES)


async def test_broken_answer_is_an_error_not_an_empty_text(ollama: OllamaLikeServer) -> None:
    ollama.plan.append(Reply(raw_body='{"done": true}'))
    async with ollama_llm(ollama.base_url) as llm:
        with pytest.raises(LLMError, match="not an Ollama chat response"):
            await llm.generate(MESSAGES)


def test_create_checks_the_settings() -> None:
    with pytest.raises(ConfigError, match="needs a model name"):
        create(ModelConfig(provider="ollama"))
    with pytest.raises(ConfigError, match=r"\['seed', 'temperature'\]"):
        create(ModelConfig(provider="ollama", model=MODEL, options={"temperature": 0, "seed": 1}))
    provider = create(ModelConfig(provider="ollama", model=MODEL))
    assert isinstance(provider, OllamaProvider)
    assert provider.identity() == f"ollama:http://127.0.0.1:11434:{MODEL}"
    assert provider.url == "http://127.0.0.1:11434/api/chat"
