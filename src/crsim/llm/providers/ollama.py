"""`ollama`: Ollama's native chat API (`POST {base_url}/api/chat`, one non-streamed answer).

`json_schema` travels as Ollama's `format` (Ollama constrains decoding to it); temperature,
max_tokens (`num_predict`), seed and stop travel in `options`, together with `config.options`
(model options such as `num_ctx` or `top_p`). Ollama has no GBNF grammars: a call with `grammar`
fails with `LLMBadRequest` before anything is sent, so a grammar is never silently ignored; ask for
a `json_schema` instead. For Ollama's OpenAI-compatible `/v1` endpoint use the `openai` provider.

Ollama itself wants no key; behind a proxy that does, `api_key_env` names the variable whose value
goes out as `Authorization: Bearer <key>` (stripped and checked as for `openai`). Requests go
through crsim's HTTP transport (`direct_client`), as the `openai` provider's do: the same size cap,
redirects followed only within the server's origin (one to another host is `LLMRedirectRefused`),
and a body that is not an Ollama chat response is the endpoint's fault (`LLMProtocolError`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from crsim.errors import ConfigError
from crsim.llm.config import ModelConfig
from crsim.llm.errors import (
    LLMAuthError,
    LLMBadRequest,
    LLMConnectionError,
    LLMError,
    LLMModelNotFound,
    LLMProtocolError,
    LLMRateLimited,
    LLMServerError,
)
from crsim.llm.providers import direct_client
from crsim.llm.providers.base import MAX_REDIRECTS, check_options
from crsim.llm.types import Completion, Message, ResolvedGeneration, Usage
from crsim.redact import secret_from_env

DEFAULT_BASE_URL = "http://127.0.0.1:11434"

#: Model options the provider fills from the generation parameters; `config.options` may not set them.
_RESERVED_OPTIONS = frozenset({"temperature", "num_predict", "seed", "stop"})


class OllamaProvider:
    """One Ollama server and model, on the server's `direct_client.Client` (shared with the other
    models called there; taken by `open`, before a first call)."""

    name = "ollama"

    def __init__(self, config: ModelConfig, model: str) -> None:
        self.config, self.model = config, model
        self.base_url = (config.base_url or DEFAULT_BASE_URL).rstrip("/")
        self.url = f"{self.base_url}/api/chat"
        key = secret_from_env(config.api_key_env) if config.api_key_env else None
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client: direct_client.Client | None = None

    def identity(self) -> str:
        return f"ollama:{self.base_url}:{self.model}"

    def request_body(self, messages: list[Message], generation: ResolvedGeneration) -> dict[str, Any]:
        """The /api/chat request for one call."""
        if generation.grammar is not None:
            raise LLMBadRequest(
                f"{self.url}: Ollama does not support GBNF grammars; ask for a json_schema instead "
                f"(sent as Ollama's `format`) or use a llama.cpp server through the 'openai' provider"
            )
        options: dict[str, Any] = {
            "temperature": generation.temperature,
            "num_predict": generation.max_tokens,
        }
        if generation.seed is not None:
            options["seed"] = generation.seed
        if generation.stop:
            options["stop"] = list(generation.stop)
        options.update(self.config.options)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "stream": False,
            "options": options,
        }
        if generation.json_schema is not None:
            body["format"] = generation.json_schema
        return body

    async def open(self) -> None:
        """Build the client and its session before a call, so that the call's deadline does not pay for it."""
        await self._http().open()

    async def complete(self, messages: list[Message], generation: ResolvedGeneration) -> Completion:
        body = self.request_body(messages, generation)
        payload = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        try:
            answer = await self._http().post_json("api/chat", payload)
        except LLMConnectionError as exc:
            raise LLMConnectionError(f"{exc}; is `ollama serve` running?") from exc
        if answer.status != 200:
            raise self._status_error(answer.status, answer.body)
        return self._completion(answer.body)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await direct_client.release(client)

    def _http(self) -> direct_client.Client:
        if self._client is None:
            headers = {**self._headers, "Accept": "application/json", "User-Agent": "crsim"}
            self._client = direct_client.acquire(
                self.base_url, headers, max_redirects=MAX_REDIRECTS, cap=direct_client.MAX_ANSWER_BYTES
            )
        return self._client

    def _status_error(self, status: int, content: bytes) -> LLMError:
        said = _error_text(content)
        detail = f"{self.url} answered HTTP {status}: {said}"
        if status == 404:
            hint = "" if "model" in said.lower() else " (is base_url the Ollama root, without /v1?)"
            return LLMModelNotFound(f"model {self.model!r} not found: {detail}{hint}")
        if status in (401, 403):
            return LLMAuthError(detail)
        if status == 429:
            return LLMRateLimited(detail)
        if status >= 500:
            return LLMServerError(detail)
        if status in (400, 413, 422):
            return LLMBadRequest(detail)
        return LLMProtocolError(f"{detail} (a status Ollama's chat API does not answer with)")

    def _completion(self, content: bytes) -> Completion:
        try:
            raw = json.loads(content)
            text = raw["message"]["content"]
            reason = raw.get("done_reason")
        except (ValueError, KeyError, TypeError, RecursionError, AttributeError):  # deep, huge integers
            raw, text, reason = None, None, None
        if raw is None or not isinstance(text, str) or not isinstance(reason, str | None):
            start = content[:300].decode("utf-8", errors="replace")
            raise LLMProtocolError(
                f"{self.url} answered HTTP 200 with a body that is not an Ollama chat response "
                f"(expected a JSON object with message.content): {start!r}"
            )
        return Completion(
            text=text,
            usage=Usage(
                prompt_tokens=_count(raw.get("prompt_eval_count")),
                completion_tokens=_count(raw.get("eval_count")),
            ),
            raw=raw,
            model=str(raw.get("model") or self.model),
            finish_reason=reason,
        )


def _count(value: Any) -> int:
    """A token count from the response; Ollama leaves `prompt_eval_count` out when the prompt was cached."""
    return value if isinstance(value, int) else 0


def _error_text(content: bytes) -> str:
    """Ollama's `{"error": "..."}` message, else the start of the body."""
    try:
        body = json.loads(content)
    except (ValueError, RecursionError):
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return str(body["error"])
    return content[:300].decode("utf-8", errors="replace").strip() or "(empty body)"


def create(config: ModelConfig) -> OllamaProvider:
    """Check the settings; nothing is sent until the first call."""
    if not config.model:
        raise ConfigError(
            "the 'ollama' LLM provider needs a model name (`model`, as `ollama list` shows it, "
            "e.g. smollm2:135m)"
        )
    if config.base_url is not None and not re.match(r"https?://[^/?#]", config.base_url):
        raise ConfigError(f"LLM base_url {config.base_url!r} is not an http:// or https:// URL")
    check_options(config, _RESERVED_OPTIONS, "Ollama")
    return OllamaProvider(config, config.model)
