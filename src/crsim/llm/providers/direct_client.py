"""JSON POSTs to one origin through aiohttp: the one HTTP transport of the `openai` and `ollama`
providers (the `openai` provider can send through the official SDK instead, `client: sdk`).

aiohttp parses HTTP in C (llhttp) and keeps connections alive in one pool; against httpx it took
about a third of the CPU per call in the `openai` provider (bench/llm_overhead.py,
docs/performance.md). `Client` holds one aiohttp session per event loop: keep-alive, gzip and
deflate, no cookies, the proxy variables (`HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`) honoured. On top
it adds what the providers' contract needs: a cap on the decoded body (read in pieces, never past
the cap), redirects followed within the origin only (method and body as browsers handle them: 303,
and 301/302 after a POST, become a GET), and crsim's errors for every way the exchange can fail.

Set-up is kept out of a call's deadline: `open()` (which `crsim.llm.client` awaits before the
deadline starts) builds the session; an `https://` origin gets the process's one TLS context
(`tls_context`), an `http://` origin none at all.
"""

from __future__ import annotations

import asyncio
import functools
import os
import ssl
import urllib.request
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from crsim.llm.errors import LLMAnswerTooLarge, LLMConnectionError, LLMProtocolError, LLMRedirectRefused

if TYPE_CHECKING:
    import aiohttp

#: Redirect statuses followed (within the origin).
REDIRECTS = frozenset({301, 302, 303, 307, 308})
#: Answers larger than this (decoded bytes) are an error: a chat response is a few kilobytes.
MAX_ANSWER_BYTES = 8 * 1024 * 1024
#: Bytes read from a body at a time.
_PIECE = 64 * 1024


def tls_context() -> ssl.SSLContext:
    """The TLS context of every `https://` endpoint: httpx's verification settings (certifi's roots,
    or `SSL_CERT_FILE` / `SSL_CERT_DIR` when set), built once per process and setting (~40 ms of CPU)."""
    return _tls_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.cache
def _tls_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    import httpx

    return httpx.create_ssl_context()


