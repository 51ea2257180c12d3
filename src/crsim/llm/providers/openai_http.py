"""The `openai` provider's httpx path (`client: httpx`; what `client: direct`, the default, uses when a
proxy variable is set): chat completions posted with httpx directly, without the official SDK.

The request is the SDK path's (`OpenAIProvider`): the same body (messages, temperature, max_tokens,
stop, seed, `response_format` for a JSON schema, `grammar`, `options`), the same `Authorization:
Bearer` key or placeholder, the same endpoint `{base_url}/chat/completions`. So are the answers and
the errors: an error status becomes the same crsim error with the server's own words (429 and 5xx
retryable, retried by the crsim client), an unreachable server `LLMConnectionError`, a late answer
`LLMTimeout`, a redirect to another origin or past `MAX_REDIRECTS` `LLMRedirectRefused`, a body that
is not a chat completion `LLMError`. What the SDK adds per call and crsim does not need (building the
request through its option models with a deep copy of the body, its retry and header machinery) is
left out: about half of the CPU of a call (bench/llm_overhead.py, docs/performance.md).

One thing the SDK path does not do: an answer larger than `MAX_ANSWER_BYTES` (decoded) is an
error, read no further. Concurrent calls are spread over httpx clients of at most `CALLS_PER_CLIENT`
calls in flight, as the SDK path spreads them over SDK clients. The deadline of the whole call is the
crsim client's (`crsim.llm.client`), as for every provider.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from crsim.llm.errors import LLMConnectionError, LLMError, LLMRedirectRefused, LLMTimeout
from crsim.llm.providers.base import MAX_REDIRECTS, RedirectRefused, same_origin_hook
from crsim.llm.providers.openai import OPENAI_BASE_URL, OpenAIProvider, server_message
from crsim.llm.types import Completion, Message, ResolvedGeneration

#: Answers larger than this (decoded bytes) are an error: a chat completion is a few kilobytes.
MAX_ANSWER_BYTES = 8 * 1024 * 1024


class AnswerTooLarge(LLMError):
    """The answer's body exceeded `MAX_ANSWER_BYTES`; it was not read further."""


class OpenAIHTTPProvider(OpenAIProvider):
    """One OpenAI-compatible endpoint and model, called with httpx; clients are built as calls need them."""

    async def complete(self, messages: list[Message], generation: ResolvedGeneration) -> Completion:
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
            status, content = await self._post(client, body)
        except httpx.TimeoutException:
            raise LLMTimeout(f"{self._where()}: no answer within {self.config.timeout:g} s") from None
        except RedirectRefused as exc:  # raised by the client's request hook
            raise LLMRedirectRefused(str(exc)) from None
        except httpx.TooManyRedirects:
            raise LLMRedirectRefused(f"{self._where()}: more than {MAX_REDIRECTS} redirects") from None
        except httpx.TransportError as exc:
            raise LLMConnectionError(f"cannot reach {self._where()}: {exc or type(exc).__name__}") from exc
        except httpx.DecodingError:
            raise LLMError(f"{self._where()} answered with a body that cannot be decoded") from None
        finally:
            if index < len(self._clients) and self._clients[index] is client:  # not closed meanwhile
                self._in_flight[index] -= 1
        if status >= 400:
            raise self._status_error(self._where(), status, error_text(status, content))
        return self._completion(self._parse(content))

    async def aclose(self) -> None:
        clients, self._clients, self._in_flight = self._clients, [], []
        for client in clients:
            await client.aclose()

    def _new_client(self) -> httpx.AsyncClient:
        """One more httpx client (its own connection pool) for this endpoint, on the shared TLS context."""
        key = self._api_key()
        if self._tls is None:
            self._tls = httpx.create_ssl_context()  # ~40 ms of CPU: once, not per client
        base_url = self.config.base_url or OPENAI_BASE_URL
        return httpx.AsyncClient(
            base_url=base_url.rstrip("/") + "/",
            headers={"Authorization": f"Bearer {key}", "Accept": "application/json", "User-Agent": "crsim"},
            timeout=self.config.timeout,
            follow_redirects=True,
            max_redirects=MAX_REDIRECTS,
            event_hooks={"request": [same_origin_hook(base_url)]},
            verify=self._tls,
        )

    async def _post(self, client: httpx.AsyncClient, body: dict[str, Any]) -> tuple[int, bytes]:
        """POST the request; the status and the decoded body, read only as far as the cap allows."""
        async with client.stream("POST", "chat/completions", json=body) as response:
            chunks, size = [], 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > MAX_ANSWER_BYTES:
                    raise AnswerTooLarge(
                        f"{self._where()} answered with more than {MAX_ANSWER_BYTES} bytes; not read further"
                    )
                chunks.append(chunk)
            return response.status_code, b"".join(chunks)

    def _parse(self, content: bytes) -> object:
        """The answer's JSON value; a body that is not JSON is passed on as text (not a completion)."""
        try:
            return json.loads(content)
        except json.JSONDecodeError:
            return content.decode("utf-8", errors="replace")
        except (RecursionError, ValueError) as exc:  # nesting too deep, integers too long to convert
            reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).split(":")[0]
            raise LLMError(f"{self._where()} answered with JSON that cannot be read ({reason})") from None


def error_text(status: int, content: bytes) -> str:
    """What the server said with an error status: OpenAI's `{"error": {"message": ...}}`, another
    JSON body, or the start of a text body (as the SDK path reports it)."""
    text = content.decode("utf-8", errors="replace")
    try:
        body: object = json.loads(text)
    except (ValueError, RecursionError):
        body = text
    if isinstance(body, dict) and "error" in body:
        body = body["error"]  # the SDK unwraps `error` the same way
    return server_message(body, f"Error code: {status}")
