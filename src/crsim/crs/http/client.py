"""The transport of the HTTP adapters: requests under deadlines, retries and limits; a client per dialogue.

One `HTTPClient` per CRS object holds the settings and the concurrency limit; each dialogue holds its
own `httpx.AsyncClient` (its own cookie jar and connection) from `open_client` until the adapter hands
it back with `release_client`. A client handed back after a clean dialogue is kept, its cookie jar
emptied, and lent to the next dialogue, so its keep-alive connection carries on (no new TCP connection
and client per dialogue, as a browser or any pooled client does); two dialogues under way never share
a client, a cookie or a connection. A client whose last request did not end cleanly is closed.
Secrets come only from environment variables named in the params and are sent as headers; they
never appear in an error message, an annotation or a record.
"""

from __future__ import annotations

import asyncio
import ssl
import weakref
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from crsim.core.errors import ConfigError
from crsim.core.secrets import secret_from_env
from crsim.crs.http.body import ACCEPT_ENCODING, BodyDecoder, parse_json
from crsim.crs.http.errors import (
    CRSConnectionError,
    CRSHTTPError,
    CRSInvalidResponse,
    CRSRedirectError,
    CRSResponseTooLarge,
    CRSStatusError,
    CRSTimeoutError,
)
from crsim.crs.http.params import HTTPParams
from crsim.model.annotations import HTTP, REPLACED_CODE_POINTS

_MAX_SAME_HOST_REDIRECTS = 3


@dataclass
class _Failure:
    """One failed attempt, with whether the server may already have processed the message."""

    error: CRSHTTPError
    retryable: bool
    possibly_processed: bool


