"""A small HTTP/1.1 client for one origin: JSON POSTs over keep-alive connections (asyncio streams).

The `openai` provider's default path (`client: direct`) posts chat completions through it. httpx
spends about 0.9 ms of CPU per request on layers a JSON POST to one known origin does not need (URL
merging, cookies, event hooks, its request and response models, anyio's cancel scopes per socket
operation); at 64 concurrent calls that was about 40% of crsim's CPU per call (bench/llm_overhead.py).

What it does: HTTP and HTTPS (TLS with the given context, the server's name checked), keep-alive
with a pool of idle connections (one retry on a fresh connection when a kept one turns out to be
closed before any answer), bodies delimited by Content-Length, chunked or the end of the
connection, gzip and deflate, a cap on the decoded size, and redirects within the origin (method
and body as httpx handles them). What it does not: proxies (the provider sends through httpx when
a proxy variable is set), HTTP/2, cookies, other content encodings. Deadlines are the caller's.
"""

from __future__ import annotations

import asyncio
import ssl
import zlib
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from crsim.llm.providers.base import RedirectRefused

#: Redirect statuses followed (within the origin).
REDIRECTS = frozenset({301, 302, 303, 307, 308})
#: Largest response head (status line and headers) read, in bytes.
MAX_HEAD_BYTES = 64 * 1024


class ProtocolError(Exception):
    """The server's answer is not HTTP/1.1 as this client reads it."""


class BodyTooLarge(Exception):
    """The decoded body exceeded the cap; it was not read further."""


class TooManyRedirects(Exception):
    """More redirects than allowed."""


class UndecodableBody(Exception):
    """A body in a content encoding this client does not read, or a corrupt one."""


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

    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


@dataclass
class Answer:
    """A response: status, headers (lower-case names) and the decoded body."""

    status: int
    headers: dict[str, str]
    body: bytes


class _Connection:
    """One keep-alive connection; `reusable` after an answer read to its delimited end."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.reusable = False

    def close(self) -> None:
        self.writer.close()

    async def exchange(self, request: bytes, method: str, cap: int) -> Answer:
        self.reusable = False
        self.writer.write(request)
        status, version, headers = await self._head()
        while 100 <= status < 200:  # informational answers precede the real one
            status, version, headers = await self._head()
        if method == "HEAD" or status in (204, 304):
            raw, delimited = b"", True
        else:
            raw, delimited = await self._body(headers, cap)
        keep = headers.get("connection", "").lower()
        self.reusable = delimited and ("close" not in keep if version == "HTTP/1.1" else "keep-alive" in keep)
        return Answer(status, headers, _decoded(raw, headers.get("content-encoding", ""), cap))

    async def _head(self) -> tuple[int, str, dict[str, str]]:
        try:
            head = await self.reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError:
            raise ProtocolError(f"response head longer than {MAX_HEAD_BYTES} bytes") from None
        lines = head.decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or not code.isdigit():
            raise ProtocolError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                name, sep, value = line.partition(":")
                if not sep:
                    raise ProtocolError(f"malformed header line: {line[:80]!r}")
                name = name.strip().lower()
                value = value.strip()
                headers[name] = f"{headers[name]}, {value}" if name in headers else value
        return int(code), version, headers

    async def _body(self, headers: dict[str, str], cap: int) -> tuple[bytes, bool]:
        """The raw body and whether its end was delimited (not the end of the connection)."""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return await self._chunked(cap), True
        length = headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                raise ProtocolError(f"bad Content-Length: {length[:40]!r}")
            if int(length) > cap:
                raise BodyTooLarge
            return await self.reader.readexactly(int(length)), True
        chunks: list[bytes] = []
        size = 0
        while chunk := await self.reader.read(65536):
            size += len(chunk)
            if size > cap:
                raise BodyTooLarge
            chunks.append(chunk)
        return b"".join(chunks), False

    async def _chunked(self, cap: int) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            line = await self.reader.readuntil(b"\r\n")
            try:
                length = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise ProtocolError(f"bad chunk size line: {line[:40]!r}") from None
            if length == 0:
                while await self.reader.readuntil(b"\r\n") != b"\r\n":  # trailers, then the end
                    pass
                return b"".join(chunks)
            size += length
            if size > cap:
                raise BodyTooLarge
            chunk = await self.reader.readexactly(length + 2)
            chunks.append(chunk[:-2])


def _decoded(raw: bytes, encoding: str, cap: int) -> bytes:
    """The body without its content encoding (gzip, deflate), read no further than `cap` bytes."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return raw
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise UndecodableBody(f"content encoding {encoding[:40]!r}")
    wbits = [zlib.MAX_WBITS | 16] if "gzip" in encoding else [zlib.MAX_WBITS, -zlib.MAX_WBITS]
    for bits in wbits:  # deflate comes wrapped in zlib's format or raw (as httpx reads it)
        decoder = zlib.decompressobj(bits)
        try:
            body = decoder.decompress(raw, cap + 1)
        except zlib.error:
            continue
        if len(body) > cap:
            raise BodyTooLarge
        return body
    raise UndecodableBody(f"a corrupt {encoding} body")


