"""`crsim serve`: expose any crsim CRS over HTTP, in the generic protocol and the CRS Arena protocol.

Each conversation has its own `CRSSession`. Generic sessions are opened and deleted explicitly and
may carry the client's dialogue id and seed, so a run through HTTP equals the in-process run. CRS
Arena conversations are keyed by a cookie; their seed is derived from the server seed and the cookie.
What one server holds is bounded (`ServeLimits`): conversations idle for `idle_timeout_s` are closed,
a full table closes the least recently used idle conversation rather than refusing new clients, and
request bodies over `max_body_bytes` are answered 413 (`crsim.crs.asgi`, with the access log).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
import sys
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, HTTPException, Request, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field

from crsim.core.errors import CrsimError
from crsim.core.seeding import derive_seed
from crsim.crs.asgi import AccessLog, BodyLimit
from crsim.crs.base import CRS, CRSReply, CRSSession, ReplyOption
from crsim.model.acts import DialogueAct
from crsim.model.domain import Domain
from crsim.model.text import JSONTextError, loads_clean

ARENA_COOKIE = "crsim_session"
#: Response header saying how many lone surrogates in the request's strings were replaced (absent: 0).
REPLACED_HEADER = "x-replaced-code-points"
#: Seeds a client may send: any signed or unsigned 64-bit integer (crsim's own are 63-bit).
SEED_MIN, SEED_MAX = -(2**63), 2**64 - 1


class StartRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dialogue_id: str | None = Field(None, max_length=512)
    seed: int | None = Field(None, ge=SEED_MIN, le=SEED_MAX)


class MessageRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str
    turn: int | None = Field(None, ge=1)
    #: The option of the last reply the user picked (`text` is then its label), handed to the CRS.
    option: ReplyOption | None = None


class ReplyBody(BaseModel):
    text: str
    recommended_items: list[str] = Field(default_factory=list)
    #: Items named without being recommended; present (a list) only when the CRS listed every item it
    #: names (`CRSReply.items_listed`, or mentioned items given), so a client does not link titles.
    mentioned_items: list[str] | None = None
    end: bool = False
    acts: list[DialogueAct] = Field(default_factory=list)
    annotations: dict[str, Any] = Field(default_factory=dict)
    #: Buttons offered with the reply (label shown, payload sent back when picked).
    options: list[ReplyOption] = Field(default_factory=list)


class StartResponse(BaseModel):
    session_id: str
    greeting: ReplyBody | None = None


class ArenaRequest(BaseModel):
    context: list[str] = Field(default_factory=list)
    message: str


class ArenaResponse(BaseModel):
    response: str


class _CleanJSONRequest(Request):
    """A request whose JSON body is read as text from outside (`crsim.model.text.loads_clean`).

    Lone surrogates in its strings become U+FFFD (counted in `state.replaced_code_points`); a body
    that is not UTF-8, nested too deeply, holds an over-long integer or a number that is not finite
    is a 400 naming the problem, instead of a 500 or FastAPI's generic "error parsing the body".
    Malformed JSON stays FastAPI's 422 (`json_invalid`, with the position).
    """

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            try:
                text = (await self.body()).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise HTTPException(400, f"request body is not UTF-8 (byte {exc.start})") from None
            try:
                self._json, self.state.replaced_code_points = loads_clean(text, finite=True)
            except JSONTextError as exc:
                raise HTTPException(400, f"request body cannot be read: JSON {exc}") from None
        return self._json


class _CleanJSONRoute(APIRoute):
    """Routes of `crsim serve`: bodies read by `_CleanJSONRequest`; a reply to a request whose
    strings had code points replaced says how many in the `x-replaced-code-points` header."""

    def get_route_handler(self) -> Callable[[Request], Any]:
        handler = super().get_route_handler()

        async def clean_handler(request: Request) -> Response:
            request = _CleanJSONRequest(request.scope, request.receive)
            response: Response = await handler(request)
            replaced = getattr(request.state, "replaced_code_points", 0)
            if replaced:
                response.headers[REPLACED_HEADER] = str(replaced)
            return response

        return clean_handler


def _body(reply: CRSReply) -> ReplyBody:
    return ReplyBody(
        text=reply.text,
        recommended_items=list(reply.recommended_items),
        mentioned_items=list(reply.mentioned_items) if reply.items_listed or reply.mentioned_items else None,
        end=reply.end,
        acts=list(reply.acts),
        annotations=dict(reply.annotations),
        options=list(reply.options),
    )


@dataclass
class _Conversation:
    session: CRSSession
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_turn: int = 0
    last_reply: ReplyBody | None = None
    touched: float = field(default_factory=time.monotonic)


class Conversations:
    """The open conversations of one server: at most `max_sessions`, idle ones closed.

    Conversations are kept in two queues, least recently used first: `_new` (opened, never come
    back to) and `_returning` (the client came back with the key at least once). When the table is
    full, opening one closes an idle conversation instead of refusing: a `_new` one first, so a flood
    of one-request clients churns through its own kind and never evicts a client that keeps talking.
    Only when every conversation is busy computing a reply is the new one refused (503).
    """

    def __init__(self, crs: CRS, seed: int, max_sessions: int, idle_timeout_s: float) -> None:
        self.crs, self.seed = crs, seed
        self.max_sessions, self.idle_timeout_s = max_sessions, idle_timeout_s
        self._new: OrderedDict[str, _Conversation] = OrderedDict()
        self._returning: OrderedDict[str, _Conversation] = OrderedDict()
        #: Conversations closed to make room for new ones (not counting idle expiry).
        self.evicted = 0

    def __len__(self) -> int:
        return len(self._new) + len(self._returning)

    async def open(
        self, key: str, dialogue_id: str, seed: int | None
    ) -> tuple[_Conversation, CRSReply | None]:
        await self._expire()
        while len(self) >= self.max_sessions:  # re-checked: other requests may open while we close
            await self._evict_one()
        session = CRSSession(id=dialogue_id, seed=derive_seed(self.seed, key) if seed is None else seed)
        conversation = _Conversation(session)
        self._new[key] = conversation
        try:
            async with conversation.lock:  # busy, so not evicted while it starts
                greeting = await self._call(self.crs.start(session))
        except HTTPException:  # nobody learns the key of a failed start: free it now
            with contextlib.suppress(HTTPException):
                await self.close(key)
            raise
        return conversation, greeting

    def get(self, key: str) -> _Conversation | None:
        """The conversation under `key`, now the most recently used; a first return promotes it."""
        conversation = self._new.pop(key, None) or self._returning.get(key)
        if conversation is not None:
            conversation.touched = time.monotonic()
            self._returning[key] = conversation
            self._returning.move_to_end(key)
        return conversation

    async def close(self, key: str) -> bool:
        """Forget the conversation and release its state, after any reply still being computed."""
        conversation = self._new.pop(key, None) or self._returning.pop(key, None)
        if conversation is None:
            return False
        async with conversation.lock:
            await self._call(self.crs.close(conversation.session))
        return True

    async def close_all(self) -> None:
        for key in [*self._new, *self._returning]:
            await self.close(key)

    async def respond(
        self, conversation: _Conversation, text: str, option: ReplyOption | None = None
    ) -> ReplyBody:
        """The CRS's reply to `text`; `option` is the button the user picked, if any."""
        conversation.session.chosen_option = option
        return _body(await self._call(self.crs.respond(conversation.session, text)))

    async def _expire(self) -> None:
        """Close conversations idle for `idle_timeout_s`; each queue is in order of last use."""
        deadline = time.monotonic() - self.idle_timeout_s
        for queue in (self._new, self._returning):
            expired = []
            for key, conversation in queue.items():
                if conversation.touched >= deadline:
                    break
                if not conversation.lock.locked():
                    expired.append(key)
            for key in expired:
                await self.close(key)

    async def _evict_one(self) -> None:
        for queue in (self._new, self._returning):
            key = next((k for k, c in queue.items() if not c.lock.locked()), None)
            if key is not None:
                self.evicted += 1
                await self.close(key)
                return
        raise HTTPException(
            503, f"all {self.max_sessions} conversations are busy replying (--max-sessions); try again later"
        )

    @staticmethod
    async def _call(awaitable: Any) -> Any:
        try:
            return await awaitable
        except HTTPException:
            raise
        except Exception as exc:  # a failing CRS becomes a 500 for this request only
            raise HTTPException(500, f"CRS failed: {type(exc).__name__}: {exc}") from exc


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
    app.router.route_class = _CleanJSONRoute
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
        return StartResponse(session_id=key, greeting=None if greeting is None else _body(greeting))

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
