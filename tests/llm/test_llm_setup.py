"""A call's deadline measures the request, not crsim's set-up: HTTP clients and TLS contexts are built
before the deadline starts, a TLS context once per process and never for an `http://` endpoint.
Real servers on 127.0.0.1; the set-up is made slow on purpose (a TLS context that takes longer to
build than the deadline allows), so the tests assert what succeeds, not how long anything took.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from crsim.llm.client import LLM
from crsim.llm.config import ModelConfig
from crsim.llm.providers.base import create_provider
from crsim.llm.types import user
from llm_servers import (
    OllamaLikeServer,
    OpenAILikeServer,
    RawEndpoint,
    raw_response,
    self_signed_certificate,
    server_tls,
    serving_raw,
)

#: As many endpoints as the run that timed out every dialogue (issue 31).
ENDPOINTS = 26
#: The deadline of every call; far above what a call to 127.0.0.1 takes.
TIMEOUT_S = 2.0
#: How long building one TLS context takes here: longer than the deadline, so a context built
#: inside a deadline (or one per endpoint, on the event loop) ends calls with a timeout.
SLOW_TLS_S = 1.2 * TIMEOUT_S

VARIANTS = [("openai", "direct"), ("openai", "sdk"), ("ollama", "direct")]
IDS = [f"{p}-{c}" for p, c in VARIANTS]


@pytest.fixture
def tls_builds(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Count `ssl.create_default_context` calls (how httpx, the SDK and crsim build a verifying
    context) and make each one slow, as on a loaded machine."""
    import aiohttp  # noqa: F401 - builds aiohttp's own default context on import, once per process

    built: list[float] = []
    original: Callable[..., ssl.SSLContext] = ssl.create_default_context

    def slow(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        built.append(time.monotonic())
        time.sleep(SLOW_TLS_S)  # blocks the event loop, as the real ~40 ms of CPU do, only longer
        return original(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", slow)
    from crsim.llm.providers import direct_client

    direct_client._tls_context.cache_clear()
    return built


def _llm(provider: str, client: str, base_url: str, model: str) -> LLM:
    settings: dict[str, Any] = {"provider": provider, "model": model, "base_url": base_url}
    if client == "sdk":
        settings["client"] = "sdk"
    config = ModelConfig.model_validate({**settings, "timeout": TIMEOUT_S, "max_retries": 0})
    return LLM("user", config, create_provider(config))


@pytest.mark.parametrize(("provider", "client"), VARIANTS, ids=IDS)
async def test_many_http_endpoints_build_no_tls_context_and_none_times_out(
    provider: str, client: str, tls_builds: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """26 endpoints (one model each) called at once: every call is answered, none waits for a TLS
    context, because an `http://` endpoint builds none."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    models = [f"model-{i}" for i in range(ENDPOINTS)]
    server: OpenAILikeServer | OllamaLikeServer = (
        OllamaLikeServer(models=frozenset(models))
        if provider == "ollama"
        else OpenAILikeServer(models=frozenset(models))
    )
    with server.running() as url:
        base_url = url if provider == "ollama" else f"{url}/v1"
        llms = [_llm(provider, client, base_url, model) for model in models]
        try:
            answers = await asyncio.gather(*(llm.generate([user("A film?")]) for llm in llms))
        finally:
            for llm in llms:
                await llm.provider.aclose()
    assert [a.text for a in answers] == [server.text] * ENDPOINTS
    assert len(server.requests) == ENDPOINTS
    assert tls_builds == []


@pytest.mark.parametrize(("provider", "client"), VARIANTS, ids=IDS)
async def test_an_https_endpoint_is_not_timed_out_by_building_its_tls_context(
    provider: str,
    client: str,
    tls_builds: list[float],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three https endpoints whose one TLS context takes longer to build than the deadline: each
    call is answered (the deadline starts after the set-up), and the context is built once."""
    certificate = self_signed_certificate(tmp_path)
    if certificate is None:
        pytest.skip("openssl is needed to make a test certificate")
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    message = {"role": "assistant", "content": "Heat (1995)."}
    answer = (
        {"model": "m", "message": message, "done": True}
        if provider == "ollama"
        else {"choices": [{"message": message, "finish_reason": "stop"}]}
    )
    body = json.dumps(answer).encode()
    endpoint = RawEndpoint(raw_response(body))
    async with serving_raw(endpoint, server_tls(certificate)):
        base_url = endpoint.url if provider == "ollama" else f"{endpoint.url}/v1"
        llms = [_llm(provider, client, base_url, f"m{i}") for i in range(3)]
        try:
            answers = [await llm.generate([user("A film?")]) for llm in llms]
        finally:
            for llm in llms:
                await llm.provider.aclose()
    assert [a.text for a in answers] == ["Heat (1995)."] * 3
    assert endpoint.requests == 3
    assert len(tls_builds) == 1
