"""OpenAI's chat-completions protocol, shared by the `openai` provider's two ways of sending (crsim's
own client, `openai.py`, and the official SDK, `openai_sdk.py`): the request body, the key, how an
answer is read and what each status means.

Who is at fault is decided here (docs/metrics.md, "Who failed"): a body that is not a chat completion
(not JSON, unreadable JSON, `choices` missing or of the wrong type) and a status the protocol does
not use are `LLMProtocolError`s, the endpoint's fault like a 5xx; a completion whose text the
participant cannot use is the participant's (`LLMOutputError`, raised by `crsim.llm.structured`).
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
    LLMError,
    LLMModelNotFound,
    LLMProtocolError,
    LLMRateLimited,
    LLMServerError,
)
from crsim.llm.types import Completion, Message, ResolvedGeneration, Usage
from crsim.redact import secret_from_env

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
OPENAI_BASE_URL = "https://api.openai.com/v1"
#: Sent to servers given by `base_url` when the key variable is unset; servers and the SDK want some key.
PLACEHOLDER_KEY = "no-key"

#: Request fields the provider sets itself; `options` may not override them.
RESERVED = frozenset(
    {"model", "messages", "temperature", "max_tokens", "stop", "seed", "response_format", "grammar", "stream"}
)
#: Statuses that reject the request's content (bad parameters, a prompt too long, a bad grammar).
_REJECTED = frozenset({400, 413, 422})


def check_config(config: ModelConfig) -> str:
    """The model name of a valid `openai` config; `ConfigError` for a missing model, a `base_url`
    that is not http(s) or `options` that clash with the fields crsim sets."""
    from crsim.llm.providers.base import check_options

    if not config.model:
        raise ConfigError(
            "the 'openai' LLM provider needs a model name (`model`, e.g. gpt-4o-mini, or the name the "
            "server at base_url serves)"
        )
    if config.base_url is not None and not re.match(r"https?://[^/?#]", config.base_url):
        raise ConfigError(f"LLM base_url {config.base_url!r} is not an http:// or https:// URL")
    check_options(config, RESERVED, "LLM")
    return config.model


class OpenAIEndpoint:
    """One OpenAI-compatible endpoint and model: what to send and how to read what comes back."""

    name = "openai"

    def __init__(self, config: ModelConfig, model: str) -> None:
        self.config, self.model = config, model
        self.key_env = config.api_key_env or DEFAULT_KEY_ENV
        self._key = secret_from_env(self.key_env)
        self.base_url = config.base_url or OPENAI_BASE_URL

    def identity(self) -> str:
        return f"openai:{self.config.base_url or 'api.openai.com'}:{self.model}"

    def api_key(self) -> str:
        """The key to send: the variable's value, or a placeholder for a server given by `base_url`."""
        if self._key is not None:
            return self._key
        if self.config.base_url is None:
            raise LLMAuthError(
                f"environment variable {self.key_env} is not set; export the OpenAI API key there "
                f"(or name another variable in api_key_env, or point base_url at a local server)"
            )
        return PLACEHOLDER_KEY

    def body(self, messages: list[Message], generation: ResolvedGeneration) -> dict[str, Any]:
        """The request body; parameters left unset are not sent at all."""
        body: dict[str, Any] = {"model": self.model, "messages": list(messages), **self.config.options}
        if generation.grammar is not None:
            body["grammar"] = generation.grammar
        body["temperature"] = generation.temperature
        body["max_tokens"] = generation.max_tokens
        if generation.stop:
            body["stop"] = list(generation.stop)
        if generation.seed is not None:
            body["seed"] = generation.seed
        if generation.json_schema is not None:
            body["response_format"] = response_format(generation.json_schema)
        return body

    def where(self) -> str:
        return f"{self.base_url.rstrip('/')}/chat/completions"

    def parse(self, content: bytes) -> object:
        """The answer's JSON value; `LLMProtocolError` for a body that is not JSON or cannot be read."""
        try:
            return json.loads(content)
        except RecursionError:
            raise LLMProtocolError(f"{self.where()} answered with JSON nested too deeply") from None
        except ValueError as exc:  # not JSON, not UTF-8, an integer too long to convert
            reason = str(exc).split(":")[0]
            raise LLMProtocolError(
                f"{self.where()} answered with a body that is not JSON ({reason}): {_start(content)!r}"
            ) from None

    def completion(self, response: object) -> Completion:
        """Read a chat-completion body; anything that is not one is an `LLMProtocolError`."""
        try:
            if not isinstance(response, dict):
                raise TypeError("not a JSON object")
            choice = response["choices"][0]
            content = choice["message"].get("content")
            usage = response.get("usage") or {}
            finish = choice.get("finish_reason")
            if not isinstance(content, str | None) or not isinstance(finish, str | None):
                raise TypeError("content or finish_reason is not text")
            return Completion(
                text=content or "",
                usage=Usage(
                    prompt_tokens=int(usage.get("prompt_tokens") or 0),
                    completion_tokens=int(usage.get("completion_tokens") or 0),
                ),
                raw=response,
                model=str(response.get("model") or self.model),
                finish_reason=finish,
            )
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            raise LLMProtocolError(
                f"{self.where()} answered without a chat completion: {str(response)[:300]}"
            ) from None

    def status_error(self, status: int, said: str) -> LLMError:
        """The crsim error for a status other than 2xx, by what it means (429 and 5xx are retried)."""
        detail = f"{self.where()} answered HTTP {status}: {said}"
        if status in (401, 403):
            if self._key is None:
                detail += f" (no key was sent: environment variable {self.key_env} is not set)"
            return LLMAuthError(detail)
        if status == 404:
            return LLMModelNotFound(f"model {self.model!r} not found: {detail}")
        if status == 429:
            return LLMRateLimited(detail)
        if status >= 500:
            return LLMServerError(detail)
        if status in _REJECTED:
            return LLMBadRequest(detail)
        return LLMProtocolError(f"{detail} (a status a chat endpoint does not answer with)")


