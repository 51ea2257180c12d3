"""The CRS Arena protocol: the Flask server that serves KBRD, BARCOR, UniCRS and ChatGPT.

Written from CRS Arena's fork of iEvaLM-CRS (hideaki-j/iEvaLM-CRS, `script/serve_model.py` at commit
e351b52325ccf673b01b6b002f9b5f7f0124e807): `GET /` is a health check ("Model is running.");
`POST / {"context": [...], "message": "..."}` -> `{"response": "..."}`, HTTP 400 with a text body when
either field is missing.
`context` holds the previous utterances, alternating and user first. The server keeps the rest of a
conversation's state (the model's options state) in its cookie session, so each dialogue has its own
cookie jar. The server never greets, so neither does the adapter; each user message is sent once (no
resend of a possibly processed message).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx
from pydantic import Field

from crsim.crs.base import CRSReply, CRSSession, crs
from crsim.crs.http.base import HTTPCRS
from crsim.crs.http.client import ExchangeLog
from crsim.crs.http.errors import CRSInvalidResponse, field_of, sent
from crsim.crs.http.params import HTTPParams


class CRSArenaParams(HTTPParams):
    """CRS Arena settings; resending a message the server may have seen is off by default."""

    path: str = Field("/", description="Path of the chat endpoint.")
    retry_unsafe: bool = Field(False, description="Resend a message the server may have processed.")
    health_check: bool = Field(False, description="GET the endpoint before each dialogue.")


@dataclass
class _State:
    client: httpx.AsyncClient
    context: list[str] = field(default_factory=list)


@crs("crs_arena")
class CRSArenaCRS(HTTPCRS):
    """A CRS behind a CRS Arena-style server."""

    Params = CRSArenaParams
    params: CRSArenaParams

    async def start(self, session: CRSSession) -> CRSReply | None:
        session.state = _State(self.http.open_client())
        if self.params.health_check:  # any 2xx body will do: the Flask wrappers answer in plain text
            await self.http.request(session.state.client, "GET", self.params.path, None, ExchangeLog())
        return None

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        state: _State = session.state
        log = ExchangeLog()
        payload = {"context": list(state.context), "message": text}
        data = await self.http.request_json(state.client, "POST", self.params.path, payload, log)
        if not isinstance(data, dict):
            raise CRSInvalidResponse(
                f"POST {self.params.path}: expected a JSON object with 'response'; it sent {sent(data)}"
            )
        reply = await self.make_reply(field_of(data, "response", what=f"POST {self.params.path}"), log)
        state.context.extend([text, reply.text])
        return reply
