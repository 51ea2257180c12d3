"""The CRS Arena and MovieBot adapters against small real servers that speak those protocols,
plus the shared client rules: one send per message, cookies per dialogue, no foreign redirects,
capped bodies, a concurrency limit and secrets kept out of every record."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse

from crsim.components import BuildContext
from crsim.crs.base import CRSSession
from crsim.crs.http import CRSArenaCRS, CRSRedirectError, CRSResponseTooLarge, MovieBotCRS
from crsim.crs.http.crs_arena import CRSArenaParams
from crsim.crs.http.moviebot import MovieBotParams
from crsim.errors import ConfigError
from crsim.model.domain import Domain
from crsim.model.user import SimulatedUser
from crsim.run.loop import run_dialogue
from faults.harness import ScriptedUser, http_experiment, run_experiment
from faults.servers import running_server


def arena_app(seen: list[dict[str, Any]]) -> FastAPI:
    """CRS Arena: state in a cookie session; the context must match what the server itself said."""
    app, histories = FastAPI(), dict[str, list[str]]()

    @app.get("/")
    async def health() -> str:
        return "CRS Arena server is running"

    @app.post("/")
    async def chat(request: Request) -> Response:
        body = await request.json()
        cookie = request.cookies.get("session") or f"c{len(histories)}"
        history = histories.setdefault(cookie, [])
        seen.append({"cookie": cookie, **body})
        if body["context"] != history:
            return JSONResponse({"error": "context does not match the session"}, status_code=400)
        reply = f"Turn {len(history) // 2 + 1}: have you seen Heat (1995)?"
        history.extend([body["message"], reply])
        response = JSONResponse({"response": reply})
        response.set_cookie("session", cookie)
        return response

    return app


def moviebot_app(seen: list[tuple[str, str]]) -> FastAPI:
    app = FastAPI()

    @app.post("/")
    async def messaging(request: Request) -> dict[str, Any]:
        event = (await request.json())["entry"][0]["messaging"][0]
        text, sender = event["message"]["text"], event["sender"]["id"]
        seen.append((sender, text))
        if text == "/start":
            return {"message": {"text": "Hi there. I am IAI MovieBot.", "intent": "WELCOME"}}
        if text == "/exit" or "3" in text:
            return {"message": {"text": "Goodbye!", "intent": "END"}}
        return {"message": {"text": "I found Fargo (1996). Do you like it?", "intent": "RECOMMEND"}}

    return app


async def _talk(crs: Any, dialogue_id: str, max_turns: int = 4) -> Any:
    session = CRSSession(dialogue_id, 1)
    return await run_dialogue(
        ScriptedUser(),
        crs,
        SimulatedUser(id=dialogue_id),
        dialogue_id=dialogue_id,
        session=session,
        max_turns=max_turns,
    )


async def test_crs_arena_cookie_sessions_context_and_single_sends(domain: Domain) -> None:
    seen: list[dict[str, Any]] = []
    with running_server(arena_app(seen)) as url:
        crs = CRSArenaCRS(CRSArenaParams(base_url=url, health_check=True), BuildContext(domain))
        a, b = await asyncio.gather(_talk(crs, "a"), _talk(crs, "b"))
    for dialogue in (a, b):
        assert dialogue.termination.reason == "max_turns", dialogue.termination
        assert dialogue.utterances[0].role == "user"  # no invented greeting
        assert [u.text for u in dialogue.by("crs")] == [
            f"Turn {n}: have you seen Heat (1995)?" for n in (1, 2, 3, 4)
        ]
        assert [domain.items[i].title for i in dialogue.utterances[1].recommended_items] == ["Heat"]
    assert (
        len(seen) == 8 and len({s["cookie"] for s in seen}) == 2
    )  # each message once, one cookie per dialogue
    assert Counter(s["message"] for s in seen)["I would like to watch a science fiction movie."] == 2


async def test_moviebot_start_stop_intent_and_exit(domain: Domain) -> None:
    seen: list[tuple[str, str]] = []
    with running_server(moviebot_app(seen)) as url:
        dialogue = await _talk(
            MovieBotCRS(MovieBotParams(base_url=url), BuildContext(domain)), "mb-1", max_turns=10
        )
    assert dialogue.utterances[0].text == "Hi there. I am IAI MovieBot."
    assert dialogue.termination.reason == "crs_ended"
    assert dialogue.utterances[-1].annotations["intent"] == "END"
    assert seen[0][1] == "/start" and seen[-1] == ("mb-1", "/exit")
    assert {s for s, _ in seen} == {"mb-1"}


async def test_redirects_only_within_the_same_host(domain: Domain) -> None:
    app = FastAPI()
    with running_server(arena_app([])) as other:

        @app.post("/")
        async def away() -> Response:
            return RedirectResponse(other.replace("127.0.0.1", "localhost") + "/", status_code=307)

        @app.post("/moved")
        async def moved() -> Response:
            return RedirectResponse("/", status_code=307)

        with running_server(app) as url:
            crs = CRSArenaCRS(CRSArenaParams(base_url=url, path="/moved"), BuildContext(domain))
            session = CRSSession("r", 1)
            await crs.start(session)
            with pytest.raises(CRSRedirectError, match="another host"):
                await crs.respond(session, "hello")
            await crs.close(session)


async def test_response_size_is_capped(domain: Domain) -> None:
    app = FastAPI()

    @app.post("/")
    async def big() -> dict[str, str]:
        return {"response": "x" * 5000}

    with running_server(app) as url:
        crs = CRSArenaCRS(CRSArenaParams(base_url=url, max_response_bytes=1000), BuildContext(domain))
        session = CRSSession("s", 1)
        await crs.start(session)
        with pytest.raises(CRSResponseTooLarge, match="1000-byte limit"):
            await crs.respond(session, "hello")


async def test_concurrency_limit_holds(domain: Domain) -> None:
    app, state = FastAPI(), {"now": 0, "max": 0}

    @app.post("/")
    async def slow(request: Request) -> dict[str, str]:
        state["now"] += 1
        state["max"] = max(state["max"], state["now"])
        await asyncio.sleep(0.05)
        state["now"] -= 1
        return {"response": "Fine."}

    with running_server(app) as url:
        crs = CRSArenaCRS(CRSArenaParams(base_url=url, max_concurrency=2), BuildContext(domain))
        await asyncio.gather(*(_talk(crs, f"d{i}", max_turns=2) for i in range(8)))
    assert state["max"] == 2


SENTINEL = "sk-sentinel-4f1c9e77-do-not-leak"


async def test_api_key_is_sent_but_never_recorded(
    domain: Domain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("CRSIM_TEST_KEY", SENTINEL)
    app, headers = FastAPI(), list[str]()

    @app.post("/sessions")
    async def start(request: Request) -> Response:
        headers.append(request.headers.get("authorization", ""))
        return Response(f"bad gateway (you sent {request.headers.get('authorization')})", status_code=502)

    with running_server(app) as url:
        experiment = http_experiment(
            domain, url, dialogues=3, api_key_env="CRSIM_TEST_KEY", retry_backoff_s=0
        )
        _, dialogues = await run_experiment(experiment, tmp_path / "run")
    assert headers and set(headers) == {f"Bearer {SENTINEL}"}
    assert all(d.termination and d.termination.reason == "crs_error" for d in dialogues)
    written = "".join(p.read_text() for p in (tmp_path / "run").iterdir()) + caplog.text
    assert SENTINEL not in written and "CRSIM_TEST_KEY" in json.dumps(experiment.components)
    monkeypatch.delenv("CRSIM_TEST_KEY")
    with pytest.raises(ConfigError, match="'CRSIM_TEST_KEY' is not set"):
        http_experiment(domain, url, api_key_env="CRSIM_TEST_KEY")


async def test_a_title_repeated_by_an_http_crs_is_recommended_once(domain: Domain) -> None:
    """CRS Arena returns text only; the server names Heat in every reply. Only the first names it
    for the first time, so only the first opens a recommendation round."""
    with running_server(arena_app([])) as url:
        crs = CRSArenaCRS(CRSArenaParams(base_url=url), BuildContext(domain))
        dialogue = await run_dialogue(
            ScriptedUser(),
            crs,
            SimulatedUser(id="r"),
            dialogue_id="r",
            session=CRSSession("r", 1),
            max_turns=3,
            items=domain.items,
        )
    heat = next(i.id for i in domain.items if i.title == "Heat" and i.year == 1995)
    replies = dialogue.by("crs")
    assert [(u.recommended_items, u.mentioned_items) for u in replies] == [
        ([heat], []),
        ([], [heat]),
        ([], [heat]),
    ]
    assert all(u.annotations["recommended_items_source"] == "linked" for u in replies)
