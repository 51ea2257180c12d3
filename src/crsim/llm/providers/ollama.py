"""`ollama`: Ollama's native chat API (`POST {base_url}/api/chat`, one non-streamed answer).

`json_schema` travels as Ollama's `format` (Ollama constrains decoding to it); temperature,
max_tokens (`num_predict`), seed and stop travel in `options`, together with `config.options`
(model options such as `num_ctx` or `top_p`). Ollama has no GBNF grammars: a call with `grammar`
fails with `LLMBadRequest` before anything is sent, so a grammar is never silently ignored; ask for
a `json_schema` instead. For Ollama's OpenAI-compatible `/v1` endpoint use the `openai` provider.

Ollama itself wants no key; behind a proxy that does, `api_key_env` names the variable whose value
goes out as `Authorization: Bearer <key>` (stripped and checked as for `openai`). Redirects are
followed only within the server's origin; one to another host is refused (`LLMRedirectRefused`).
"""

from __future__ import annotations

from typing import Any

import httpx

from crsim.errors import ConfigError
from crsim.llm.config import ModelConfig
from crsim.llm.errors import (
    LLMAuthError,
    LLMBadRequest,
    LLMConnectionError,
    LLMError,
    LLMModelNotFound,
    LLMRateLimited,
    LLMRedirectRefused,
    LLMServerError,
    LLMTimeout,
)
from crsim.llm.providers.base import MAX_REDIRECTS, RedirectRefused, check_options, same_origin_hook
from crsim.llm.types import Completion, Message, ResolvedGeneration, Usage
from crsim.redact import secret_from_env

DEFAULT_BASE_URL = "http://127.0.0.1:11434"

#: Model options the provider fills from the generation parameters; `config.options` may not set them.
_RESERVED_OPTIONS = frozenset({"temperature", "num_predict", "seed", "stop"})


class OllamaProvider:
    """One Ollama server and model; the HTTP client is built on the first call (inside the event loop)."""

    name = "ollama"

    def __init__(self, config: ModelConfig, model: str) -> None:
        self.config, self.model = config, model
        self.base_url = (config.base_url or DEFAULT_BASE_URL).rstrip("/")
        self.url = f"{self.base_url}/api/chat"
        key = secret_from_env(config.api_key_env) if config.api_key_env else None
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client: httpx.AsyncClient | None = None

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

    async def complete(self, messages: list[Message], generation: ResolvedGeneration) -> Completion:
        body = self.request_body(messages, generation)
        try:
            response = await self._http().post(self.url, json=body)
        except httpx.TimeoutException:
            raise LLMTimeout(f"{self.url}: no answer within {self.config.timeout:g} s") from None
        except RedirectRefused as exc:
            raise LLMRedirectRefused(str(exc)) from None
        except httpx.TooManyRedirects:
            raise LLMRedirectRefused(f"{self.url}: more than {MAX_REDIRECTS} redirects") from None
        except httpx.ConnectError as exc:
            raise LLMConnectionError(
                f"cannot reach Ollama at {self.url} ({exc}); is `ollama serve` running?"
            ) from exc
        except httpx.TransportError as exc:
            raise LLMConnectionError(f"{self.url}: connection failed: {type(exc).__name__}: {exc}") from exc
        if response.status_code != 200:
            raise self._status_error(response)
        return self._completion(response)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=self.config.timeout,
                limits=httpx.Limits(max_connections=self.config.max_concurrency),
                headers=self._headers,
                follow_redirects=True,
                max_redirects=MAX_REDIRECTS,
                event_hooks={"request": [same_origin_hook(self.base_url)]},
            )
        return self._client

    def _status_error(self, response: httpx.Response) -> LLMError:
        status, said = response.status_code, _error_text(response)
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
        return LLMBadRequest(detail)

    def _completion(self, response: httpx.Response) -> Completion:
        try:
            raw = response.json()
            message = raw["message"]
            text = message["content"]
        except (ValueError, KeyError, TypeError):
            raw, text = None, None
        if raw is None or not isinstance(text, str):
            raise LLMError(
                f"{self.url} answered HTTP 200 with a body that is not an Ollama chat response "
                f"(expected a JSON object with message.content): {response.text[:300]!r}"
            )
        return Completion(
            text=text,
            usage=Usage(
                prompt_tokens=_count(raw.get("prompt_eval_count")),
                completion_tokens=_count(raw.get("eval_count")),
            ),
            raw=raw,
            model=str(raw.get("model") or self.model),
            finish_reason=raw.get("done_reason"),
        )


def _count(value: Any) -> int:
    """A token count from the response; Ollama leaves `prompt_eval_count` out when the prompt was cached."""
    return value if isinstance(value, int) else 0


def _error_text(response: httpx.Response) -> str:
    """Ollama's `{"error": "..."}` message, else the start of the body."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return str(body["error"])
    return response.text.strip()[:300] or "(empty body)"


def create(config: ModelConfig) -> OllamaProvider:
    """Check the settings; nothing is sent until the first call."""
    if not config.model:
        raise ConfigError(
            "the 'ollama' LLM provider needs a model name (`model`, as `ollama list` shows it, "
            "e.g. smollm2:135m)"
        )
    check_options(config, _RESERVED_OPTIONS, "Ollama")
    return OllamaProvider(config, config.model)
