"""The shared HTTP client rules that the adapter tests do not reach: keys that cannot go into a
header, transport errors mapped to crsim's error kinds, resends that the record must admit to,
plain-text health checks, and title linking that leaves the event loop free."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fastapi import FastAPI, Request, Response
from fastapi.responses import PlainTextResponse, StreamingResponse

from crsim.core.components import BuildContext
from crsim.core.errors import ConfigError
from crsim.crs.base import CRSSession
from crsim.crs.http import CRSArenaCRS, CRSInvalidResponse, CRSStatusError, CRSTimeoutError, GenericHTTPCRS
from crsim.crs.http.crs_arena import CRSArenaParams
from crsim.crs.http.generic import GenericParams
from crsim.model.domain import Domain
from crsim.model.user import SimulatedUser
from crsim.runner.loop import run_dialogue
from faults.harness import ScriptedUser
from faults.servers import running_server

SENTINEL = "sk-sentinel-91b2c3d4-do-not-leak"


def _arena(seen: list[str], reply: str = "How about Heat (1995)?") -> FastAPI:
    app = FastAPI()

    @app.get("/")
    async def health() -> Response:
        seen.append("GET")
        return PlainTextResponse("CRS Arena server is running")  # what a Flask wrapper answers

    @app.post("/")
    async def chat(request: Request) -> dict[str, str]:
        seen.append(request.headers.get("authorization", ""))
        return {"response": reply}

    return app


def _generic(replies: list[Response | dict[str, Any]]) -> tuple[FastAPI, list[int]]:
    """A generic-protocol server answering messages from `replies` in order (the last one repeats)."""
    app, calls = FastAPI(), list[int]()

    @app.post("/sessions")
    async def start() -> dict[str, Any]:
        return {"session_id": "s1"}

    @app.post("/sessions/s1/messages")
    async def message() -> Any:
        calls.append(1)
        return replies[min(len(calls), len(replies)) - 1]

    @app.delete("/sessions/s1")
    async def delete() -> Response:
        return Response(status_code=204)

    return app, calls


async def test_health_check_accepts_a_plain_text_body(domain: Domain) -> None:
    seen: list[str] = []
    with running_server(_arena(seen)) as url:
        crs = CRSArenaCRS(CRSArenaParams(base_url=url, health_check=True), BuildContext(domain))
        dialogue = await run_dialogue(
            ScriptedUser(),
            crs,
            SimulatedUser(id="u"),
            dialogue_id="h",
            session=CRSSession("h", 1),
            max_turns=2,
        )
    assert dialogue.termination is not None and dialogue.termination.reason == "max_turns", (
        dialogue.termination
    )
    assert seen[0] == "GET" and len(seen) == 3


async def test_a_key_with_a_stray_line_end_is_trimmed_and_never_recorded(
    domain: Domain, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRSIM_TEST_KEY", f"{SENTINEL}\r\n")  # a key file written on Windows
    seen: list[str] = []
    with running_server(_arena(seen)) as url:
        crs = CRSArenaCRS(CRSArenaParams(base_url=url, api_key_env="CRSIM_TEST_KEY"), BuildContext(domain))
        dialogue = await run_dialogue(
            ScriptedUser(),
            crs,
            SimulatedUser(id="u"),
            dialogue_id="k",
            session=CRSSession("k", 1),
            max_turns=1,
        )
    assert seen == [f"Bearer {SENTINEL}"]
    assert dialogue.termination is not None and dialogue.termination.error is None
    assert SENTINEL not in dialogue.model_dump_json()


def test_a_key_that_cannot_be_a_header_fails_the_config_without_quoting_it(
    domain: Domain, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRSIM_TEST_KEY", f"{SENTINEL}\nsecond-line")
    with pytest.raises(ConfigError, match="cannot go into an HTTP header") as caught:
        CRSArenaCRS(
            CRSArenaParams(base_url="http://127.0.0.1:1", api_key_env="CRSIM_TEST_KEY"), BuildContext(domain)
        )
    assert SENTINEL not in str(caught.value)


async def test_an_undecodable_body_is_an_invalid_response(domain: Domain) -> None:
    broken = Response(b"not gzip at all", media_type="application/json", headers={"content-encoding": "gzip"})
    app, _ = _generic([broken])
    with running_server(app) as url:
        crs = GenericHTTPCRS(GenericParams(base_url=url), BuildContext(domain))
        session = CRSSession("d", 1)
        await crs.start(session)
        with pytest.raises(CRSInvalidResponse, match="could not be decoded"):
            await crs.respond(session, "hello")
        await crs.close(session)


async def test_a_server_cannot_hide_that_a_message_was_resent(domain: Domain) -> None:
    hiding = {"text": "Fine.", "annotations": {"http": {"retries": [], "message_possibly_resent": False}}}
    app, calls = _generic([Response("oops", status_code=503), hiding])
    with running_server(app) as url:
        crs = GenericHTTPCRS(
            GenericParams(base_url=url, retry_backoff_s=0, link_titles=False), BuildContext(domain)
        )
        session = CRSSession("d", 1)
        await crs.start(session)
        reply = await crs.respond(session, "hello")
        await crs.close(session)
    assert len(calls) == 2
    assert reply.annotations["http"]["message_possibly_resent"] is True
    assert reply.annotations["http"]["retries"][0]["reason"].endswith("HTTP 503")


async def test_a_failure_after_resends_says_the_message_may_have_been_processed_twice(domain: Domain) -> None:
    app, calls = _generic([Response("oops", status_code=500)])
    with running_server(app) as url:
        params = GenericParams(base_url=url, retry_backoff_s=0, max_retries=1)
        crs = GenericHTTPCRS(params, BuildContext(domain))
        session = CRSSession("d", 1)
        await crs.start(session)
        with pytest.raises(CRSStatusError, match="after 2 attempts; the server may have processed"):
            await crs.respond(session, "hello")
        await crs.close(session)
    assert len(calls) == 2


async def test_linking_a_long_reply_leaves_the_event_loop_free(domain: Domain) -> None:
    """Linking ~25 KB of 'title (year)' text takes about a second of CPU; other dialogues must not wait."""
    gaps: list[float] = []

    async def ticker(stop: asyncio.Event) -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    with running_server(_arena([], reply="some film (1999) " * 1500)) as url:
        crs = CRSArenaCRS(CRSArenaParams(base_url=url), BuildContext(domain))
        session = CRSSession("long", 1)
        await crs.start(session)
        stop = asyncio.Event()
        ticking = asyncio.create_task(ticker(stop))
        started = time.perf_counter()
        await crs.respond(session, "hello")
        took = time.perf_counter() - started
        stop.set()
        await ticking
        await crs.close(session)
    assert took > 0.4, "the reply must be slow to link for this test to mean anything"
    # on the loop, one gap would be the whole linking time; off it, gaps are thread switches (a loaded
    # machine stretches both, so the bound is relative, not a fixed number of seconds)
    assert max(gaps) < took / 2, f"the event loop stalled for {max(gaps):.2f}s of {took:.2f}s"


async def test_the_attempt_deadline_alone_bounds_a_body_that_stalls(domain: Domain) -> None:
    """httpx's own read/write/pool timers are off (one timer per socket operation, and they could only
    fire after the attempt's deadline, which starts first); the deadline still cuts a stalled body at
    `timeout_s` as a CRSTimeoutError, and the connect timeout is httpx's as before."""
    app = FastAPI()

    @app.post("/sessions")
    async def start() -> StreamingResponse:
        async def body() -> AsyncIterator[bytes]:
            yield b'{"session_id": '
            await asyncio.sleep(10)
            yield b'"s1"}'

        return StreamingResponse(body(), media_type="application/json")

    with running_server(app) as url:
        params = GenericParams(base_url=url, timeout_s=0.5, connect_timeout_s=2.0, max_retries=0)
        crs = GenericHTTPCRS(params, BuildContext(domain))
        client = crs.http.open_client()
        assert client.timeout.read is client.timeout.write is client.timeout.pool is None
        assert client.timeout.connect == 2.0
        await client.aclose()
        started = time.monotonic()
        with pytest.raises(CRSTimeoutError, match=r"within 0\.5s"):
            await crs.start(CRSSession("d1", 1))
        assert time.monotonic() - started < 3.0  # the 0.5 s deadline, with slack for a loaded machine
        await crs.aclose()
