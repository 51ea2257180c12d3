"""Plain ASGI middleware for `crsim serve`: a cap on request bodies and a one-line access log.

Both wrap the FastAPI app from the outside, so they see every request, including the ones the app
never gets to (a body over the cap is answered 413 here and never parsed).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Longest request path an access log line shows (the rest is cut, marked by "...").
MAX_LOGGED_PATH = 200


class BodyLimit:
    """Answer 413 (JSON `{"detail": ...}`) to a request whose body exceeds `max_bytes`.

    A declared `Content-Length` over the cap is refused before a byte of the body is read; a body
    sent without one (chunked) is counted while it streams and refused as soon as it passes the cap.
    At most `max_bytes` are ever held, then handed to the app in one piece.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._refuse(send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left: nobody to answer
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay(b"".join(chunks), receive), send)

    async def _refuse(self, send: Send) -> None:
        detail = f"request body larger than {self.max_bytes} bytes (the server's --max-body-bytes)"
        body = json.dumps({"detail": detail}).encode()
        # No "Connection: close": closing with the body still arriving would reset the connection
        # before the client reads this answer; the HTTP server discards the rest of the body instead.
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the HTTP server refuses malformed framing itself
    return None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the whole body once, then defers to the real one (disconnects)."""
    given = False

    async def replayed() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


class AccessLog:
    """Write one line per request: method, path, status, duration. Never bodies, queries or cookies.

    The path is written in its raw, percent-encoded form, so a request cannot put a line break or
    a terminal escape into the log. A request that ends without a response shows status `-`.
    """

    def __init__(self, app: ASGIApp, write: Callable[[str], None]) -> None:
        self.app, self.write = app, write

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = "-"

        async def send_noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = str(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_noting_status)
        except Exception:
            status = "500" if status == "-" else status
            raise
        finally:
            elapsed_ms = (time.perf_counter() - started) * 1000
            self.write(f"{scope.get('method', '-')} {_logged_path(scope)} {status} {elapsed_ms:.1f} ms")


def _logged_path(scope: Scope) -> str:
    raw = scope.get("raw_path")
    path = raw.decode("ascii", "backslashreplace") if isinstance(raw, bytes) else str(scope.get("path", ""))
    path = path.split("?", 1)[0]
    path = "".join(c if c.isprintable() and c.isascii() else f"\\x{ord(c):02x}" for c in path)
    return path if len(path) <= MAX_LOGGED_PATH else path[:MAX_LOGGED_PATH] + "..."
