"""`openai`: any OpenAI-compatible chat endpoint (OpenAI, vLLM, llama.cpp server, LM Studio, Ollama /v1).

Calls go through the official SDK (`AsyncOpenAI`) with its own retries switched off, because the
crsim client decides about retries and timeouts. The API key is read only from an environment
variable (`api_key_env`, default OPENAI_API_KEY), stripped and checked when the provider is built
(`crsim.redact.secret_from_env`: a value a header cannot carry is a config error). Without `base_url`
the endpoint is OpenAI itself and a missing key fails each call with `LLMAuthError`, so a run records
the error per dialogue instead of stopping; with a `base_url` (local servers mostly want no key) a
placeholder is sent. Redirects are followed only within the endpoint's own origin (scheme, host,
port), as the HTTP CRS adapters do: a redirect to another host is refused before anything is sent
there (`LLMRedirectRefused`).

How generation parameters travel:
- `json_schema` -> `response_format={"type": "json_schema", ...}`; strict only when the schema
  meets OpenAI's strict rules (every object closed, every property required), since OpenAI rejects
  strict schemas that do not; llama.cpp server and vLLM constrain decoding either way.
- `grammar` (GBNF) -> the non-standard body field `grammar`, which llama.cpp server and vLLM accept;
  OpenAI itself rejects it (HTTP 400 -> `LLMBadRequest`).
- `config.options` -> extra body fields (e.g. vLLM `top_k`, llama.cpp `min_p`).

Concurrent calls are spread over several SDK clients, each with its own connection pool, at most
`CALLS_PER_CLIENT` calls in flight on one: the SDK's httpx pool re-scans every connection it holds
(and, for each, counts the idle ones) whenever a request arrives or leaves, so one pool serving 64
concurrent calls spent milliseconds of CPU per call on that alone (bench/llm_overhead.py). The
clients share one TLS context (building one costs ~40 ms of CPU) and behave alike in every other way.
"""

from __future__ import annotations

import importlib
import re
import ssl
from typing import TYPE_CHECKING, Any

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
    missing_dependency,
)
from crsim.llm.providers.base import MAX_REDIRECTS, RedirectRefused, check_options, same_origin_hook
from crsim.llm.types import Completion, Message, ResolvedGeneration, Usage
from crsim.redact import secret_from_env

if TYPE_CHECKING:
    from openai import OpenAIError
    from openai.types.chat.completion_create_params import ResponseFormat

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
OPENAI_BASE_URL = "https://api.openai.com/v1"
#: Sent to servers given by `base_url` when the key variable is unset; the SDK insists on some key.
PLACEHOLDER_KEY = "no-key"

#: Calls in flight on one SDK client (one connection pool) before the next call opens another client.
CALLS_PER_CLIENT = 4

#: Request fields the provider sets itself; `options` may not override them.
_RESERVED = frozenset(
    {"model", "messages", "temperature", "max_tokens", "stop", "seed", "response_format", "grammar", "stream"}
)


