"""`crsim serve`: expose any crsim CRS over HTTP, in the generic protocol and the CRS Arena protocol.

Each conversation has its own `CRSSession`. Generic sessions are opened and deleted explicitly and
may carry the client's dialogue id and seed, so a run through HTTP equals the in-process run. CRS
Arena conversations are keyed by a cookie; their seed is derived from the server seed and the cookie.
What one server holds is bounded (`ServeLimits`): conversations idle for `idle_timeout_s` are closed,
a full table closes the least recently used idle conversation rather than refusing new clients, and
request bodies over `max_body_bytes` are answered 413 (`crsim.crs.asgi`, with the access log).
The protocols' messages are in `serve_protocol`, the table of conversations in `serve_sessions`.
"""

from __future__ import annotations

import errno
import logging
import socket
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, HTTPException, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from crsim.core.errors import CrsimError
from crsim.crs.asgi import AccessLog, BodyLimit
from crsim.crs.base import CRS
from crsim.crs.serve_protocol import (
    ArenaRequest,
    ArenaResponse,
    CleanJSONRoute,
    MessageRequest,
    ReplyBody,
    StartRequest,
    StartResponse,
    reply_body,
)
from crsim.crs.serve_sessions import Conversations
from crsim.model.domain import Domain

ARENA_COOKIE = "crsim_session"


class ServeLimits(BaseModel):
    """What one `crsim serve` process holds at most (the `--max-sessions`, ... flags)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_sessions: int = Field(
        10_000,
        ge=1,
        description="Open conversations at most; when full, the least recently used idle one is closed.",
    )
    idle_timeout_s: float = Field(
        3600.0, gt=0, description="Seconds after which an idle conversation is closed."
    )
    max_body_bytes: int = Field(1_000_000, ge=1, description="Largest request body accepted (larger: 413).")


def create_app(
    crs: CRS,
    *,
    seed: int = 0,
    limits: ServeLimits | None = None,
    access_log: Callable[[str], None] | None = None,
) -> FastAPI:
    """A FastAPI app serving `crs` in the generic protocol (/sessions...) and CRS Arena (/).

    Request bodies over `limits.max_body_bytes` are answered 413; `access_log`, when given, gets
    one line per request.
    """
    limits = limits or ServeLimits()
    conversations = Conversations(crs, seed, limits.max_sessions, limits.idle_timeout_s)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        await conversations.close_all()

    app = FastAPI(title="crsim CRS server", version="1", lifespan=lifespan)
    app.router.route_class = CleanJSONRoute
    app.state.conversations = conversations
    _add_generic_routes(app, conversations)
    _add_arena_routes(app, conversations)
    app.add_middleware(BodyLimit, max_bytes=limits.max_body_bytes)
    if access_log is not None:
        app.add_middleware(AccessLog, write=access_log)  # added last: outermost, sees the 413s too
    return app


def _add_generic_routes(app: FastAPI, conversations: Conversations) -> None:
    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "open_sessions": len(conversations)}

    @app.post("/sessions", response_model=StartResponse, response_model_exclude_none=True)
    async def start(body: StartRequest) -> StartResponse:
        key = uuid.uuid4().hex
        _, greeting = await conversations.open(key, body.dialogue_id or key, body.seed)
        return StartResponse(session_id=key, greeting=None if greeting is None else reply_body(greeting))

    @app.post("/sessions/{session_id}/messages", response_model=ReplyBody)
    async def message(session_id: str, body: MessageRequest) -> ReplyBody:
        conversation = conversations.get(session_id)
        if conversation is None:
            raise HTTPException(
                404,
                "unknown session (never opened, deleted, idle too long, or closed to make room); "
                "open one with POST /sessions",
            )
        async with conversation.lock:
            if body.turn is not None and body.turn == conversation.last_turn and conversation.last_reply:
                return conversation.last_reply  # a resend of the last message: answer it again
            if body.turn is not None and body.turn != conversation.last_turn + 1:
                raise HTTPException(409, f"expected turn {conversation.last_turn + 1}, got {body.turn}")
            reply = await conversations.respond(conversation, body.text, body.option)
            conversation.last_turn, conversation.last_reply = conversation.last_turn + 1, reply
            return reply

    @app.delete("/sessions/{session_id}", status_code=204)
    async def delete(session_id: str) -> Response:
        if not await conversations.close(session_id):
            raise HTTPException(404, "unknown session")
        return Response(status_code=204)


def _add_arena_routes(app: FastAPI, conversations: Conversations) -> None:
    @app.get("/")
    async def arena_health() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/", response_model=ArenaResponse)
    async def arena_message(body: ArenaRequest, request: Request, response: Response) -> ArenaResponse:
        key = request.cookies.get(ARENA_COOKIE, "")
        conversation = conversations.get(key) if key else None
        if conversation is None:
            key = uuid.uuid4().hex
            conversation, _greeting = await conversations.open(key, key, None)
            response.set_cookie(ARENA_COOKIE, key, httponly=True, samesite="lax")
        async with conversation.lock:
            reply = await conversations.respond(conversation, body.message)
        return ArenaResponse(response=reply.text)


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on `host`:`port` (0: any free port); a busy port is a `CrsimError`."""
    try:
        family, _, _, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise CrsimError(f"--host {host!r}: not an address of this machine ({exc.strerror})") from None
    try:
        return socket.create_server(address, family=family, backlog=2048)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise CrsimError(f"port {port} on {host} is already in use; choose another with --port") from None
        raise CrsimError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None


def url_of(sock: socket.socket) -> str:
    """The base URL of a listening socket, e.g. http://127.0.0.1:8000 or http://[::1]:8000."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def stderr_access_log() -> Callable[[str], None]:
    """Access log lines on stderr through `logging` (logger `crsim.serve.access`), time-stamped."""
    logger = logging.getLogger("crsim.serve.access")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger.info


def serve(
    crs_name: str,
    args: dict[str, Any],
    domain: Domain,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    seed: int = 0,
    limits: ServeLimits | None = None,
    access_log: bool = True,
    on_listening: Callable[[str], None] | None = None,
) -> None:
    """Build the registered CRS `crs_name` with `args` on `domain` and serve it until stopped.

    The port is taken first, so a busy port is a one-line `CrsimError` before anything is built;
    `on_listening` gets the URL once the CRS is built and clients can connect.
    """
    import uvicorn

    from crsim.core.components import BuildContext, build
    from crsim.core.plugins import ComponentSpec
    from crsim.crs.base import crs_registry

    spec = ComponentSpec(name=crs_name, args=args)
    crs_registry.params(crs_name, args, where="serve")  # bad arguments fail before the port is taken
    with listen(host, port) as sock:  # before the (slow) build: a busy port fails at once
        crs = build(crs_registry, spec, BuildContext(domain=domain, seed=seed), where="serve")
        log = stderr_access_log() if access_log else None
        app = create_app(crs, seed=seed, limits=limits, access_log=log)
        config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=5)
        if on_listening is not None:
            on_listening(url_of(sock))
        uvicorn.Server(config).run(sockets=[sock])
