"""What the `openai` provider's own HTTP client does beyond the SDK path (whose other behaviour
tests/llm/test_llm_openai.py checks on both): a cap on the answer's size, and no SDK needed.
Real servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import sys

import pytest

from crsim.llm.client import LLM
from crsim.llm.config import ModelConfig
from crsim.llm.errors import LLMAnswerTooLarge
from crsim.llm.providers import openai
from crsim.llm.providers.base import create_provider
from crsim.llm.types import system, user
from llm_servers import OpenAILikeServer, Reply

MESSAGES = [system("You are a movie fan."), user("What should I watch tonight?")]


def _llm(base_url: str, **settings: object) -> LLM:
    config = ModelConfig.model_validate(
        {"provider": "openai", "model": "tiny-chat", "base_url": base_url, "backoff": 0.0, **settings}
    )
    return LLM("user", config, create_provider(config))


async def test_an_answer_over_the_cap_is_an_error_and_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(openai, "MAX_ANSWER_BYTES", 4096)
    server = OpenAILikeServer()
    answer = '{{"choices": [{{"message": {{"role": "assistant", "content": "hi"}}}}], "padding": "{}"}}'
    with server.running():
        server.plan.extend(
            [Reply(raw_body=answer.format("x" * 5000)), Reply(raw_body=answer.format("x" * 3000))]
        )
        llm = _llm(server.base_url + "/v1", max_retries=3)
        try:
            with pytest.raises(LLMAnswerTooLarge, match="more than 4096 bytes"):
                await llm.generate(MESSAGES)
            assert len(server.requests) == 1  # not retried: the same answer would come again
            assert (await llm.generate(MESSAGES)).text == "hi"  # under the cap: read as usual
        finally:
            await llm.provider.aclose()


async def test_concurrent_calls_need_no_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Concurrent calls without the SDK installed: the default path does not import it."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setitem(sys.modules, "openai", None)  # as if the package were not installed
    server = OpenAILikeServer()
    with server.running():
        llm = _llm(server.base_url + "/v1", max_concurrency=16)
        try:
            answers = await asyncio.gather(*(llm.generate([user(f"film {i}?")]) for i in range(10)))
        finally:
            await llm.provider.aclose()
    assert len(answers) == 10 and len(server.requests) == 10
    assert server.authorizations == ["Bearer no-key"] * 10