class OpenAIProvider:
    """One OpenAI-compatible endpoint and model; SDK clients are built as concurrent calls need them."""

    name = "openai"

    def __init__(self, config: ModelConfig, model: str) -> None:
        self.config, self.model = config, model
        self.key_env = config.api_key_env or DEFAULT_KEY_ENV
        self._key = secret_from_env(self.key_env)
        self._clients: list[Any] = []  #: SDK clients (`AsyncOpenAI`), or httpx clients in `openai_http`
        self._in_flight: list[int] = []  #: calls under way on each client, by index
        self._tls: ssl.SSLContext | None = None

    def identity(self) -> str:
        return f"openai:{self.config.base_url or 'api.openai.com'}:{self.model}"

    async def complete(self, messages: list[Message], generation: ResolvedGeneration) -> Completion:
        from openai import OpenAIError

        index = self._client_index()
        client = self._clients[index]
        parameters = self._parameters(generation)
        body = {
            "model": self.model,
            "messages": list(messages),
            **parameters.pop("extra_body", {}),
            **parameters,
        }
        self._in_flight[index] += 1
        try:
            # The SDK's low-level `post`: same endpoint, auth, errors and connection pool as
            # `chat.completions.create`, without re-validating the request through its TypedDict
            # transform and the answer through its pydantic models, which cost several ms of CPU per
            # call (bench/llm_overhead.py); crsim validates the answer's fields below.
            response = await client.post("/chat/completions", cast_to=object, body=body)
        except OpenAIError as exc:
            raise self._translate(exc) from exc
        except RedirectRefused as exc:  # raised by the client's request hook; the SDK passes it on
            raise LLMRedirectRefused(str(exc)) from None
        except (RecursionError, ValueError) as exc:  # the SDK parses the body with json.loads
            reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).split(":")[0]
            raise LLMError(f"{self._where()} answered with JSON that cannot be read ({reason})") from None
        finally:
            if index < len(self._clients) and self._clients[index] is client:  # not closed meanwhile
                self._in_flight[index] -= 1
        return self._completion(response)

    async def aclose(self) -> None:
        clients, self._clients, self._in_flight = self._clients, [], []
        for client in clients:
            await client.close()

    def _client_index(self) -> int:
        """The SDK client with the fewest calls in flight, or a new one when each has `CALLS_PER_CLIENT`."""
        if self._in_flight:
            index = min(range(len(self._in_flight)), key=self._in_flight.__getitem__)
            if self._in_flight[index] < CALLS_PER_CLIENT:
                return index
        self._clients.append(self._new_client())
        self._in_flight.append(0)
        return len(self._clients) - 1

    def _api_key(self) -> str:
        """The key to send: the variable's value, or a placeholder for a server given by `base_url`."""
        if self._key is not None:
            return self._key
        if self.config.base_url is None:
            raise LLMAuthError(
                f"environment variable {self.key_env} is not set; export the OpenAI API key there "
                f"(or name another variable in api_key_env, or point base_url at a local server)"
            )
        return PLACEHOLDER_KEY

    def _new_client(self) -> Any:
        """One more SDK client (its own connection pool), built as every other one."""
        key = self._api_key()
        from openai import AsyncOpenAI, DefaultAsyncHttpxClient

        if self._tls is None:
            self._tls = default_tls_context(DefaultAsyncHttpxClient)

        # base_url is always explicit, so OPENAI_BASE_URL in the environment cannot redirect calls
        # away from what the config (and the cache identity) says; nor can a redirect from the server.
        base_url = self.config.base_url or OPENAI_BASE_URL
        http_client = DefaultAsyncHttpxClient(
            event_hooks={"request": [same_origin_hook(base_url)]},
            max_redirects=MAX_REDIRECTS,
            verify=self._tls,
        )
        return AsyncOpenAI(
            api_key=key,
            base_url=base_url,
            timeout=self.config.timeout,
            max_retries=0,
            http_client=http_client,
        )

    def _parameters(self, generation: ResolvedGeneration) -> dict[str, Any]:
        """The optional create() arguments; parameters left unset are not sent at all."""
        parameters: dict[str, Any] = {
            "temperature": generation.temperature,
            "max_tokens": generation.max_tokens,
        }
        if generation.stop:
            parameters["stop"] = list(generation.stop)
        if generation.seed is not None:
            parameters["seed"] = generation.seed
        if generation.json_schema is not None:
            parameters["response_format"] = response_format(generation.json_schema)
        extra = dict(self.config.options)
        if generation.grammar is not None:
            extra["grammar"] = generation.grammar
        if extra:
            parameters["extra_body"] = extra
        return parameters

    def _completion(self, response: object) -> Completion:
        """Read a chat-completion body; anything that is not one is an error naming the endpoint."""
        try:
            if not isinstance(response, dict):
                raise TypeError("not a JSON object")
            choice = response["choices"][0]
            content = choice["message"].get("content") or ""
            usage = response.get("usage") or {}
            if not isinstance(content, str):
                raise TypeError("content is not text")
            return Completion(
                text=content,
                usage=Usage(
                    prompt_tokens=int(usage.get("prompt_tokens") or 0),
                    completion_tokens=int(usage.get("completion_tokens") or 0),
                ),
                raw=response,
                model=str(response.get("model") or self.model),
                finish_reason=choice.get("finish_reason"),
            )
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            raise LLMError(
                f"{self._where()} answered without a chat completion: {str(response)[:300]}"
            ) from None

    def _where(self) -> str:
        return f"{(self.config.base_url or OPENAI_BASE_URL).rstrip('/')}/chat/completions"

    def _translate(self, exc: OpenAIError) -> LLMError:
        """The crsim error for an SDK error: what endpoint, what status, what the server said."""
        import openai

        where = str(exc.request.url) if isinstance(exc, openai.APIError) else self._where()
        if isinstance(exc, openai.APITimeoutError):  # a subclass of APIConnectionError: test it first
            return LLMTimeout(f"{where}: no answer within {self.config.timeout:g} s")
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, RedirectRefused):
                return LLMRedirectRefused(str(cause))
            if type(cause).__name__ == "TooManyRedirects":  # httpx or the SDK's httpx2
                return LLMRedirectRefused(f"{where}: more than {MAX_REDIRECTS} redirects")
            return LLMConnectionError(f"cannot reach {where}: {cause or exc.message}")
        if not isinstance(exc, openai.APIStatusError):
            return LLMError(f"{where}: {type(exc).__name__}: {exc}")
        return self._status_error(where, exc.status_code, server_message(exc.body, exc.message))

    def _status_error(self, where: str, status: int, said: str) -> LLMError:
        """The crsim error for an error status, by what the status means (429 and 5xx are retried)."""
        detail = f"{where} answered HTTP {status}: {said}"
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
        return LLMBadRequest(detail)


def default_tls_context(client_class: type) -> ssl.SSLContext:
    """The TLS context `client_class` builds by default, from the library it is built on (httpx, or
    httpx2 in newer SDKs): the same verification, built once instead of once per client."""
    library = importlib.import_module(client_class.__mro__[1].__module__.partition(".")[0])
    context: ssl.SSLContext = library.create_ssl_context()
    return context


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


def response_format(schema: dict[str, Any]) -> ResponseFormat:
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


def create(config: ModelConfig) -> OpenAIProvider:
    """Check the settings (and that the SDK is installed, when `client` is "sdk"); no network and no
    key is needed yet. `client` "direct" (the default) posts with aiohttp (crsim's direct client)
    (`openai_direct`), or with httpx when a proxy variable is set; "httpx" with httpx (`openai_http`)."""
    if not config.model:
        raise ConfigError(
            "the 'openai' LLM provider needs a model name (`model`, e.g. gpt-4o-mini, or the name the "
            "server at base_url serves)"
        )
    check_options(config, _RESERVED, "LLM")
    if config.client == "direct":
        from crsim.llm.providers.openai_direct import OpenAIDirectProvider, proxy_configured

        if not proxy_configured():
            return OpenAIDirectProvider(config, config.model)
    if config.client in ("direct", "httpx"):
        from crsim.llm.providers.openai_http import OpenAIHTTPProvider

        return OpenAIHTTPProvider(config, config.model)
    try:
        import openai  # noqa: F401
    except ImportError:
        raise missing_dependency("openai", "openai", "pip install 'crsim[llm]'") from None
    return OpenAIProvider(config, config.model)