def _start(content: bytes) -> str:
    return content[:200].decode("utf-8", errors="replace")


def server_message(body: object, fallback: str) -> str:
    """The server's own error text: OpenAI's `{"error": {"message": ...}}` (the SDK unwraps `error`)."""
    if isinstance(body, dict):
        message = body.get("message") or body.get("error") or body.get("detail")
        if isinstance(message, str) and message:
            return message
        return str(body)[:300]
    if isinstance(body, str) and body.strip():
        return body.strip()[:300]
    return fallback


def error_text(status: int, content: bytes) -> str:
    """What the server said with an error status: OpenAI's `{"error": {"message": ...}}`, another
    JSON body, or the start of a text body."""
    text = content.decode("utf-8", errors="replace")
    try:
        body: object = json.loads(text)
    except (ValueError, RecursionError):
        body = text
    if isinstance(body, dict) and "error" in body:
        body = body["error"]
    return server_message(body, f"Error code: {status}")


def response_format(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's `json_schema` response format for a JSON schema (a pydantic model's, typically)."""
    title = schema.get("title")
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", title)[:64] if isinstance(title, str) and title else "answer"
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": schema, "strict": strict_compatible(schema)},
    }


def strict_compatible(schema: Any) -> bool:
    """Whether OpenAI's strict mode accepts `schema`: every object closed, every property required."""
    if isinstance(schema, list):
        return all(strict_compatible(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    properties = schema.get("properties")
    if isinstance(properties, dict) or schema.get("type") == "object":
        listed = set(properties) if isinstance(properties, dict) else set()
        if schema.get("additionalProperties") is not False or set(schema.get("required", ())) != listed:
            return False
    return all(strict_compatible(value) for value in schema.values())
