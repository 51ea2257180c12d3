"""The generic JSON protocol (docs/generic-crs-openapi.yaml): the natural way to plug in a new CRS.

`POST /sessions {dialogue_id, seed}` -> `{session_id, greeting}`; `POST /sessions/{id}/messages
{text, turn, option?}` -> `{text, recommended_items?, mentioned_items?, end?, options?}`;
`DELETE /sessions/{id}`. A reply carrying `mentioned_items` (a list, even empty) lists every item its
text names, so crsim does not link titles in it. `options` are the buttons the CRS offers with its
reply (`[{label, payload?}]`); a user who picks one sends its label as `text` and the option itself
as `option`, so the server may act on the payload. The `turn` number lets a server recognise a
message resent after a lost connection and answer it again without reprocessing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import ValidationError

from crsim.crs.base import CRSReply, CRSSession, ReplyOption, crs
from crsim.crs.http.base import HTTPCRS
from crsim.crs.http.client import ExchangeLog
from crsim.crs.http.errors import CRSHTTPError, CRSInvalidResponse, field_of, sent
from crsim.crs.http.params import HTTPParams
from crsim.model.acts import DialogueAct


class GenericParams(HTTPParams):
    """Generic protocol settings: the shared HTTP settings only."""


@dataclass
class _State:
    client: httpx.AsyncClient
    session_id: str = ""
    turn: int = 0
    messages_path: str = ""  #: `/sessions/{id}/messages`, quoted once per dialogue


@crs("generic_http")
class GenericHTTPCRS(HTTPCRS):
    """A CRS served with the generic JSON protocol."""

    Params = GenericParams

    async def start(self, session: CRSSession) -> CRSReply | None:
        state = _State(self.http.open_client())
        session.state = state
        log = ExchangeLog()
        payload = {"dialogue_id": session.id, "seed": session.seed}
        data = await self.http.request_json(state.client, "POST", "/sessions", payload, log)
        session_id = field_of(data, "session_id", what="POST /sessions")
        if not isinstance(session_id, str) or not session_id:
            raise CRSInvalidResponse(
                f"POST /sessions: 'session_id' must be a non-empty string; it sent {sent(session_id)}"
            )
        state.session_id = session_id
        state.messages_path = f"/sessions/{quote(session_id, safe='')}/messages"
        greeting = data.get("greeting")
        return None if greeting is None else await self._reply(greeting, log, "greeting")

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        state: _State = session.state
        state.turn += 1
        log = ExchangeLog()
        path = state.messages_path
        body: dict[str, Any] = {"text": text, "turn": state.turn}
        if session.chosen_option is not None:
            body["option"] = session.chosen_option.model_dump()
        data = await self.http.request_json(state.client, "POST", path, body, log)
        return await self._reply(data, log, f"POST {path}")

    async def _reply(self, data: Any, log: ExchangeLog, what: str) -> CRSReply:
        if not isinstance(data, dict):
            raise CRSInvalidResponse(f"{what}: expected a JSON object with 'text'; it sent {sent(data)}")
        items = _ids(data.get("recommended_items") or [], "recommended_items", what)
        raw_mentioned = data.get("mentioned_items")
        mentioned = None if raw_mentioned is None else _ids(raw_mentioned, "mentioned_items", what)
        named = [*items, *(mentioned or [])]
        unknown = list(dict.fromkeys(i for i in named if i not in self.domain.items))
        extra = {"unknown_items": unknown} if unknown else {}
        end = data.get("end", False)
        if not isinstance(end, bool):
            raise CRSInvalidResponse(f"{what}: 'end' must be true or false; it sent {sent(end)}")
        annotations = data.get("annotations") or {}
        if not isinstance(annotations, dict):
            raise CRSInvalidResponse(
                f"{what}: 'annotations' must be a JSON object; it sent {sent(annotations)}"
            )
        text = field_of(data, "text", what=what)
        acts = _acts(data.get("acts") or [], what)
        known = [i for i in items if i in self.domain.items]
        if mentioned is not None:
            mentioned = [i for i in mentioned if i in self.domain.items]
        return await self.make_reply(
            text,
            log,
            items=known,
            mentioned=mentioned,
            end=end,
            acts=acts,
            extra={**annotations, **extra},
            options=_options(data.get("options") or [], what),
        )

    async def close(self, session: CRSSession) -> None:
        """Delete the server-side session (failures ignored: the dialogue is over), then the client."""
        state = session.state
        if not isinstance(state, _State):
            return
        try:
            if state.session_id:
                path = f"/sessions/{quote(state.session_id, safe='')}"
                await self.http.request_json(state.client, "DELETE", path, None, ExchangeLog())
        except CRSHTTPError:
            pass  # the dialogue is over; a server that cannot free its session must not fail it
        finally:
            await self.http.release_client(state.client)


def _ids(raw: Any, field: str, what: str) -> list[str]:
    if not isinstance(raw, list) or not all(isinstance(i, str) for i in raw):
        raise CRSInvalidResponse(f"{what}: '{field}' must be a list of item id strings; it sent {sent(raw)}")
    return raw


def _acts(raw: Any, what: str) -> list[DialogueAct]:
    try:
        return [DialogueAct.model_validate(a) for a in raw]
    except (ValidationError, TypeError):
        raise CRSInvalidResponse(
            f"{what}: 'acts' must be a list of dialogue acts; it sent {sent(raw)}"
        ) from None


def _options(raw: Any, what: str) -> list[ReplyOption]:
    """The reply's buttons: a list of `{label, payload?}` objects with string (or null) fields."""
    try:
        if not isinstance(raw, list):
            raise TypeError
        return [ReplyOption.model_validate(o) for o in raw]
    except (ValidationError, TypeError):
        raise CRSInvalidResponse(
            f"{what}: 'options' must be a list of objects {{label: string, payload: string or null}}; "
            f"it sent {sent(raw)}"
        ) from None
