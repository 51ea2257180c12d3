"""The messages of `crsim serve`'s two protocols (the generic one and CRS Arena's) and how a request
body is read: as text from outside, lone surrogates replaced and counted, unreadable bodies a 400."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import HTTPException, Request, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field

from crsim.crs.base import CRSReply, ReplyOption
from crsim.model.acts import DialogueAct
from crsim.model.text import JSONTextError, loads_clean

#: Response header saying how many lone surrogates in the request's strings were replaced (absent: 0).
REPLACED_HEADER = "x-replaced-code-points"
#: Seeds a client may send: any signed or unsigned 64-bit integer (crsim's own are 63-bit).
SEED_MIN, SEED_MAX = -(2**63), 2**64 - 1


class StartRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dialogue_id: str | None = Field(None, max_length=512)
    seed: int | None = Field(None, ge=SEED_MIN, le=SEED_MAX)


class MessageRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str
    turn: int | None = Field(None, ge=1)
    #: The option of the last reply the user picked (`text` is then its label), handed to the CRS.
    option: ReplyOption | None = None


class ReplyBody(BaseModel):
    text: str
    recommended_items: list[str] = Field(default_factory=list)
    #: Items named without being recommended; present (a list) only when the CRS listed every item it
    #: names (`CRSReply.items_listed`, or mentioned items given), so a client does not link titles.
    mentioned_items: list[str] | None = None
    end: bool = False
    acts: list[DialogueAct] = Field(default_factory=list)
    annotations: dict[str, Any] = Field(default_factory=dict)
    #: Buttons offered with the reply (label shown, payload sent back when picked).
    options: list[ReplyOption] = Field(default_factory=list)


class StartResponse(BaseModel):
    session_id: str
    greeting: ReplyBody | None = None


class ArenaRequest(BaseModel):
    context: list[str] = Field(default_factory=list)
    message: str


class ArenaResponse(BaseModel):
    response: str


class CleanJSONRequest(Request):
    """A request whose JSON body is read as text from outside (`crsim.model.text.loads_clean`).

    Lone surrogates in its strings become U+FFFD (counted in `state.replaced_code_points`); a body
    that is not UTF-8, nested too deeply, holds an over-long integer or a number that is not finite
    is a 400 naming the problem, instead of a 500 or FastAPI's generic "error parsing the body".
    Malformed JSON stays FastAPI's 422 (`json_invalid`, with the position).
    """

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            try:
                text = (await self.body()).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise HTTPException(400, f"request body is not UTF-8 (byte {exc.start})") from None
            try:
                self._json, self.state.replaced_code_points = loads_clean(text, finite=True)
            except JSONTextError as exc:
                raise HTTPException(400, f"request body cannot be read: JSON {exc}") from None
        return self._json


class CleanJSONRoute(APIRoute):
    """Routes of `crsim serve`: bodies read by `CleanJSONRequest`; a reply to a request whose
    strings had code points replaced says how many in the `x-replaced-code-points` header."""

    def get_route_handler(self) -> Callable[[Request], Any]:
        handler = super().get_route_handler()

        async def clean_handler(request: Request) -> Response:
            request = CleanJSONRequest(request.scope, request.receive)
            response: Response = await handler(request)
            replaced = getattr(request.state, "replaced_code_points", 0)
            if replaced:
                response.headers[REPLACED_HEADER] = str(replaced)
            return response

        return clean_handler


def reply_body(reply: CRSReply) -> ReplyBody:
    """The generic protocol's body of a CRS reply."""
    return ReplyBody(
        text=reply.text,
        recommended_items=list(reply.recommended_items),
        mentioned_items=list(reply.mentioned_items) if reply.items_listed or reply.mentioned_items else None,
        end=reply.end,
        acts=list(reply.acts),
        annotations=dict(reply.annotations),
        options=list(reply.options),
    )