@dataclass(frozen=True)
class Origin:
    """Scheme, host and port of a URL (the default port filled in), as `base.origin` spells it."""

    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, url: str) -> Origin:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url}")
        return cls(parts.scheme, parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))

    def __str__(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"


def proxy_for(origin: Origin) -> str | None:
    """The proxy the environment names for `origin` (`HTTP_PROXY` / `HTTPS_PROXY`, lower case too,
    unless `NO_PROXY` lists the host), as curl and httpx read them; None for a direct connection.
    (aiohttp's own `trust_env` would also send ~/.netrc credentials in place of the endpoint's key.)"""
    proxy = urllib.request.getproxies().get(origin.scheme)
    if proxy is None or urllib.request.proxy_bypass(f"{origin.host}:{origin.port}"):
        return None
    return proxy


@dataclass
class Answer:
    """A response: status, headers (lower-case names) and the decoded body."""

    status: int
    headers: dict[str, str]
    body: bytes


class Client:
    """POSTs to one origin on kept connections. Errors: `LLMConnectionError` (connecting, TLS, the
    connection reset or closed mid-answer), `LLMAnswerTooLarge`, `LLMRedirectRefused` (a redirect
    off the origin, or too many), `LLMProtocolError` (an answer that cannot be read as HTTP, a body
    that cannot be decoded); each message names the URL."""

    def __init__(self, base_url: str, headers: dict[str, str], *, max_redirects: int, cap: int) -> None:
        self.base_url = base_url.rstrip("/") + "/"
        self.origin = Origin.of(self.base_url)
        self.max_redirects, self.cap = max_redirects, cap
        self.headers = {**headers, "Content-Type": "application/json"}
        self._urls: dict[str, str] = {}
        self._session: aiohttp.ClientSession | None = None
        self._proxy: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def url(self, path: str) -> str:
        """`path` under the base URL (kept, as calls repeat a few paths)."""
        url = self._urls.get(path)
        if url is None:
            url = urljoin(self.base_url, path)
            if len(self._urls) < 64:
                self._urls[path] = url
        return url

    async def open(self) -> None:
        """Build the session of the running event loop now, so that a call's deadline does not pay for it."""
        self._session_here()

    async def post_json(self, path: str, body: bytes) -> Answer:
        """POST `body` (JSON) to `path` under the base URL; redirects within the origin are followed."""
        url, method = self.url(path), "POST"
        payload: bytes | None = body
        for _ in range(self.max_redirects + 1):
            answer = await self._send(url, method, payload)
            location = answer.headers.get("location")
            if answer.status not in REDIRECTS or location is None:
                return answer
            url = urljoin(url, location)
            target = Origin.of(url) if urlsplit(url).scheme in ("http", "https") else url
            if target != self.origin:
                raise LLMRedirectRefused(
                    f"{self.url(path)}: refused a redirect from {self.origin} to another host ({target}); "
                    f"not followed"
                )
            if answer.status == 303 or (answer.status in (301, 302) and method == "POST"):
                method, payload = "GET", None  # as httpx (and browsers) do
        raise LLMRedirectRefused(f"{self.url(path)}: more than {self.max_redirects} redirects")

    async def _send(self, url: str, method: str, body: bytes | None) -> Answer:
        import aiohttp
        from aiohttp.http_exceptions import ContentEncodingError

        session = self._session_here()
        headers = (
            self.headers
            if body is not None
            else {k: v for k, v in self.headers.items() if k != "Content-Type"}
        )
        try:
            async with session.request(
                method, url, data=body, headers=headers, allow_redirects=False, proxy=self._proxy
            ) as response:
                data = await self._body(response, url)
                return Answer(response.status, {k.lower(): v for k, v in response.headers.items()}, data)
        except aiohttp.ClientPayloadError as exc:
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, ContentEncodingError | zlib.error) or "encoding" in str(exc).lower():
                raise LLMProtocolError(f"{url} answered with a body that cannot be decoded ({exc})") from None
            raise LLMConnectionError(f"cannot reach {url}: {exc or type(exc).__name__}") from exc
        except aiohttp.ClientResponseError as exc:  # an answer that is not HTTP as aiohttp reads it
            raise LLMProtocolError(f"{url} answered with something that is not HTTP: {exc.message}") from None
        except (aiohttp.ClientError, OSError, asyncio.IncompleteReadError) as exc:  # connecting, TLS, cut
            raise LLMConnectionError(f"cannot reach {url}: {exc or type(exc).__name__}") from exc

    async def _body(self, response: aiohttp.ClientResponse, url: str) -> bytes:
        """The decoded body, read in pieces; `LLMAnswerTooLarge` as soon as it passes the cap."""
        pieces, size = [], 0
        while piece := await response.content.read(_PIECE):
            size += len(piece)
            if size > self.cap:
                response.close()  # the rest is not read; the connection is not kept
                raise LLMAnswerTooLarge(f"{url} answered with more than {self.cap} bytes; not read further")
            pieces.append(piece)
        return b"".join(pieces)

    def _session_here(self) -> aiohttp.ClientSession:
        """The session of the running event loop (a session belongs to the loop that made it; one left
        by another loop is dropped unclosed, its connections with that loop)."""
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            tls: ssl.SSLContext | bool = tls_context() if self.origin.scheme == "https" else False
            connector = aiohttp.TCPConnector(limit=0, ssl=tls)
            self._session = aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),
                auto_decompress=True,
            )
            self._proxy = proxy_for(self.origin)
            self._loop = loop
        return self._session

    async def aclose(self) -> None:
        """Close the session and its connections (a call under way then ends with a connection error)."""
        session, self._session = self._session, None
        if session is not None and not session.closed and self._loop is asyncio.get_running_loop():
            await session.close()


#: The clients in use, one per endpoint (base URL, headers, limits), with how many providers hold each.
_clients: dict[tuple[object, ...], tuple[Client, int]] = {}


def acquire(base_url: str, headers: dict[str, str], *, max_redirects: int, cap: int) -> Client:
    """The one client of an endpoint, shared by every provider calling it (several models, several
    roles): one connection pool and one session per endpoint. Hand it back with `release`."""
    key = (base_url.rstrip("/") + "/", tuple(sorted(headers.items())), max_redirects, cap)
    client, holders = _clients.get(key, (None, 0))
    if client is None:
        client = Client(base_url, headers, max_redirects=max_redirects, cap=cap)
    _clients[key] = (client, holders + 1)
    return client


async def release(client: Client) -> None:
    """Give back a client from `acquire`; the last holder's release closes it."""
    for key, (held, holders) in list(_clients.items()):
        if held is client:
            if holders > 1:
                _clients[key] = (held, holders - 1)
                return
            del _clients[key]
            break
    await client.aclose()