class Client:
    """POSTs to one origin on kept connections. Errors: `OSError` (connecting, TLS, the connection
    reset), `asyncio.IncompleteReadError` (closed mid-answer), `ProtocolError`, `BodyTooLarge`,
    `UndecodableBody`, `RedirectRefused` (a redirect off the origin), `TooManyRedirects`."""

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
        fixed = {"Host": self.origin.host_header(), **headers, "Accept-Encoding": "gzip, deflate"}
        self._headers = "".join(f"{k}: {v}\r\n" for k, v in fixed.items())
        self._urls: dict[str, str] = {}
        self._targets: dict[str, str] = {}
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()

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

    def _target(self, url: str) -> str:
        """The request target (path and query) of a URL on the origin; kept, as calls repeat a few URLs."""
        target = self._targets.get(url)
        if target is None:
            parts = urlsplit(url)
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            if len(self._targets) < 64:
                self._targets[url] = target
        return target

    async def _send(self, url: str, method: str, body: bytes | None) -> Answer:
        head = f"{method} {self._target(url)} HTTP/1.1\r\n{self._headers}"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        request = (head + "\r\n").encode("latin-1") + (body or b"")
        while self._idle:  # a kept connection; one the server closed meanwhile is replaced once
            connection = self._idle.pop()
            if connection.reader.at_eof():
                self._drop(connection)
                continue
            try:
                return await self._exchange(connection, request, method)
            except (ConnectionError, asyncio.IncompleteReadError) as exc:
                if isinstance(exc, asyncio.IncompleteReadError) and exc.partial:
                    raise
                break
        return await self._exchange(await self._connect(), request, method)

    async def _exchange(self, connection: _Connection, request: bytes, method: str) -> Answer:
        try:
            answer = await connection.exchange(request, method, self.cap)
        except BaseException:
            self._drop(connection)
            raise
        if connection.reusable:
            self._idle.append(connection)
        else:
            self._drop(connection)
        return answer

    async def _connect(self) -> _Connection:
        tls = (self.tls or ssl.create_default_context()) if self.origin.scheme == "https" else None
        reader, writer = await asyncio.open_connection(
            self.origin.host,
            self.origin.port,
            ssl=tls,
            server_hostname=self.origin.host if tls else None,
            limit=MAX_HEAD_BYTES,
        )
        connection = _Connection(reader, writer)
        self._open.add(connection)
        return connection

    def _drop(self, connection: _Connection) -> None:
        self._open.discard(connection)
        connection.close()

    async def aclose(self) -> None:
        """Close every connection, idle or in use (a call under way then ends with a connection error)."""
        connections, self._open, self._idle = list(self._open), set(), []
        for connection in connections:
            connection.close()
