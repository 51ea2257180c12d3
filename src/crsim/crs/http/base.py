"""Shared client logic for CRSs reached over HTTP: timeouts, retries, limits, secrets, linking.

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
import json
import ssl
import weakref
import zlib
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
from pydantic import Field, field_validator

from crsim.core.components import BuildContext
from crsim.core.errors import ConfigError
from crsim.core.plugins import Params
from crsim.core.secrets import secret_from_env
from crsim.crs.base import BaseCRS, CRSReply, CRSSession, ReplyOption
from crsim.model.acts import DialogueAct
from crsim.model.annotations import AMBIGUOUS_LINKS, HTTP, RECOMMENDED_ITEMS_SOURCE, REPLACED_CODE_POINTS
from crsim.model.linking import Mention, ambiguous_links
from crsim.model.text import JSONTextError, loads_clean

_MAX_SAME_HOST_REDIRECTS = 3


class HTTPParams(Params):
    """Settings shared by every HTTP adapter."""

    base_url: str = Field(description="Root URL of the CRS server, e.g. http://127.0.0.1:5005")
    timeout_s: float = Field(30.0, gt=0, description="Deadline for one request, body included.")
    connect_timeout_s: float = Field(5.0, gt=0, description="Deadline for opening a connection.")
    max_retries: int = Field(2, ge=0, le=10, description="Retries after connection errors and 5xx replies.")
    retry_backoff_s: float = Field(0.5, ge=0, description="First retry delay; doubles on each retry.")
    retry_unsafe: bool = Field(
        True, description="Also retry when the server may have processed the message (recorded if so)."
    )
    max_concurrency: int = Field(8, ge=1, le=4096, description="Requests in flight to this CRS at once.")
    max_response_bytes: int = Field(1_000_000, ge=1, description="Larger response bodies are an error.")
    api_key_env: str | None = Field(None, description="Environment variable holding the API key, if any.")
    auth_header: str = Field("Authorization", description="Header that carries the API key.")
    auth_scheme: str = Field("Bearer", description="Prefix of the key in that header ('' for none).")
    link_titles: bool = Field(True, description="Link titles in text-only replies to catalogue items.")
    allow_empty_text: bool = Field(False, description="Accept replies with empty text instead of failing.")

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("expected an http:// or https:// URL with a host")
        if parts.username or parts.password:
            raise ValueError("credentials in the URL are not allowed; use api_key_env")
        return value.rstrip("/")


class CRSHTTPError(Exception):
    """A CRS server failed to give a usable reply. The class name is the error kind in records."""


class CRSConnectionError(CRSHTTPError):
    """The connection could not be opened or was lost before a complete reply."""


class CRSTimeoutError(CRSHTTPError):
    """No complete reply within `timeout_s`."""


class CRSStatusError(CRSHTTPError):
    """The server answered with an error status."""


class CRSInvalidResponse(CRSHTTPError):
    """The body is not the JSON the protocol prescribes (or its text is empty)."""


class CRSResponseTooLarge(CRSHTTPError):
    """The body exceeded `max_response_bytes`; it was not read further."""


class CRSRedirectError(CRSHTTPError):
    """The server redirected to another host (or redirected too often); not followed."""


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
        data, replaced = _parse_json(await self.request(client, method, path, payload, log))
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
        decoder = _BodyDecoder(response.headers.get("content-encoding", ""))
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


#: Content codings crsim asks for and decodes itself (with an output bound); others are refused.
ACCEPT_ENCODING = "gzip, deflate"


class _BodyDecoder:
    """Incremental decoding of one `Content-Encoding` (identity, gzip or deflate) with bounded output."""

    def __init__(self, header: str) -> None:
        self._started = False
        if not header:  # the usual case: no Content-Encoding at all
            self.identity, self._deflate, self._zlib = True, False, None
            return
        codings = [c.strip().lower() for c in header.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if len(codings) > 1 or (codings and codings[0] not in ("gzip", "x-gzip", "deflate")):
            raise CRSInvalidResponse(f"unsupported Content-Encoding {header.strip()[:40]!r}")
        self.identity = not codings
        self._deflate = codings == ["deflate"]
        self._zlib = None if self.identity else zlib.decompressobj(zlib.MAX_WBITS | 32)

    def decode(self, data: bytes, max_out: int) -> bytes:
        """At most `max_out` decoded bytes of `data`; exactly `max_out` means there was more."""
        if self._zlib is None:
            return data
        try:
            out = self._zlib.decompress(data, max_out)
        except zlib.error:
            if not (self._deflate and not self._started):
                raise CRSInvalidResponse("response body could not be decoded (bad compressed data)") from None
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)  # "deflate" sent without its zlib header
            self._started = True
            return self.decode(data, max_out)
        self._started = True
        return out

    def finish(self) -> None:
        """A compressed body must end its stream; a cut one is not a complete reply."""
        if self._zlib is not None and self._started and not self._zlib.eof:
            raise CRSInvalidResponse("response body could not be decoded (compressed data ends early)")


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


def _parse_json(body: bytes) -> tuple[Any, int]:
    """The JSON value of a body and how many lone surrogates in its strings were replaced.

    Every way a body can fail to be read is a CRSInvalidResponse: malformed JSON, bytes that are not
    text, nesting deeper than the parser goes, an integer longer than Python converts.
    """
    if not body.strip():
        return None, 0  # e.g. 204 No Content; callers that need an object reject None
    try:
        text = body.decode(json.detect_encoding(body))
        return loads_clean(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CRSInvalidResponse(
            f"response is not valid JSON ({exc.__class__.__name__} at byte {_pos(exc)})"
        ) from None
    except JSONTextError as exc:
        raise CRSInvalidResponse(f"response JSON cannot be read ({exc})") from None


def _pos(exc: Exception) -> int:
    return getattr(exc, "pos", getattr(exc, "start", 0))


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


def sent(value: Any, limit: int = 8) -> str:
    """What a server sent, for an error message: `an object with fields 'a', 'b'`, `a list of 3`,
    `the string 'no'`, `null`. Names and strings are the server's (untrusted): quoted, printable
    characters only, cut short, and at most `limit` fields listed."""

    def short(text: str, width: int = 40) -> str:
        text = "".join(c if c.isprintable() else "?" for c in text)
        return repr(text if len(text) <= width else text[: width - 1] + "…")

    if isinstance(value, dict):
        if not value:
            return "an empty object"
        names = [short(str(key)) for key in list(value)[:limit]]
        more = f" and {len(value) - limit} more" if len(value) > limit else ""
        return f"an object with field{'s' if len(value) > 1 else ''} {', '.join(names)}{more}"
    if isinstance(value, list):
        return f"a list of {len(value)}" if value else "an empty list"
    if isinstance(value, str):
        return f"the string {short(value)}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null (or no body)"
    if isinstance(value, int | float):
        return f"the number {value!r}"[:60]
    return type(value).__name__


def field_of(data: Any, *path: str | int, what: str) -> Any:
    """`data[path[0]][path[1]]...`, or a CRSInvalidResponse naming the missing field and what the
    server sent where it was expected."""
    current = data
    for key in path:
        try:
            current = current[key]
        except (KeyError, IndexError, TypeError):
            dotted = ".".join(str(p) for p in path)
            raise CRSInvalidResponse(
                f"{what}: response has no field '{dotted}'; it sent {sent(current)}"
            ) from None
    return current


class HTTPCRS(BaseCRS):
    """Base of the HTTP adapters: one client per CRS, one `httpx.AsyncClient` per dialogue."""

    Params = HTTPParams

    def __init__(self, params: HTTPParams, ctx: BuildContext) -> None:
        domain = ctx.require_domain(type(self).__name__)
        self.params, self.domain = params, domain
        self.http = HTTPClient(params)
        if params.link_titles:
            _ = domain.items.linker  # build the index now, not mid-dialogue where it would eat timeouts

    async def make_reply(
        self,
        text: Any,
        log: ExchangeLog,
        *,
        items: list[str] | None = None,
        mentioned: list[str] | None = None,
        end: bool = False,
        acts: list[DialogueAct] | None = None,
        extra: dict[str, Any] | None = None,
        options: list[ReplyOption] | None = None,
    ) -> CRSReply:
        """A reply from server fields: text checked, titles linked when no items were given.

        `mentioned` (not None, even empty) means the server listed every item its text names, in
        `items` (recommended) and `mentioned`: nothing is linked and the reply is `items_listed`.
        `options` are the buttons the server offered with the reply.
        """
        if not isinstance(text, str):
            raise CRSInvalidResponse(f"reply text must be a string; the server sent {sent(text)}")
        if not text.strip() and not self.params.allow_empty_text:
            raise CRSInvalidResponse("reply text is empty")
        annotations: dict[str, Any] = {**(extra or {}), **log.annotations()}  # a server cannot hide a resend
        recommended = list(items or [])
        if mentioned is not None:
            return CRSReply(
                text,
                recommended,
                list(acts or []),
                end,
                annotations,
                mentioned_items=list(mentioned),
                items_listed=True,
                options=list(options or []),
            )
        if not recommended and self.params.link_titles and text:
            mentions = await self.linked_mentions(text)
            recommended = list(dict.fromkeys(m.item_id for m in mentions))
            if recommended:
                RECOMMENDED_ITEMS_SOURCE.put(annotations, "linked")
            if ambiguous := ambiguous_links(mentions):
                AMBIGUOUS_LINKS.put(annotations, ambiguous)
        return CRSReply(text, recommended, list(acts or []), end, annotations, options=list(options or []))

    async def linked_mentions(self, text: str) -> list[Mention]:
        """The catalogue titles the text names (off the event loop: linking a long reply takes
        seconds of CPU, and other dialogues go on meanwhile)."""
        return await asyncio.to_thread(self.domain.items.linker.link, text)

    async def linked_items(self, text: str) -> list[str]:
        """Ids of the catalogue items whose titles the text names, in order, each once."""
        return list(dict.fromkeys(m.item_id for m in await self.linked_mentions(text)))

    async def close(self, session: CRSSession) -> None:
        client = getattr(session.state, "client", None)
        if isinstance(client, httpx.AsyncClient):
            await self.http.release_client(client)

    async def aclose(self) -> None:
        """Close the connections kept between dialogues; the batch calls it when it is done."""
        await self.http.aclose()
