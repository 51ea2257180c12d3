"""JSON POSTs to one origin through aiohttp, for the `openai` provider's default path (`client: direct`).

httpx spends about 0.9 ms of CPU per request on layers a JSON POST to one known origin does not
need (URL merging, cookies, event hooks, its request and response models, anyio's cancel scopes per
socket operation); at 64 concurrent calls that was about 40% of crsim's CPU per call
(bench/llm_overhead.py). aiohttp parses HTTP in C (llhttp) and keeps connections alive in one pool.

`Client` holds one aiohttp session per event loop: keep-alive, TLS with the given context (or the
default one), gzip and deflate, no cookies, proxies from the environment as httpx reads them
(`trust_env`). It adds what the provider's contract needs on top: a cap on the decoded body (read in
pieces, never past the cap), and redirects followed within the origin only, method and body as
httpx handles them (303, and 301/302 after a POST, become a GET). Deadlines are the caller's.
"""

from __future__ import annotations

import asyncio
import ssl
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from crsim.llm.providers.base import RedirectRefused

if TYPE_CHECKING:
    import aiohttp

#: Redirect statuses followed (within the origin).
REDIRECTS = frozenset({301, 302, 303, 307, 308})
#: Bytes read from a body at a time.
_PIECE = 64 * 1024


class ProtocolError(Exception):
    """The connection failed or the server's answer could not be read as HTTP."""


class BodyTooLarge(Exception):
    """The decoded body exceeded the cap; it was not read further."""


class TooManyRedirects(Exception):
    """More redirects than allowed."""


class UndecodableBody(Exception):
    """A body in a content encoding that cannot be decoded, or a corrupt one."""


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


@dataclass
class Answer:
    """A response: status, headers (lower-case names) and the decoded body."""

    status: int
    headers: dict[str, str]
    body: bytes


class Client:
    """POSTs to one origin on kept connections. Errors: `OSError` (connecting, TLS),
    `ProtocolError` (the connection reset or closed mid-answer, an unreadable answer),
    `BodyTooLarge`, `UndecodableBody`, `RedirectRefused` (a redirect off the origin),
    `TooManyRedirects`."""

    def __init__(
        self,
        base_url: str,
        headers: dict[str, str],
        *,
        tls: ssl.SSLContext | None,
        max_redirects: int,
        cap: int,
    ) -> None:
        self.base_url = base_url.rstrip("/") + "/"
        self.origin = Origin.of(self.base_url)
        self.tls, self.max_redirects, self.cap = tls, max_redirects, cap
        self.headers = {**headers, "Content-Type": "application/json"}
        self._urls: dict[str, str] = {}
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def url(self, path: str) -> str:
        """`path` under the base URL (kept, as calls repeat a few paths)."""
        url = self._urls.get(path)
        if url is None:
            url = urljoin(self.base_url, path)
            if len(self._urls) < 64:
                self._urls[path] = url
        return url

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
                raise RedirectRefused(
                    f"refused a redirect from {self.origin} to another host ({target}); not followed"
                )
            if answer.status == 303 or (answer.status in (301, 302) and method == "POST"):
                method, payload = "GET", None  # as httpx (and browsers) do
        raise TooManyRedirects

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
                method, url, data=body, headers=headers, allow_redirects=False
            ) as response:
                data = await self._body(response)
                return Answer(response.status, {k.lower(): v for k, v in response.headers.items()}, data)
        except aiohttp.ClientPayloadError as exc:
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, ContentEncodingError | zlib.error) or "encoding" in str(exc).lower():
                raise UndecodableBody(str(exc) or "bad content encoding") from None
            raise ProtocolError(str(exc) or type(exc).__name__) from exc
        except aiohttp.ClientConnectorError as exc:  # connecting, TLS: as the socket reported it
            raise OSError(str(exc)) from exc
        except aiohttp.ClientError as exc:
            raise ProtocolError(str(exc) or type(exc).__name__) from exc

    async def _body(self, response: aiohttp.ClientResponse) -> bytes:
        """The decoded body, read in pieces; `BodyTooLarge` as soon as it passes the cap."""
        pieces, size = [], 0
        while piece := await response.content.read(_PIECE):
            size += len(piece)
            if size > self.cap:
                response.close()  # the rest is not read; the connection is not kept
                raise BodyTooLarge
            pieces.append(piece)
        return b"".join(pieces)

    def _session_here(self) -> aiohttp.ClientSession:
        """The session of the running event loop (a session belongs to the loop that made it; one left
        by another loop is dropped unclosed, its connections with that loop)."""
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            tls: ssl.SSLContext | bool = self.tls if self.tls is not None else True
            connector = aiohttp.TCPConnector(limit=0, ssl=tls if self.origin.scheme == "https" else False)
            self._session = aiohttp.ClientSession(
                connector=connector, cookie_jar=aiohttp.DummyCookieJar(), auto_decompress=True
            )
            self._loop = loop
        return self._session

    async def aclose(self) -> None:
        """Close the session and its connections (a call under way then ends with a connection error)."""
        session, self._session = self._session, None
        if session is not None and not session.closed and self._loop is asyncio.get_running_loop():
            await session.close()
