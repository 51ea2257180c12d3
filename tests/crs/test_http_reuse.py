"""An HTTP CRS's clients are lent from dialogue to dialogue: the keep-alive connection carries on,
the cookie jar does not; a client whose request failed is closed, not lent; the batch closes what
is kept when it is done. Real servers on 127.0.0.1 (the server sees the client's port)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from crsim.core.components import BuildContext
from crsim.crs.base import CRSSession
from crsim.crs.http import CRSArenaCRS, GenericHTTPCRS
from crsim.crs.http.crs_arena import CRSArenaParams
from crsim.crs.http.generic import GenericParams
from crsim.model.domain import Domain
from crsim.model.user import SimulatedUser
from crsim.runner.loop import run_dialogue
from faults.harness import ScriptedUser, http_experiment, run_experiment
from faults.servers import running_server


def _cookie_app(seen: list[tuple[int, str]]) -> FastAPI:
    """A CRS Arena-style server that records (client port, cookie sent) and sets a new cookie."""
    app = FastAPI()

    @app.post("/")
    async def chat(request: Request) -> Response:
        port = request.client.port if request.client else -1
        cookie = request.cookies.get("session", "")
        seen.append((port, cookie))
        response = JSONResponse({"response": "Have you seen Heat (1995)?"})
        if not cookie:
            response.set_cookie("session", f"c{len(seen)}")
        return response

    return app


async def _talk(crs: Any, dialogue_id: str, max_turns: int = 2) -> Any:
    return await run_dialogue(
        ScriptedUser(),
        crs,
        SimulatedUser(id=dialogue_id),
        dialogue_id=dialogue_id,
        session=CRSSession(dialogue_id, 1),
        max_turns=max_turns,
    )


async def test_the_next_dialogue_keeps_the_connection_but_not_the_cookies(domain: Domain) -> None:
    seen: list[tuple[int, str]] = []
    with running_server(_cookie_app(seen)) as url:
        crs = CRSArenaCRS(CRSArenaParams(base_url=url), BuildContext(domain))
        for name in ("a", "b"):
            dialogue = await _talk(crs, name)
            assert dialogue.termination.reason == "max_turns", dialogue.termination
        await crs.aclose()
    ports = [port for port, _ in seen]
    assert len(seen) == 4 and len(set(ports)) == 1, seen  # one connection for both dialogues
    # each dialogue starts without a cookie and sends back only the one it was given
    assert [cookie for _, cookie in seen] == ["", "c1", "", "c3"], seen


async def test_dialogues_under_way_never_share_a_client(domain: Domain) -> None:
    seen: list[tuple[int, str]] = []
    with running_server(_cookie_app(seen)) as url:
        crs = CRSArenaCRS(CRSArenaParams(base_url=url), BuildContext(domain))
        await asyncio.gather(*(_talk(crs, f"d{i}", max_turns=3) for i in range(3)))
        await asyncio.gather(*(_talk(crs, f"e{i}", max_turns=3) for i in range(3)))
        await crs.aclose()
    by_port: dict[int, list[str]] = {}
    for port, cookie in seen:
        by_port.setdefault(port, []).append(cookie)
    # three connections, each carrying one dialogue of each round: no cookie, then its own twice
    assert len(by_port) == 3, by_port
    for cookies in by_port.values():
        assert len(cookies) == 6 and cookies[0] == cookies[3] == "", cookies
        assert cookies[1] == cookies[2] != cookies[4] == cookies[5], cookies


def _generic_app(seen: list[int], slow: str = "") -> FastAPI:
    """Generic protocol recording the client port of each new session; the replies of session
    `slow` come too late for a 0.3 s deadline."""
    app, sessions = FastAPI(), [0]

    @app.post("/sessions")
    async def start(request: Request) -> dict[str, Any]:
        seen.append(request.client.port if request.client else -1)
        sessions[0] += 1
        return {"session_id": f"s{sessions[0]}"}

    @app.post("/sessions/{sid}/messages")
    async def message(sid: str) -> dict[str, Any]:
        if sid == slow:
            await asyncio.sleep(1.0)
        return {"text": "How about Heat (1995)?"}

    @app.delete("/sessions/{sid}")
    async def delete(sid: str) -> Response:
        if sid == slow:
            await asyncio.sleep(1.0)
        return Response(status_code=204)

    return app


async def test_a_client_whose_request_failed_is_closed_not_lent(domain: Domain) -> None:
    seen: list[int] = []
    opened: list[httpx.AsyncClient] = []
    with running_server(_generic_app(seen, slow="s1")) as url:
        params = GenericParams(base_url=url, timeout_s=0.3, max_retries=0)
        crs = GenericHTTPCRS(params, BuildContext(domain))
        new_client = crs.http._new_client

        def recorded() -> httpx.AsyncClient:
            opened.append(new_client())
            return opened[-1]

        crs.http._new_client = recorded  # type: ignore[method-assign]
        failed = await _talk(crs, "late")
        assert failed.termination.error is not None
        assert failed.termination.error.type == "CRSTimeoutError", failed.termination
        assert opened[0].is_closed  # its last request timed out: its connection may be unusable
        ok = await _talk(crs, "next")
        assert ok.termination.reason == "max_turns", ok.termination
        await crs.aclose()
    assert len(opened) == 2 and seen[0] != seen[1]


async def test_the_batch_closes_the_clients_it_kept(domain: Domain, tmp_path: Path) -> None:
    opened: list[httpx.AsyncClient] = []
    seen: list[int] = []
    with running_server(_generic_app(seen)) as url:
        experiment = http_experiment(domain, url, dialogues=6, max_turns=2)
        experiment = replace(experiment, config=experiment.config.model_copy(update={"concurrency": 2}))
        crs = experiment.crss["remote"]
        assert isinstance(crs, GenericHTTPCRS)
        new_client = crs.http._new_client

        def recorded() -> httpx.AsyncClient:
            opened.append(new_client())
            return opened[-1]

        crs.http._new_client = recorded  # type: ignore[method-assign]
        result, dialogues = await run_experiment(experiment, tmp_path / "run")
    assert result.ran == 6 and all(d.termination.reason == "max_turns" for d in dialogues)
    assert len(opened) == 2 and all(client.is_closed for client in opened)  # two at a time, lent on
    assert len(set(seen)) == 2, seen


@pytest.mark.parametrize("other_loop", [False, True])
def test_a_client_is_lent_only_within_its_event_loop(domain: Domain, other_loop: bool) -> None:
    seen: list[tuple[int, str]] = []
    with running_server(_cookie_app(seen)) as url:
        crs = CRSArenaCRS(CRSArenaParams(base_url=url), BuildContext(domain))

        async def two(close: bool) -> None:
            await _talk(crs, "x")
            if not other_loop:
                await _talk(crs, "y")
            if close:
                await crs.aclose()

        asyncio.run(two(close=not other_loop))
        if other_loop:  # the first loop's kept client belongs to a closed loop: a new one is made
            asyncio.run(two(close=True))
    ports = {port for port, _ in seen}
    assert len(seen) == 4 and len(ports) == (2 if other_loop else 1), seen
