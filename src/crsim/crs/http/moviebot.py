"""The IAI MovieBot protocol: Messenger-style envelopes posted to one endpoint.

`POST {"entry":[{"messaging":[{"message":{"text": T},"sender":{"id": ID}}]}]}` ->
`{"message":{"text": ..., "intent": ...}}`. The text `/start` opens a conversation (the reply is the
greeting) and `/exit` closes it; a reply with the stop intent ends the dialogue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import Field

from crsim.crs.base import CRSReply, CRSSession, crs
from crsim.crs.http.base import HTTPCRS, CRSHTTPError, CRSInvalidResponse, ExchangeLog, HTTPParams, field_of


class MovieBotParams(HTTPParams):
    """MovieBot settings."""

    path: str = Field("/", description="Path of the messaging endpoint.")
    stop_intent: str = Field("END", description="Reply intent that ends the dialogue.")
    retry_unsafe: bool = Field(False, description="Resend a message the server may have processed.")


@dataclass
class _State:
    client: httpx.AsyncClient
    sender: str


def _envelope(text: str, sender: str) -> dict[str, Any]:
    return {"entry": [{"messaging": [{"message": {"text": text}, "sender": {"id": sender}}]}]}


@crs("moviebot")
class MovieBotCRS(HTTPCRS):
    """IAI MovieBot (or any server speaking its REST protocol)."""

    Params = MovieBotParams
    params: MovieBotParams

    async def start(self, session: CRSSession) -> CRSReply | None:
        session.state = _State(self.http.open_client(), sender=session.id)
        return await self._send(session.state, "/start")

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        return await self._send(session.state, text)

    async def _send(self, state: _State, text: str) -> CRSReply:
        log = ExchangeLog()
        what = f"POST {self.params.path}"
        data = await self.http.request_json(
            state.client, "POST", self.params.path, _envelope(text, state.sender), log
        )
        if not isinstance(data, dict):
            raise CRSInvalidResponse(f"{what}: expected a JSON object with 'message'")
        message = field_of(data, "message", what=what)
        intent = message.get("intent") if isinstance(message, dict) else None
        reply_text = field_of(message, "text", what=f"{what} message")
        extra = {"intent": intent} if isinstance(intent, str) else {}
        return await self.make_reply(reply_text, log, end=intent == self.params.stop_intent, extra=extra)

    async def close(self, session: CRSSession) -> None:
        state = session.state
        if not isinstance(state, _State):
            return
        try:
            envelope = _envelope("/exit", state.sender)
            await self.http.request_json(state.client, "POST", self.params.path, envelope, ExchangeLog())
        except CRSHTTPError:
            pass  # the dialogue is over; a failed goodbye must not fail it
        finally:
            await self.http.release_client(state.client)