@dataclass
class ExchangeLog:
    """Retries of the requests behind one reply (annotation `HTTP` when there were any) and the
    code points replaced in its text (`REPLACED_CODE_POINTS` when not 0; model/annotations.py)."""

    retries: list[dict[str, Any]] = field(default_factory=list)
    replaced_code_points: int = 0

    def annotations(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        if self.retries:
            resent = any(r["possibly_processed"] for r in self.retries)
            HTTP.put(found, {"retries": list(self.retries), "message_possibly_resent": resent})
        if self.replaced_code_points:
            REPLACED_CODE_POINTS.put(found, self.replaced_code_points)
        return found


class HTTPClient:
    """Sends JSON requests for one CRS under its limits. Safe to share across dialogues."""

    def __init__(self, params: HTTPParams) -> None:
        self.params = params
        self._headers = _auth_headers(params)
        self._origin = _origin(params.base_url)
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ssl: ssl.SSLContext | None = None
        self._idle: list[httpx.AsyncClient] = []
        self._idle_loop: asyncio.AbstractEventLoop | None = None
        self._unclean: weakref.WeakSet[httpx.AsyncClient] = weakref.WeakSet()

    def __repr__(self) -> str:
        return f"HTTPClient({self.params.base_url!r})"

    def open_client(self) -> httpx.AsyncClient:
        """A client for one dialogue: one handed back by an earlier dialogue (its cookie jar empty,
        its keep-alive connection kept) or a new one. Hand it back with `release_client`."""
        idle = self._idle_clients()
        while idle:
            client = idle.pop()
            if not client.is_closed:
                return client
        return self._new_client()

    async def release_client(self, client: httpx.AsyncClient) -> None:
        """Take back a dialogue's client: kept for the next dialogue, with its cookies cleared, if
        its last request ended cleanly in this event loop; closed otherwise."""
        if client.is_closed:
            return
        if client in self._unclean or not self._same_loop():
            await client.aclose()
            return
        client.cookies.clear()
        self._idle_clients().append(client)

    async def aclose(self) -> None:
        """Close the clients kept between dialogues (at the end of a batch)."""
        idle, self._idle = self._idle, []
        if self._same_loop():
            for client in idle:
                await client.aclose()

    def _same_loop(self) -> bool:
        return self._idle_loop is None or self._idle_loop is asyncio.get_running_loop()

    def _idle_clients(self) -> list[httpx.AsyncClient]:
        """The kept clients of the running loop (a client's connections belong to its loop)."""
        loop = asyncio.get_running_loop()
        if self._idle_loop is not loop:
            self._idle, self._idle_loop = [], loop  # an ended loop's clients cannot be reused or closed
        return self._idle

    def _new_client(self) -> httpx.AsyncClient:
        # Every request runs under `_attempt`'s deadline of `timeout_s` for the whole attempt, which
        # starts before any socket operation, so httpx's own read/write/pool timeouts of `timeout_s`
        # could only fire after it: they are off (each costs a timer per socket operation, ~2% of
        # a request's CPU). The connect timeout stays: it is shorter and a retryable error kind.
        timeout = httpx.Timeout(None, connect=self.params.connect_timeout_s)
        if self._ssl is None:
            self._ssl = httpx.create_ssl_context()  # ~30 ms of CPU each time: build it once, not per dialogue
        return httpx.AsyncClient(
            base_url=self.params.base_url,
            timeout=timeout,
            follow_redirects=False,
            headers={"Accept-Encoding": ACCEPT_ENCODING, **self._headers},
            verify=self._ssl,
        )

    def _limit(self) -> asyncio.Semaphore:
        """The concurrency limit, created inside the running loop (a new loop gets a new one)."""
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._loop is not loop:
            self._semaphore, self._loop = asyncio.Semaphore(self.params.max_concurrency), loop
        return self._semaphore

    async def request_json(
        self, client: httpx.AsyncClient, method: str, path: str, payload: Any, log: ExchangeLog
    ) -> Any:
        """Send one request and return its parsed JSON body, retrying as the params allow.

        Lone surrogates in its strings are replaced with U+FFFD and counted in `log`.
        """
        data, replaced = parse_json(await self.request(client, method, path, payload, log))
        log.replaced_code_points += replaced
        return data

    async def request(
        self, client: httpx.AsyncClient, method: str, path: str, payload: Any, log: ExchangeLog
    ) -> bytes:
        """Send one request and return its raw body, retrying as the params allow."""
        attempts = self.params.max_retries + 1
        for attempt in range(1, attempts + 1):
            async with self._limit():
                outcome = await self._attempt(client, method, path, payload)
            if not isinstance(outcome, _Failure):
                return outcome
            may_retry = outcome.retryable and (self.params.retry_unsafe or not outcome.possibly_processed)
            if not may_retry or attempt == attempts:
                raise _final(outcome, attempt, log)
            log.retries.append(
                {
                    "request": f"{method} {path}",
                    "attempt": attempt,
                    "reason": str(outcome.error),
                    "possibly_processed": outcome.possibly_processed,
                }
            )
            await asyncio.sleep(self.params.retry_backoff_s * 2 ** (attempt - 1))
        raise AssertionError("unreachable")  # pragma: no cover

    async def _attempt(
        self, client: httpx.AsyncClient, method: str, path: str, payload: Any
    ) -> bytes | _Failure:
        self._unclean.add(client)  # until the reply is read: a failed or cancelled request leaves it
        try:
            async with asyncio.timeout(self.params.timeout_s):
                body = await self._send(client, method, path, payload)
            self._unclean.discard(client)
            return body
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            return _Failure(
                CRSConnectionError(f"cannot connect to {self._origin} ({type(exc).__name__})"), True, False
            )
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            error = CRSConnectionError(
                f"connection to {self._origin} lost mid-request ({type(exc).__name__})"
            )
            return _Failure(error, True, True)
        except (TimeoutError, httpx.TimeoutException):
            late = CRSTimeoutError(f"no complete reply from {self._origin} within {self.params.timeout_s:g}s")
            return _Failure(late, False, True)
        except _StatusFailure as exc:
            return exc.failure
        except CRSHTTPError as exc:
            return _Failure(exc, False, True)
        except httpx.DecodingError:
            return _Failure(
                CRSInvalidResponse("response body could not be decoded (DecodingError)"), False, True
            )
        except (httpx.HTTPError, httpx.InvalidURL) as exc:  # their messages may quote headers: keep out
            error = CRSConnectionError(f"request to {self._origin} failed ({type(exc).__name__})")
            return _Failure(error, False, True)

    async def _send(self, client: httpx.AsyncClient, method: str, path: str, payload: Any) -> bytes:
        url = path
        for _ in range(_MAX_SAME_HOST_REDIRECTS + 1):
            request = client.build_request(method, url, json=payload)
            response = await client.send(request, stream=True)
            try:
                if response.is_redirect:
                    url = self._redirect_target(response)
                    continue
                body = await self._read_capped(response)
            finally:
                await response.aclose()
            _check_status(response.status_code, method, path)
            return body
        raise CRSRedirectError(f"{method} {path}: more than {_MAX_SAME_HOST_REDIRECTS} redirects")

    def _redirect_target(self, response: httpx.Response) -> str:
        try:
            target = response.request.url.join(response.headers.get("location", ""))
        except httpx.InvalidURL:
            raise CRSRedirectError(f"refused a redirect from {self._origin} to an invalid URL") from None
        if _origin(str(target)) != self._origin:
            raise CRSRedirectError(f"refused a redirect from {self._origin} to another host ({target.host})")
        return str(target)

    async def _read_capped(self, response: httpx.Response) -> bytes:
        """The decoded body, read only as far as `max_response_bytes` of DECODED bytes allow.

        Raw chunks are inflated here with a bound on the output, so a small compressed body (a
        "gzip bomb") costs at most the cap in memory, never its full decompressed size.
        """
        limit = self.params.max_response_bytes
        decoder = BodyDecoder(response.headers.get("content-encoding", ""))
        declared = response.headers.get("content-length", "")
        if decoder.identity and declared.isdigit() and int(declared) > limit:
            raise CRSResponseTooLarge(f"response of {int(declared)} bytes exceeds the {limit}-byte limit")
        chunks, size = [], 0
        async for raw in response.aiter_raw():
            chunk = decoder.decode(raw, limit - size + 1)
            size += len(chunk)
            if size > limit:
                raise CRSResponseTooLarge(f"response exceeds the {limit}-byte limit (decoded)")
            chunks.append(chunk)
        decoder.finish()
        return b"".join(chunks)


class _StatusFailure(Exception):
    def __init__(self, failure: _Failure) -> None:
        self.failure = failure


def _check_status(status: int, method: str, path: str) -> None:
    if status >= 500:
        raise _StatusFailure(_Failure(CRSStatusError(f"{method} {path}: HTTP {status}"), True, True))
    if status >= 400:
        raise _StatusFailure(_Failure(CRSStatusError(f"{method} {path}: HTTP {status}"), False, False))


def _final(failure: _Failure, attempts: int, log: ExchangeLog) -> CRSHTTPError:
    """The error that ends the exchange; it says so when a resent message may have been processed."""
    error = failure.error
    if attempts > 1:
        resent = any(r["possibly_processed"] for r in log.retries)
        note = "; the server may have processed the message more than once" if resent else ""
        error = type(error)(f"{error} (after {attempts} attempts{note})")
    return error


def _origin(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{parts.hostname}:{port}"


def _auth_headers(params: HTTPParams) -> dict[str, str]:
    if params.api_key_env is None:
        return {}
    secret = secret_from_env(params.api_key_env)  # stripped, checked for a header, masked in output
    if secret is None:
        raise ConfigError(f"api_key_env: environment variable {params.api_key_env!r} is not set or empty")
    value = f"{params.auth_scheme} {secret}" if params.auth_scheme else secret
    return {params.auth_header: value}
