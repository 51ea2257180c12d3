"""`crsim serve`: any crsim CRS over HTTP, in the generic and CRS Arena protocols, one state per
conversation; and the round trip simulator -> HTTP -> built-in CRS equals the in-process run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from fastapi import HTTPException

from crsim.core.components import BuildContext
from crsim.crs.base import BaseCRS, CRSReply, CRSSession
from crsim.crs.http import CRSArenaCRS, GenericHTTPCRS
from crsim.crs.http.crs_arena import CRSArenaParams
from crsim.crs.http.generic import GenericParams
from crsim.crs.serve_sessions import Conversations
from crsim.crs.server import create_app
from crsim.model.acts import DialogueAct
from crsim.model.domain import Domain
from crsim.model.user import SimulatedUser
from crsim.runner.loop import run_dialogue
from faults.harness import ScriptedUser
from faults.servers import running_server
from support import records_without_timing


class CountingCRS(BaseCRS):
    """Numbers its replies per session and recommends a seeded item, to expose shared state."""

    def __init__(self) -> None:
        self.responded, self.closed = 0, 0

    async def start(self, session: CRSSession) -> CRSReply | None:
        session.state = 0
        return CRSReply(f"Hello {session.id}", annotations={"seed": session.seed})

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        self.responded += 1
        session.state += 1
        act = DialogueAct(intent="recommend", slots=[("title", "Heat")])
        item = str(session.rng.randint(1, 9))
        return CRSReply(f"reply {session.state} to {text}", [item], [act], end=session.state == 3)

    async def close(self, session: CRSSession) -> None:
        self.closed += 1


async def test_generic_protocol_keeps_one_state_per_conversation(domain: Domain) -> None:
    crs = CountingCRS()
    with running_server(create_app(crs)) as url:
        remote = GenericHTTPCRS(GenericParams(base_url=url, link_titles=False), BuildContext(domain))
        runs = [
            run_dialogue(
                ScriptedUser(),
                remote,
                SimulatedUser(id=f"u{i}"),
                dialogue_id=f"d{i}",
                session=CRSSession(f"d{i}", i),
            )
            for i in range(6)
        ]
        dialogues = await asyncio.gather(*runs)
    for i, dialogue in enumerate(dialogues):
        assert dialogue.utterances[0].text == f"Hello d{i}" and dialogue.utterances[0].annotations == {
            "seed": i
        }
        assert [u.text.split(" to ")[0] for u in dialogue.by("crs")[1:]] == ["reply 1", "reply 2", "reply 3"]
        assert dialogue.termination.reason == "crs_ended"
        assert dialogue.by("crs")[1].acts == [DialogueAct(intent="recommend", slots=[("title", "Heat")])]
    assert (crs.responded, crs.closed) == (18, 6)


async def test_a_resent_turn_is_answered_again_not_reprocessed() -> None:
    crs = CountingCRS()
    with running_server(create_app(crs)) as url:
        async with httpx.AsyncClient(base_url=url) as client:
            session_id = (await client.post("/sessions", json={"seed": 3})).json()["session_id"]
            path = f"/sessions/{session_id}/messages"
            first = (await client.post(path, json={"text": "hi", "turn": 1})).json()
            again = (await client.post(path, json={"text": "hi", "turn": 1})).json()
            skipped = await client.post(path, json={"text": "hi", "turn": 5})
            assert (await client.delete(f"/sessions/{session_id}")).status_code == 204
            gone = await client.post(path, json={"text": "hi", "turn": 2})
    assert first == again and crs.responded == 1
    assert skipped.status_code == 409 and gone.status_code == 404


async def test_crs_arena_protocol_over_serve_uses_cookie_sessions(domain: Domain) -> None:
    crs = CountingCRS()
    with running_server(create_app(crs)) as url:
        remote = CRSArenaCRS(CRSArenaParams(base_url=url, link_titles=False), BuildContext(domain))
        runs = [
            run_dialogue(
                ScriptedUser(),
                remote,
                SimulatedUser(id="u"),
                dialogue_id=f"a{i}",
                session=CRSSession(f"a{i}", i),
                max_turns=3,
            )
            for i in range(4)
        ]
        dialogues = await asyncio.gather(*runs)
        async with httpx.AsyncClient(base_url=url) as client:
            assert (await client.get("/")).status_code == 200
    for dialogue in dialogues:
        assert [u.text.split(" to ")[0] for u in dialogue.by("crs")] == ["reply 1", "reply 2", "reply 3"]


async def test_round_trip_through_serve_equals_in_process(tmp_path: Path) -> None:
    from crsim.crs.base import crs_registry
    from crsim.runner.batch import run_batch
    from crsim.runner.build import build_domain, build_experiment
    from crsim.runner.config import ExperimentConfig

    base = {"users": {"size": 6}, "max_turns": 10, "concurrency": 4}
    local = ExperimentConfig.model_validate({**base, "crss": [{"name": "retrieval"}]})
    await run_batch(build_experiment(local), tmp_path / "local")
    cls = crs_registry.get("retrieval")
    served = cls(crs_registry.params("retrieval", {}), BuildContext(build_domain(local)))
    with running_server(create_app(served)) as url:
        spec = {"name": "generic_http", "id": "retrieval", "args": {"base_url": url, "link_titles": False}}
        remote = ExperimentConfig.model_validate({**base, "crss": [spec]})
        await run_batch(build_experiment(remote), tmp_path / "remote")
    local_records = records_without_timing(tmp_path / "local" / "dialogues.jsonl")
    assert len(local_records) == 6
    assert local_records == records_without_timing(tmp_path / "remote" / "dialogues.jsonl")


def test_openapi_document_matches_the_served_routes() -> None:
    import yaml

    documented = yaml.safe_load(
        (Path(__file__).parents[2] / "docs" / "generic-crs-openapi.yaml").read_text(encoding="utf-8")
    )["paths"]
    served = create_app(CountingCRS()).openapi()["paths"]
    for path, operations in documented.items():
        assert set(operations) <= set(served[path]), path


class FragileCRS(BaseCRS):
    """Fails to start odd seeds; replies slowly; logs start, reply and close in order."""

    def __init__(self) -> None:
        self.events: list[str] = []

    async def start(self, session: CRSSession) -> CRSReply | None:
        self.events.append("start")
        if session.seed % 2:
            raise RuntimeError("model not loaded")
        return None

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        self.events.append("respond")
        await asyncio.sleep(0.3)
        self.events.append("replied")
        return CRSReply("Fine.")

    async def close(self, session: CRSSession) -> None:
        self.events.append("close")


async def test_a_failed_start_leaves_no_open_conversation() -> None:
    crs = FragileCRS()
    app = create_app(crs)
    with running_server(app) as url:
        async with httpx.AsyncClient(base_url=url) as client:
            failed = await client.post("/sessions", json={"seed": 1})
            health = (await client.get("/health")).json()
    assert failed.status_code == 500
    assert health["open_sessions"] == 0 and len(app.state.conversations) == 0
    assert crs.events == ["start", "close"]


async def test_closing_waits_for_the_reply_in_progress() -> None:
    crs = FragileCRS()
    with running_server(create_app(crs)) as url:
        async with httpx.AsyncClient(base_url=url) as client:
            session_id = (await client.post("/sessions", json={"seed": 2})).json()["session_id"]
            sending = asyncio.create_task(
                client.post(f"/sessions/{session_id}/messages", json={"text": "hi", "turn": 1})
            )
            await asyncio.sleep(0.1)  # the reply is being computed
            deleted = await client.delete(f"/sessions/{session_id}")
            reply = await sending
    assert reply.status_code == 200 and deleted.status_code == 204
    assert crs.events == ["start", "respond", "replied", "close"]


async def test_a_full_table_closes_one_request_conversations_before_returning_ones() -> None:
    crs = CountingCRS()
    conversations = Conversations(crs, seed=0, max_sessions=3, idle_timeout_s=3600)
    for key in ("kept", "a", "b"):
        await conversations.open(key, key, None)
    assert conversations.get("kept") is not None  # its client came back: protected from one-timers
    for key in ("c", "d", "e", "f"):
        await conversations.open(key, key, None)
    assert len(conversations) == 3 and conversations.evicted == 4 and crs.closed == 4
    assert conversations.get("kept") is not None and conversations.get("a") is None
    assert conversations.get("f") is not None
    await conversations.open("g", "g", None)  # closes "e", the last one-request conversation
    assert conversations.get("g") is not None  # all three returning now: least recently used goes
    await conversations.open("h", "h", None)
    assert conversations.get("kept") is None and conversations.get("f") is not None


async def test_busy_conversations_are_never_evicted_and_a_full_busy_table_is_503() -> None:
    crs = FragileCRS()
    conversations = Conversations(crs, seed=0, max_sessions=1, idle_timeout_s=3600)
    busy, _ = await conversations.open("busy", "busy", 2)
    async with busy.lock:  # a reply is being computed
        with pytest.raises(HTTPException) as refused:
            await conversations.open("new", "new", 2)
    assert refused.value.status_code == 503 and "busy" in str(refused.value.detail)
    await conversations.open("new", "new", 2)  # idle again: closed to make room
    assert conversations.get("busy") is None and conversations.get("new") is not None


async def test_idle_conversations_expire_after_the_timeout() -> None:
    conversations = Conversations(CountingCRS(), seed=0, max_sessions=10, idle_timeout_s=0.05)
    await conversations.open("old", "old", None)
    await asyncio.sleep(0.1)
    await conversations.open("new", "new", None)
    assert conversations.get("old") is None and len(conversations) == 1 and conversations.evicted == 0
