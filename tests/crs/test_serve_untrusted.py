"""`crsim serve` reads request bodies as text from outside (a real server on 127.0.0.1): a lone
surrogate in any string is replaced with U+FFFD and counted, and a body that cannot be read (JSON
nested too deeply, an over-long integer, a number that is not finite, bytes that are not UTF-8, a
seed out of range) is a 4xx naming the problem, never a 500."""

from __future__ import annotations

import httpx
import pytest

from crsim.crs.base import BaseCRS, CRSReply, CRSSession
from crsim.crs.serve_protocol import REPLACED_HEADER
from crsim.crs.server import create_app
from faults.servers import running_server

JSON = {"content-type": "application/json"}


class EchoCRS(BaseCRS):
    """Greets with the dialogue id and echoes every message, so what reached the CRS is visible."""

    def __init__(self) -> None:
        self.heard: list[str] = []

    async def start(self, session: CRSSession) -> CRSReply | None:
        return CRSReply(f"Hello {session.id}")

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        self.heard.append(text)
        return CRSReply(f"you said: {text}")


async def _session(client: httpx.AsyncClient) -> str:
    response = await client.post("/sessions", json={})
    assert response.status_code == 200, response.text
    return str(response.json()["session_id"])


async def test_lone_surrogates_in_requests_are_replaced_and_counted() -> None:
    crs = EchoCRS()
    with running_server(create_app(crs)) as url:
        async with httpx.AsyncClient(base_url=url) as client:
            sid = await _session(client)
            body = '{"text": "hi \\ud800 there \\udfff", "turn": 1}'
            generic = await client.post(f"/sessions/{sid}/messages", content=body, headers=JSON)
            arena_body = '{"message": "x\\ud83d", "context": ["\\udc00"]}'
            arena = await client.post("/", content=arena_body, headers=JSON)
            opened = await client.post("/sessions", content='{"dialogue_id": "d\\ud800"}', headers=JSON)
            clean = await client.post(f"/sessions/{sid}/messages", json={"text": "plain"})
    assert generic.status_code == 200, generic.text
    assert generic.json()["text"] == "you said: hi \ufffd there \ufffd"
    assert generic.headers[REPLACED_HEADER] == "2"
    assert arena.status_code == 200 and arena.json() == {"response": "you said: x\ufffd"}
    assert arena.headers[REPLACED_HEADER] == "2"  # the context counts too
    assert opened.status_code == 200 and opened.json()["greeting"]["text"] == "Hello d\ufffd"
    assert REPLACED_HEADER not in clean.headers
    assert crs.heard == ["hi \ufffd there \ufffd", "x\ufffd", "plain"]


DEEP = "[" * 20_000 + "]" * 20_000
LONG_INT = "1" + "0" * 5000


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        (f'{{"text": {DEEP}}}', 400, "nested too deeply"),
        (f'{{"text": "a", "turn": {LONG_INT}}}', 400, "4300 digits"),
        ('{"text": "a", "turn": 1e400}', 400, "not finite"),
        ('{"text": "a", "turn": NaN}', 400, "not finite"),
        (b'{"text": "caf\xe9"}', 400, "not UTF-8"),
        ('{"text": "a", "turn": 0}', 422, "greater than or equal to 1"),
    ],
    ids=["deep", "long-int", "overflow", "nan", "latin1", "bad-turn"],
)
async def test_unreadable_message_bodies_are_4xx_naming_the_problem(
    body: str | bytes, status: int, says: str
) -> None:
    with running_server(create_app(EchoCRS())) as url:
        async with httpx.AsyncClient(base_url=url) as client:
            sid = await _session(client)
            message = await client.post(f"/sessions/{sid}/messages", content=body, headers=JSON)
            raw = body if isinstance(body, bytes) else body.encode()
            arena_body = raw.replace(b'"text"', b'"message"')
            arena = await client.post("/", content=arena_body, headers=JSON)
            still = await client.post(f"/sessions/{sid}/messages", json={"text": "ok"})
    assert message.status_code == status and says in message.text, message.text
    if status == 400:  # the CRS Arena route reads bodies the same way (it has no `turn`)
        assert arena.status_code == 400 and says in arena.text, arena.text
    assert still.status_code == 200  # the server and the conversation go on


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (f'{{"seed": {LONG_INT}}}', 400),
        ('{"seed": 1e400}', 400),
        ('{"seed": Infinity}', 400),
        (f'{{"seed": {2**64}}}', 422),
        (f'{{"seed": {-(2**63) - 1}}}', 422),
        (f'{{"dialogue_id": {DEEP}}}', 400),
    ],
    ids=["long-int", "overflow", "infinity", "seed-2^64", "seed-below", "deep"],
)
async def test_unreadable_start_bodies_are_4xx(body: str, status: int) -> None:
    with running_server(create_app(EchoCRS())) as url:
        async with httpx.AsyncClient(base_url=url) as client:
            response = await client.post("/sessions", content=body, headers=JSON)
            largest = await client.post("/sessions", json={"seed": 2**64 - 1})
    assert response.status_code == status, response.text
    assert largest.status_code == 200  # every seed a 64-bit client can send is accepted
