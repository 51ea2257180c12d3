"""A generic-protocol CRS server that misbehaves on a schedule.

A dialogue is affected when sha256(dialogue id) mod `every` is 0, so the affected set is known in
advance; from turn `at_turn` on, each of its messages meets the fault (retries too, except for
`flaky_500`, which fails only the first attempt of a turn). Unaffected dialogues get a recommendation
by title each turn and the CRS ends the dialogue at turn `end_at`.

`serve_faults` starts the server (and, for `drip_headers`, a proxy in front of it that sends the
head of a marked response one byte at a time, which an ASGI app cannot do itself).
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import hashlib
import json
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, HTTPException, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from faults.servers import drip_proxy, running_server

#: Fault kind -> the error type it must produce in the affected dialogues (None: no error).
FAULTS: dict[str, str | None] = {
    "http_500": "CRSStatusError",
    "flaky_500": None,
    "hang": "CRSTimeoutError",
    "disconnect": "CRSConnectionError",
    "invalid_json": "CRSInvalidResponse",
    "empty_text": "CRSInvalidResponse",
    "huge_body": "CRSResponseTooLarge",
    "never_end": None,
    # the reply's text holds a lone surrogate ("\ud800" escape): replaced and counted, no error
    "lone_surrogate": None,
    "gzip_bomb": "CRSResponseTooLarge",
    "deep_json": "CRSInvalidResponse",
    "huge_int": "CRSInvalidResponse",
    "drip_headers": "CRSTimeoutError",
    "cross_host_redirect": "CRSRedirectError",
    # the rest of docs/metrics.md's fault table ("Who failed"): statuses, encodings, shapes
    "http_404": "CRSStatusError",
    "http_422": "CRSStatusError",
    "corrupt_gzip": "CRSInvalidResponse",
    "html_page": "CRSInvalidResponse",
    "wrong_type": "CRSInvalidResponse",
    "missing_text": "CRSInvalidResponse",
}

#: Marks a response whose head the drip proxy sends one byte at a time.
DRIP_HEADER = "x-fault-drip"

TITLES = ("Toy Story (1995)", "Heat (1995)", "The Matrix (1999)", "Fargo (1996)", "Alien (1979)")


@dataclass
class FaultPlan:
    kind: str | None = None
    every: int = 5
    at_turn: int = 2
    end_at: int = 4
    hang_s: float = 1.5
    huge_bytes: int = 5 * 1024 * 1024
    delay_s: float = 0.0
    #: Decompressed size of the gzip bomb (its compressed body is about a thousandth of it).
    bomb_bytes: int = 100 * 1024 * 1024
    #: Seconds between the bytes of a dripped response head.
    drip_s: float = 1.0


@dataclass
class ServerLog:
    """What the server saw: messages received per (dialogue, turn), faults injected."""

    received: Counter[tuple[str, int]] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    authorization: list[str] = field(default_factory=list)


def is_affected(dialogue_id: str, every: int) -> bool:
    digest = hashlib.sha256(dialogue_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % every == 0


class _Start(BaseModel):
    dialogue_id: str
    seed: int


class _Message(BaseModel):
    text: str
    turn: int


def fault_app(plan: FaultPlan, log: ServerLog | None = None) -> FastAPI:
    """The generic protocol with `plan.kind` injected into the affected dialogues."""
    app = FastAPI()
    seen = log if log is not None else ServerLog()
    sessions: dict[str, str] = {}
    if plan.kind == "gzip_bomb":
        _bomb(plan.bomb_bytes)  # seconds of compression: done now, not inside a timed request

    @app.post("/sessions")
    async def start(body: _Start) -> dict[str, Any]:
        session_id = uuid.uuid4().hex
        sessions[session_id] = body.dialogue_id
        return {"session_id": session_id, "greeting": {"text": "Hello! What would you like to watch?"}}

    @app.post("/sessions/{session_id}/messages")
    async def message(session_id: str, body: _Message, request: Request) -> Any:
        dialogue_id = sessions.get(session_id)
        if dialogue_id is None:
            raise HTTPException(404, "unknown session")
        seen.received[dialogue_id, body.turn] += 1
        if plan.delay_s:
            await asyncio.sleep(plan.delay_s)
        end = body.turn >= plan.end_at and not (
            plan.kind == "never_end" and is_affected(dialogue_id, plan.every)
        )
        reply = {"text": f"How about {TITLES[body.turn % len(TITLES)]}?", "end": end}
        if plan.kind and body.turn >= plan.at_turn and is_affected(dialogue_id, plan.every):
            if plan.kind == "hang":  # counted before the wait: the client may give up, or the server stop
                seen.faults[plan.kind] += 1
            injected = await _inject(plan, seen.received[dialogue_id, body.turn], reply, request)
            if injected is not None:
                seen.faults[plan.kind] += plan.kind != "hang"
                return injected
        return reply

    @app.delete("/sessions/{session_id}", status_code=204)
    async def delete(session_id: str) -> Response:
        sessions.pop(session_id, None)
        return Response(status_code=204)

    return app


async def _inject(plan: FaultPlan, attempt: int, reply: dict[str, Any], request: Request) -> Response | None:
    kind = plan.kind
    hostile = _hostile(plan, reply, request) or _table_row(kind, reply)
    if hostile is not None:
        return hostile
    if kind == "http_500" or (kind == "flaky_500" and attempt == 1):
        return Response("internal error", status_code=500)
    if kind == "hang":
        await asyncio.sleep(plan.hang_s)
        return Response(json.dumps({"text": "too late"}), media_type="application/json")
    if kind == "disconnect":
        return StreamingResponse(
            _cut_short(), media_type="application/json", headers={"content-length": "400"}
        )
    if kind == "invalid_json":
        return Response('{"text": "How about Heat', media_type="application/json")
    if kind == "empty_text":
        return Response(json.dumps({"text": "  "}), media_type="application/json")
    if kind == "huge_body":
        return StreamingResponse(_huge(plan.huge_bytes), media_type="application/json")
    return None


def _hostile(plan: FaultPlan, reply: dict[str, Any], request: Request) -> Response | None:
    """The faults found by feeding crsim hostile replies (issue 16)."""
    kind = plan.kind
    if kind == "lone_surrogate":  # json.dumps writes the lone surrogate as the valid escape "\ud800"
        return _json({**reply, "text": f"{reply['text']} \ud800"})
    if kind == "gzip_bomb":
        headers = {"content-encoding": "gzip"}
        return Response(_bomb(plan.bomb_bytes), media_type="application/json", headers=headers)
    if kind == "deep_json":
        return Response('{"text": ' + "[" * 20_000 + "]" * 20_000 + "}", media_type="application/json")
    if kind == "huge_int":
        return Response('{"text": "Heat", "score": ' + "9" * 5_000 + "}", media_type="application/json")
    if kind == "drip_headers":
        return _json(reply, headers={DRIP_HEADER: "1"})
    if kind == "cross_host_redirect":  # same port, another host name: not the origin crsim talks to
        port = request.url.port
        return Response(status_code=307, headers={"location": f"http://localhost:{port}{request.url.path}"})
    return None


def _table_row(kind: str | None, reply: dict[str, Any]) -> Response | None:
    """The other rows of docs/metrics.md's fault table: 4xx statuses, a corrupt encoding, shapes."""
    if kind in ("http_404", "http_422"):
        return Response('{"detail": "planned"}', status_code=int(kind[-3:]), media_type="application/json")
    if kind == "corrupt_gzip":
        gzip_header = {"content-encoding": "gzip"}
        return Response(b"\x1f\x8bnot gzip", media_type="application/json", headers=gzip_header)
    if kind == "html_page":
        return Response("<html><body>Welcome</body></html>", media_type="text/html")
    if kind == "wrong_type":
        return _json({**reply, "text": 42})
    if kind == "missing_text":
        return _json({"end": False})
    return None


def _json(data: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(data), media_type="application/json", headers=headers)


@functools.cache
def _bomb(size: int) -> bytes:
    """A gzip body that inflates to `size` bytes of one JSON reply."""
    return gzip.compress(b'{"text": "' + b"a" * (size - 12) + b'"}', compresslevel=9)


async def _cut_short() -> AsyncIterator[bytes]:
    yield b'{"text": "How about '
    raise ConnectionAbortedError("fault injection: connection closed mid-response")


async def _huge(size: int) -> AsyncIterator[bytes]:
    chunk = b"x" * 65536
    yield b'{"text": "'
    for _ in range(size // len(chunk)):
        yield chunk
    yield b'"}'


@contextmanager
def serve_faults(plan: FaultPlan, log: ServerLog | None = None) -> Iterator[str]:
    """Serve `fault_app(plan, log)` on 127.0.0.1 and yield the URL crsim should use: the drip
    proxy in front of the server for `drip_headers`, the server itself otherwise."""
    with running_server(fault_app(plan, log)) as url:
        if plan.kind != "drip_headers":
            yield url
            return
        with drip_proxy(url, DRIP_HEADER, plan.drip_s) as proxied:
            yield proxied
