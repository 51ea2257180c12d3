"""`LLM`: one role's model behind the single async `generate` call; `LLMHub`: the roles of a run.

`generate` resolves the generation parameters against the role's defaults, then answers from the
cache or calls the provider under the endpoint's concurrency limit, with a timeout per attempt and
retries with exponential backoff for retryable errors only. Every call, cached or failed, is
recorded in the current dialogue's usage log.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

from crsim.llm import usage
from crsim.llm.cache import ResponseCache, cache_key
from crsim.llm.config import STANDARD_ROLES, CacheConfig, LLMSettings, ModelConfig
from crsim.llm.errors import LLMError, LLMTimeout
from crsim.llm.providers.base import Provider, create_provider
from crsim.llm.types import Completion, GenerationConfig, Message, ResolvedGeneration
from crsim.model.dialogue import LLMCall
from crsim.model.text import clean_text, clean_value, surely_clean

#: The longest wait between two attempts, in seconds.
MAX_BACKOFF_S = 60.0


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, LLMError) and exc.retryable


def _cleaned(completion: Completion) -> Completion:
    """A provider's answer made safe to record and cache: lone surrogates in its text and raw body
    replaced with U+FFFD and counted (every provider's answer passes here)."""
    text, in_text = clean_text(completion.text)
    raw, in_raw = (completion.raw, 0) if surely_clean(completion.raw) else clean_value(completion.raw)
    if not in_text + in_raw:
        return completion
    update = {"text": text, "raw": raw, "replaced_code_points": in_text + in_raw}
    return completion.model_copy(update=update)


class EndpointLimit:
    """The calls in flight to one endpoint, at most `size`, as a semaphore per event loop: a hub
    outlives an event loop (`crsim run` holds its dialogues in one and scores them in the next), and
    an asyncio semaphore that once made a call wait belongs to the loop it waited in."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def semaphore(self) -> asyncio.Semaphore:
        """The running loop's semaphore (a new loop gets a new one)."""
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._loop is not loop:
            self._semaphore, self._loop = asyncio.Semaphore(self.size), loop
        return self._semaphore


class LLM:
    """The model behind one role; shares provider, limit and cache with roles on the same endpoint."""

    def __init__(
        self,
        role: str,
        config: ModelConfig,
        provider: Provider,
        *,
        cache: ResponseCache | None = None,
        limit: EndpointLimit | None = None,
        cache_source: Callable[[], ResponseCache | None] | None = None,
    ) -> None:
        self.role, self.config, self.provider = role, config, provider
        self._cache = cache
        # A hub's roles look their cache up at each call: a component may take its role when it is
        # built, before the run folder (and so the cache's file) is known.
        self._cache_source = cache_source
        self._limit = limit or EndpointLimit(config.max_concurrency)
        # the strategies are stateless: built once, not per call (building them per call was ~2% of a
        # call's CPU at 64 in flight, bench/llm_overhead.py)
        self._stop = stop_after_attempt(config.max_retries + 1)
        self._wait = wait_exponential(multiplier=config.backoff, max=MAX_BACKOFF_S)
        self._retry = retry_if_exception(_retryable)
        self._inflight: dict[str, asyncio.Future[Completion]] = {}
        self._open: Callable[[], Awaitable[None]] | None = getattr(provider, "open", None)
        # Provider options (e.g. Ollama's num_ctx, top_k) change answers, so they are part of the key.
        options = json.dumps(config.options, sort_keys=True, default=str) if config.options else ""
        self._identity = provider.identity() + (f"|options={options}" if options else "")
        self.calls = 0  # provider calls made (cache hits and joined duplicates excluded)

    @property
    def cache(self) -> ResponseCache | None:
        """The response cache the calls go through (the hub's, once it is known)."""
        return self._cache_source() if self._cache_source is not None else self._cache

    @cache.setter
    def cache(self, cache: ResponseCache | None) -> None:
        self._cache, self._cache_source = cache, None

    def describe(self) -> str:
        where = f" at {self.config.base_url}" if self.config.base_url else ""
        return f"LLM role '{self.role}' ({self.config.provider} model {self.config.label()!r}{where})"

    def resolve(self, config: GenerationConfig | None) -> ResolvedGeneration:
        given = config or GenerationConfig()
        return ResolvedGeneration(
            temperature=self.config.temperature if given.temperature is None else given.temperature,
            max_tokens=given.max_tokens or self.config.max_tokens,
            stop=given.stop,
            seed=self.config.seed if given.seed is None else given.seed,
            json_schema=given.json_schema,
            grammar=given.grammar,
        )

    async def generate(self, messages: list[Message], config: GenerationConfig | None = None) -> Completion:
        """One completion for `messages`. Raises an `LLMError` subclass that says what failed."""
        generation = self.resolve(config)
        key = cache_key(self._identity, messages, generation, usage.current_trial())
        cached = self.cache.get(key) if self.cache is not None else None
        if cached is not None:
            self._record(cached)
            return cached
        pending = self._inflight.get(key)
        if pending is not None:  # the same request is already on its way: share its answer
            completion = await asyncio.shield(pending)
            completion = completion.model_copy(update={"cached": True, "latency": 0.0})
            self._record(completion)
            return completion
        future: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            completion = await self._call(messages, generation)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: joined waiters re-raise it themselves
            self._record(None, error=type(exc).__name__)
            raise
        finally:
            del self._inflight[key]
        future.set_result(completion)
        if self.cache is not None:
            self.cache.put(key, completion)
        self._record(completion)
        return completion

    async def _call(self, messages: list[Message], generation: ResolvedGeneration) -> Completion:
        """The provider's answer, with up to `max_retries` retries of retryable errors, the n-th after
        `backoff * 2**(n-1)` seconds (at most 60), by tenacity with the policy built once per model."""
        try:
            retrying = AsyncRetrying(stop=self._stop, wait=self._wait, retry=self._retry, reraise=True)
            async for attempt in retrying:
                with attempt:
                    return await self._attempt(messages, generation)
        except LLMError as exc:
            if type(exc).__init__ is not LLMError.__init__:
                raise
            raise type(exc)(f"{self.describe()}: {exc}") from exc
        raise AssertionError("unreachable: tenacity re-raises the last error")

    async def _attempt(self, messages: list[Message], generation: ResolvedGeneration) -> Completion:
        """One provider call under the endpoint's limit and the call's timeout. The timeout starts
        when the request is sent: the provider's set-up (`open`, if it has one: its HTTP client, a
        TLS context) is done first, outside it."""
        async with self._limit.semaphore():
            self.calls += 1
            if self._open is not None:
                await self._open()
            started = time.perf_counter()
            try:
                completion = await asyncio.wait_for(
                    self.provider.complete(messages, generation), self.config.timeout
                )
            except TimeoutError:
                raise LLMTimeout(f"no answer within {self.config.timeout:g} s") from None
        latency = round(time.perf_counter() - started, 6)
        return _cleaned(completion).model_copy(update={"latency": latency})

    def _record(self, completion: Completion | None, error: str | None = None) -> None:
        log = usage.current()
        call = LLMCall(
            role=self.role,
            model=completion.model if completion and completion.model else self.config.label(),
            prompt_tokens=completion.usage.prompt_tokens if completion else 0,
            completion_tokens=completion.usage.completion_tokens if completion else 0,
            latency_s=completion.latency if completion else 0.0,
            cached=completion.cached if completion else False,
            error=error,
            replaced_code_points=completion.replaced_code_points if completion else 0,
        )
        price = self.config.price_per_million_tokens
        cost = (
            None
            if price is None
            else 0.0
            if call.cached
            else price.of(call.prompt_tokens, call.completion_tokens)
        )
        usage.count(call, cost)
        if log is not None:
            log.add(call)


class LLMHub:
    """The models of a run, by role, built on first use from `LLMSettings`.

    Roles naming the same provider configuration share one provider object; calls to one endpoint
    share one concurrency limit; all share one response cache.
    """

    def __init__(self, settings: LLMSettings, *, cache_path: Path | None = None) -> None:
        self.settings = settings
        self._cache_config: CacheConfig = settings.cache
        self._cache_path = settings.cache.path or cache_path
        self._cache: ResponseCache | None = None
        self._providers: dict[str, Provider] = {}
        self._limits: dict[str, EndpointLimit] = {}
        self._roles: dict[str, LLM] = {}

    @property
    def cache(self) -> ResponseCache | None:
        if self._cache is None and self._cache_config.mode != "off" and self._cache_path is not None:
            self._cache = ResponseCache(self._cache_path, self._cache_config.mode)
        return self._cache

    @property
    def roles(self) -> dict[str, LLM]:
        """The roles used so far, by name (each LLM counts its `calls`)."""
        return dict(self._roles)

    def set_cache_path(self, path: Path) -> None:
        """Where the cache lives when the config leaves it open (the run folder, known only later)."""
        if self.settings.cache.path is None and self._cache is None:
            self._cache_path = path

    def role(self, name: str) -> LLM:
        if name not in self._roles:
            config = self.settings.for_role(name)
            self._roles[name] = LLM(
                name,
                config,
                self.provider(config),
                limit=self._limit(config),
                cache_source=lambda: self.cache,
            )
        return self._roles[name]

    def provider(self, config: ModelConfig) -> Provider:
        """Create (or reuse) the provider of a config; configuration errors surface here, before a run."""
        key = config.client + config.model_dump_json(
            exclude={"temperature", "max_tokens", "seed", "timeout", "max_retries", "backoff"}
        )
        if key not in self._providers:
            self._providers[key] = create_provider(config)
        return self._providers[key]

    def _limit(self, config: ModelConfig) -> EndpointLimit:
        return self._limits.setdefault(config.endpoint(), EndpointLimit(config.max_concurrency))

    def check(self, roles: list[str] | None = None) -> None:
        """Build the providers of `roles` (default: the standard ones in use) so bad settings fail early."""
        for name in roles if roles is not None else list(STANDARD_ROLES):
            self.provider(self.settings.for_role(name))

    async def aclose(self) -> None:
        """Close the providers' connections and the cache. The hub stays usable: a later call (in
        another event loop, e.g. the scoring after a run's dialogues) opens them again."""
        for provider in self._providers.values():
            await provider.aclose()
        if self._cache is not None:
            self._cache.close()
