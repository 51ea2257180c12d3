"""The `openai` provider through the official SDK (`client: sdk`), the fallback to crsim's own
transport: the same requests, answers and errors (`openai_protocol`), sent by `AsyncOpenAI` with its
own retries switched off, because the crsim client decides about retries and timeouts.

Concurrent calls are spread over several SDK clients, each with its own connection pool, at most
`CALLS_PER_CLIENT` calls in flight on one: the SDK's httpx pool re-scans every connection it holds
whenever a request arrives or leaves, so one pool serving 64 concurrent calls spent milliseconds of
CPU per call on that alone (bench/llm_overhead.py). For `https://` the clients share the process's
one TLS context (`direct_client.tls_context`); for `http://` none is built (the clients' same-origin
hook refuses any request to another scheme, so no TLS connection can be opened).
"""

from __future__ import annotations

from typing import Any

from crsim.llm.errors import (
    LLMConnectionError,
    LLMError,
    LLMProtocolError,
    LLMRedirectRefused,
    LLMTimeout,
)
from crsim.llm.providers.base import MAX_REDIRECTS, RedirectRefused, same_origin_hook
from crsim.llm.providers.direct_client import tls_context
from crsim.llm.providers.openai_protocol import OpenAIEndpoint, server_message
from crsim.llm.types import Completion, Message, ResolvedGeneration

#: Calls in flight on one SDK client (one connection pool) before the next call opens another client.
CALLS_PER_CLIENT = 4


class OpenAISDKProvider(OpenAIEndpoint):
    """One OpenAI-compatible endpoint and model; SDK clients are built as concurrent calls need them."""

    def __init__(self, config: Any, model: str) -> None:
        super().__init__(config, model)
        self._clients: list[Any] = []  #: `AsyncOpenAI` clients
        self._in_flight: list[int] = []  #: calls under way on each client, by index

    async def open(self) -> None:
        """Build the first SDK client before a first call, so that a call's deadline does not pay for it."""
        if not self._clients:
            self._clients.append(self._new_client())
            self._in_flight.append(0)

    async def complete(self, messages: list[Message], generation: ResolvedGeneration) -> Completion:
        from openai import OpenAIError

        index = self._client_index()
        client = self._clients[index]
        self._in_flight[index] += 1
        try:
            # The SDK's low-level `post`: same endpoint, auth, errors and connection pool as
            # `chat.completions.create`, without re-validating the request through its TypedDict
            # transform and the answer through its pydantic models, which cost several ms of CPU per
            # call (bench/llm_overhead.py); crsim validates the answer's fields itself.
            response = await client.post(
                "/chat/completions", cast_to=object, body=self.body(messages, generation)
            )
        except OpenAIError as exc:
            raise self._translate(exc) from exc
        except RedirectRefused as exc:  # raised by the client's request hook; the SDK passes it on
            raise LLMRedirectRefused(str(exc)) from None
        except RecursionError:  # the SDK parses the body with json.loads
            raise LLMProtocolError(f"{self.where()} answered with JSON nested too deeply") from None
        except ValueError as exc:
            reason = str(exc).split(":")[0]
            raise LLMProtocolError(
                f"{self.where()} answered with JSON that cannot be read ({reason})"
            ) from None
        finally:
            if index < len(self._clients) and self._clients[index] is client:  # not closed meanwhile
                self._in_flight[index] -= 1
        if isinstance(response, str):  # the SDK hands over a body not labelled as JSON as text
            response = self.parse(response.encode())
        return self.completion(response)

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

    def _new_client(self) -> Any:
        """One more SDK client (its own connection pool), built as every other one."""
        key = self.api_key()
        from openai import AsyncOpenAI, DefaultAsyncHttpxClient

        # base_url is always explicit, so OPENAI_BASE_URL in the environment cannot redirect calls
        # away from what the config (and the cache identity) says; nor can a redirect from the server.
        https = self.base_url.startswith("https:")
        http_client = DefaultAsyncHttpxClient(
            event_hooks={"request": [same_origin_hook(self.base_url)]},
            max_redirects=MAX_REDIRECTS,
            verify=tls_context() if https else False,  # http://: no TLS is ever used (see above)
        )
        return AsyncOpenAI(
            api_key=key,
            base_url=self.base_url,
            timeout=self.config.timeout,
            max_retries=0,
            http_client=http_client,
        )

    def _translate(self, exc: Any) -> LLMError:
        """The crsim error for an SDK error: what endpoint, what status, what the server said."""
        import openai

        where = str(exc.request.url) if isinstance(exc, openai.APIError) else self.where()
        if isinstance(exc, openai.APITimeoutError):  # a subclass of APIConnectionError: test it first
            return LLMTimeout(f"{where}: no answer within {self.config.timeout:g} s")
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, RedirectRefused):
                return LLMRedirectRefused(str(cause))
            if type(cause).__name__ == "TooManyRedirects":  # httpx or the SDK's httpx2
                return LLMRedirectRefused(f"{where}: more than {MAX_REDIRECTS} redirects")
            if type(cause).__name__ == "DecodingError":
                return LLMProtocolError(f"{where} answered with a body that cannot be decoded")
            return LLMConnectionError(f"cannot reach {where}: {cause or exc.message}")
        if not isinstance(exc, openai.APIStatusError):
            return LLMProtocolError(f"{where}: {type(exc).__name__}: {exc}")
        return self.status_error(exc.status_code, server_message(exc.body, exc.message))
