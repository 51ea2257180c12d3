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
from fastapi.responses import RedirectResponse

from crs_doubles import CRSArenaServer
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


def _heat_model(context: list[str], state: list[float]) -> tuple[str, list[float]]:
    """A CRS Arena model that counts its turns in the options state the server keeps per cookie."""
    turn = len(context) // 2 + 1
    return f"Turn {turn}: have you seen Heat (1995)?", [state[0] + 1, *state[1:]]


def arena_app(seen: list[dict[str, Any]]) -> FastAPI:
    """CRS Arena's Flask server (tests/crs_doubles.py) around `_heat_model`; `seen` gets every body."""
    server = CRSArenaServer(_heat_model)
    server.seen = seen
    return server.app


def messenger_app(seen: list[tuple[str, str]]) -> FastAPI:
    """An older MovieBot-style server: the Messenger envelope, `/start` and `/exit` commands."""
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
    assert len(seen) == 8  # each message once
    for body in seen:  # the cookie session carried each dialogue's own state, turn by turn
        assert (body["state"] or [0.0])[0] == len(body["context"]) // 2
    assert sorted(len(b["context"]) for b in seen) == [0, 0, 2, 2, 4, 4, 6, 6]
    assert Counter(s["message"] for s in seen)["I would like to watch a science fiction movie."] == 2


async def test_moviebot_options_for_older_servers(domain: Domain) -> None:
    """The Messenger envelope, a `/start` greeting and an `/exit` on close, as configured options
    (MovieBot v2 itself: tests/crs/test_moviebot_adapter.py)."""
    seen: list[tuple[str, str]] = []
    params = MovieBotParams(
        base_url="http://127.0.0.1:1",
        request_format="messenger",
        start_message="/start",
        exit_message="/exit",
        stop_intents=["end"],
    )
    with running_server(messenger_app(seen)) as url:
        crs = MovieBotCRS(params.model_copy(update={"base_url": url}), BuildContext(domain))
        ended = await _talk(crs, "mb-1", max_turns=10)
        limited = await _talk(crs, "mb-2", max_turns=1)
    assert ended.utterances[0].text == "Hi there. I am IAI MovieBot."
    assert ended.termination.reason == "crs_ended"
    assert ended.utterances[-1].annotations["intent"] == "END"
    assert limited.termination.reason == "max_turns" and limited.termination.error is None
    first = [t for s, t in seen if s.startswith("mb-1-")]
    assert first[0] == "/start" and "/exit" not in first  # MovieBot ended it: nothing more is sent
    assert [t for s, t in seen if s.startswith("mb-2-")][-1] == "/exit"


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
