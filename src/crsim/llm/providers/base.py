"""The provider protocol: one raw chat call. Caching, retries, limits and accounting live in the client.

A provider turns `(messages, ResolvedGeneration)` into a `Completion` or raises one of the
`crsim.llm.errors` types (retryable ones for connection errors, 429 and 5xx; `LLMProtocolError` for
an answer that is not in the endpoint's protocol). A provider may also define `async def open()`:
set-up (an HTTP client, a TLS context) the client awaits before each call's deadline starts, so a
deadline measures the request, not crsim's set-up; it must be cheap once done. Providers import
their optional dependencies lazily, inside `create`, so `import crsim.llm` never needs them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol
from urllib.parse import urlsplit

from crsim.errors import ConfigError
from crsim.llm.config import ModelConfig
from crsim.llm.types import Completion, Message, ResolvedGeneration
from crsim.registry import Registry


class Provider(Protocol):
    """A chat endpoint. One object serves every role that names the same endpoint."""

    name: str

    async def complete(self, messages: list[Message], generation: ResolvedGeneration) -> Completion: ...

    def identity(self) -> str:
        """What identifies the model for the cache (e.g. endpoint and model name, or the weights file)."""
        ...

    async def aclose(self) -> None: ...


ProviderFactory = Callable[[ModelConfig], Provider]

#: The LLM providers by name: the `crsim.llm_provider` entry points (the built-ins openai, ollama,
#: local and scripted are declared in pyproject.toml), each naming a `create(config) -> Provider`
#: factory; a module is imported only when a config names its provider.
provider_catalogue: Registry[ProviderFactory] = Registry("llm_provider")


#: Redirects followed within one origin before a call fails (the HTTP CRS adapters allow as many).
MAX_REDIRECTS = 3


class RedirectRefused(Exception):
    """Raised by `same_origin_hook` inside the HTTP client; providers turn it into `LLMRedirectRefused`."""


def origin(url: str) -> str:
    """scheme://host:port of a URL, the default port filled in: what a redirect must not leave."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{parts.hostname}:{port}"


def same_origin_hook(base_url: str) -> Callable[[Any], Awaitable[None]]:
    """An httpx request hook (it runs before every request, redirects included) that refuses any
    request outside `base_url`'s origin, so a redirect cannot carry the prompt or the key elsewhere."""
    allowed = origin(base_url)

    async def check(request: Any) -> None:
        target = origin(str(request.url))
        if target != allowed:
            raise RedirectRefused(
                f"refused a redirect from {allowed} to another host ({target}); not followed"
            )

    return check


def check_options(config: ModelConfig, reserved: frozenset[str], label: str) -> None:
    """Refuse `options` that would silently override request fields crsim sets itself."""
    clashes = sorted(reserved & set(config.options))
    if clashes:
        raise ConfigError(
            f"{label} options {clashes} would override what crsim sends itself; use the model settings "
            f"(temperature, max_tokens, seed) or per-call GenerationConfig fields instead"
        )


def create_provider(config: ModelConfig) -> Provider:
    """Build the provider a model config names; configuration problems raise `ConfigError` here."""
    create = provider_catalogue.get(config.provider)
    return create(config)
