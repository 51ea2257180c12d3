"""`openai`: any OpenAI-compatible chat endpoint (OpenAI, vLLM, llama.cpp server, LM Studio, Ollama /v1).

Chat completions are posted with crsim's HTTP transport (`direct_client`, on aiohttp); `client: sdk`
sends the same requests through the official SDK instead (`openai_sdk`), with the same answers and
errors. The API key is read only from an environment variable (`api_key_env`, default
OPENAI_API_KEY), stripped and checked when the provider is built (`crsim.redact.secret_from_env`: a
value a header cannot carry is a config error). Without `base_url` the endpoint is OpenAI itself and
a missing key fails each call with `LLMAuthError`, so a run records the error per dialogue instead of
stopping; with a `base_url` (local servers mostly want no key) a placeholder is sent. Redirects are
followed only within the endpoint's own origin (scheme, host, port); a redirect to another host is
refused before anything is sent there (`LLMRedirectRefused`). An answer over `MAX_ANSWER_BYTES`
(decoded) is an error, read no further.

How generation parameters travel (`openai_protocol.OpenAIEndpoint.body`):
- `json_schema` -> `response_format={"type": "json_schema", ...}`; strict only when the schema
  meets OpenAI's strict rules (every object closed, every property required), since OpenAI rejects
  strict schemas that do not; llama.cpp server and vLLM constrain decoding either way.
- `grammar` (GBNF) -> the non-standard body field `grammar`, which llama.cpp server and vLLM accept;
  OpenAI itself rejects it (HTTP 400 -> `LLMBadRequest`).
- `config.options` -> extra body fields (e.g. vLLM `top_k`, llama.cpp `min_p`).
"""

from __future__ import annotations

import json

from crsim.llm.config import ModelConfig
from crsim.llm.errors import missing_dependency
from crsim.llm.providers import direct_client
from crsim.llm.providers.base import MAX_REDIRECTS, Provider
from crsim.llm.providers.direct_client import MAX_ANSWER_BYTES
from crsim.llm.providers.openai_protocol import (
    OpenAIEndpoint,
    check_config,
    error_text,
    response_format,
    strict_compatible,
)
from crsim.llm.types import Completion, Message, ResolvedGeneration

__all__ = ["OpenAIProvider", "create", "response_format", "strict_compatible"]


class OpenAIProvider(OpenAIEndpoint):
    """One OpenAI-compatible endpoint and model, on the endpoint's `direct_client.Client` (one
    connection pool per endpoint, whatever the models and roles calling it)."""

    _client: direct_client.Client | None = None

    async def open(self) -> None:
        """Build the client and its session (and, for https, take the TLS context) before a first call."""
        await self._http().open()

    async def complete(self, messages: list[Message], generation: ResolvedGeneration) -> Completion:
        client = self._http()
        # encoded as httpx encodes `json=`
        payload = json.dumps(
            self.body(messages, generation), ensure_ascii=False, separators=(",", ":"), allow_nan=False
        ).encode()
        answer = await client.post_json("chat/completions", payload)
        if not 200 <= answer.status < 300:
            raise self.status_error(answer.status, error_text(answer.status, answer.body))
        return self.completion(self.parse(answer.body))

    def _http(self) -> direct_client.Client:
        if self._client is None:
            headers = {"Authorization": f"Bearer {self.api_key()}", "Accept": "application/json"}
            self._client = direct_client.acquire(
                self.base_url,
                {**headers, "User-Agent": "crsim"},
                max_redirects=MAX_REDIRECTS,
                cap=MAX_ANSWER_BYTES,
            )
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await direct_client.release(client)


def create(config: ModelConfig) -> Provider:
    """Check the settings (and that the SDK is installed, when `client` is "sdk"); no network and no
    key is needed yet."""
    model = check_config(config)
    if config.client != "sdk":
        return OpenAIProvider(config, model)
    try:
        import openai  # noqa: F401
    except ImportError:
        raise missing_dependency("openai", "openai", "pip install 'crsim[llm]'") from None
    from crsim.llm.providers.openai_sdk import OpenAISDKProvider

    return OpenAISDKProvider(config, model)
