"""The IAI MovieBot REST protocol, as MovieBot v2's Flask REST controller speaks it.

Written from iai-group/MovieBot at commit bb78caae5ab55837d65727ddbcdcad609f723826
(`moviebot/controller/controller_flask_rest.py`, `moviebot/controller/http_data_formatter.py`,
`moviebot/agent/agent.py`, `moviebot/nlg/nlg.py`) and DialogueKit 0.0.9.dev0, which it runs on.

`POST / {"message": {"text": T}, "sender": {"id": S}}` -> `{"recipient": S, "message": {"text": ...,
"intent": "count results;elicit", "attachments": [{"type": "buttons", "payload": {"buttons": [{"title":
"Seen it", "payload": "I have already watched it.", "button_type": "postback"}, ...]}}, ...]}}`.

What the server does, and what the adapter does about it:

- A body it cannot read is not refused: a missing sender becomes the shared sender `ClientREST` and a
  missing text the empty string. The adapter checks that every reply is addressed to the sender it
  sent (`recipient`), so a server that did not read the request fails the dialogue.
- One conversation per sender id, for the server's lifetime; the first message of a new sender is
  already user text (v2 greets internally and returns the reply to that message, so `/start` is not a
  command). Sender ids are made from the dialogue id with a random suffix, so a second run against
  the same server gets fresh conversations, and only of characters a file name can hold: MovieBot
  saves a conversation to `dialogue_export/IAIMovieBot_<sender>.json` when it says goodbye, and a
  `/` in the sender makes that fail with HTTP 500. The id used is in the first CRS utterance's
  `crs_session` annotation.
- Intents are `;`-joined; a reply ends the dialogue when any part is a stop intent (`bye`).
  Titles linked in a reply count as recommendations only when its intent recommends (`recommend`);
  in others ("no results ... similar to Taken", an answer about the item in focus) they are mentions.
- The conversation ends on the server when MovieBot says goodbye, usually to the user's goodbye:
  the user's closing message is sent on close, and a failure there is reported, not hidden.
- Buttons are kept as the reply's `options` (label = button title, payload = the text to send back);
  a button the user pressed (`CRSSession.chosen_option`) is sent as its payload.

Older servers: `request_format: messenger` posts the Messenger envelope
`{"entry": [{"messaging": [...]}]}`; `start_message: /start` and `exit_message: /exit` send the
commands the 2023 Flask controller had.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Any, Literal

import httpx
from pydantic import Field

from crsim.crs.base import CRSReply, CRSSession, ReplyOption, crs
from crsim.crs.http.base import HTTPCRS
from crsim.crs.http.client import ExchangeLog
from crsim.crs.http.errors import CRSInvalidResponse, field_of, sent
from crsim.crs.http.params import HTTPParams
from crsim.model.annotations import CRS_INTENT, CRS_SESSION, RECOMMENDED_ITEMS_SOURCE


class MovieBotParams(HTTPParams):
    """MovieBot settings; the defaults are those of MovieBot v2's REST controller."""

    path: str = Field("/", description="Path of the messaging endpoint.")
    request_format: Literal["flat", "messenger"] = Field(
        "flat",
        description="'flat': {message, sender} at the top level (MovieBot's REST controllers); "
        "'messenger': the Messenger envelope {entry: [{messaging: [...]}]} of older servers.",
    )
    stop_intents: list[str] = Field(
        ["bye"], description="Reply intents that end the dialogue (any ';'-separated part, any case)."
    )
    recommend_intents: list[str] = Field(
        ["recommend"],
        description="Reply intents whose linked titles are recommendations; in replies with other "
        "intents they are mentions. Replies without an intent are linked as usual.",
    )
    start_message: str | None = Field(
        None, description="Text sent to open a conversation, its reply the greeting (v1 servers: '/start')."
    )
    exit_message: str | None = Field(
        None,
        description="Text sent on close when the user did not end the dialogue with a message of its own "
        "(v1 servers: '/exit').",
    )
    retry_unsafe: bool = Field(False, description="Resend a message the server may have processed.")


@dataclass
class _State:
    client: httpx.AsyncClient
    sender: str
    replies: int = 0
    ended: bool = False  #: the server said goodbye: it takes no further message from this sender


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def sender_id(dialogue_id: str) -> str:
    """A sender id for one dialogue: its id in file-name characters (readable in MovieBot's export
    file names) and a random suffix, so that no two sessions share a MovieBot conversation."""
    readable = _UNSAFE.sub("_", dialogue_id).strip("._")[:80] or "dialogue"
    return f"{readable}-{secrets.token_hex(4)}"


def intent_parts(intent: str) -> set[str]:
    """The parts of a `;`-joined MovieBot intent, lower-cased (`count results;elicit`)."""
    return {part.strip().lower() for part in intent.split(";") if part.strip()}


@crs("moviebot")
class MovieBotCRS(HTTPCRS):
    """IAI MovieBot (or any server speaking its REST protocol)."""

    Params = MovieBotParams
    params: MovieBotParams

    async def start(self, session: CRSSession) -> CRSReply | None:
        state = _State(self.http.open_client(), sender=sender_id(session.id))
        session.state = state
        if self.params.start_message is None:
            return None
        return await self._send(state, self.params.start_message)

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        state: _State = session.state
        if state.ended:
            raise CRSInvalidResponse("MovieBot already ended this conversation; it takes no further message")
        return await self._send(state, _pressed(session, text))

    def _body(self, text: str, sender: str) -> dict[str, Any]:
        event = {"message": {"text": text}, "sender": {"id": sender}}
        return {"entry": [{"messaging": [event]}]} if self.params.request_format == "messenger" else event

    async def _send(self, state: _State, text: str) -> CRSReply:
        log = ExchangeLog()
        what = f"POST {self.params.path}"
        body = self._body(text, state.sender)
        data = await self.http.request_json(state.client, "POST", self.params.path, body, log)
        if not isinstance(data, dict):
            raise CRSInvalidResponse(
                f"{what}: expected a JSON object with 'recipient' and 'message'; it sent {sent(data)}"
            )
        self._check_recipient(data, state.sender, what)
        message = field_of(data, "message", what=what)
        if not isinstance(message, dict):
            raise CRSInvalidResponse(f"{what}: 'message' must be a JSON object; it sent {sent(message)}")
        reply_text = field_of(message, "text", what=f"{what} message")
        intent = message.get("intent")
        if intent is not None and not isinstance(intent, str):
            raise CRSInvalidResponse(
                f"{what}: 'message.intent' must be a string or null; it sent {sent(intent)}"
            )
        options = _buttons(message.get("attachments"), what)
        extra: dict[str, Any] = {}
        if intent:
            CRS_INTENT.put(extra, intent)
        if state.replies == 0:
            CRS_SESSION.put(extra, state.sender)
        state.replies += 1
        parts = intent_parts(intent or "")
        end = bool(parts & {s.lower() for s in self.params.stop_intents})
        state.ended = state.ended or end
        recommends = not parts or bool(parts & {r.lower() for r in self.params.recommend_intents})
        if recommends or not isinstance(reply_text, str) or not self.params.link_titles:
            return await self.make_reply(reply_text, log, end=end, extra=extra, options=options)
        mentioned = await self.linked_items(reply_text)
        if mentioned:
            RECOMMENDED_ITEMS_SOURCE.put(extra, "linked")
        return await self.make_reply(
            reply_text, log, items=[], mentioned=mentioned, end=end, extra=extra, options=options
        )

    def _check_recipient(self, data: dict[str, Any], sender: str, what: str) -> None:
        """The reply must be addressed to this dialogue's sender (v2: a string; v1: `{"id": ...}`)."""
        if "recipient" not in data:
            if self.params.request_format == "messenger":
                return  # Messenger-style servers may answer without it
            raise CRSInvalidResponse(
                f"{what}: the reply names no 'recipient'; expected {sender!r}; it sent {sent(data)}"
            )
        recipient = data["recipient"]
        if isinstance(recipient, dict):
            recipient = recipient.get("id")
        if recipient != sender:
            raise CRSInvalidResponse(
                f"{what}: the reply is addressed to {str(recipient)[:80]!r}, not to this dialogue's sender "
                f"{sender!r}: the server did not read the request (is request_format right?) or mixed "
                "up conversations"
            )

    async def close(self, session: CRSSession) -> None:
        """Deliver the user's closing message (or `exit_message`) unless MovieBot already said
        goodbye; an error doing so is raised, and the loop keeps it in the record."""
        state = session.state
        if not isinstance(state, _State):
            return
        try:
            farewell = _pressed(session, session.closing_text or self.params.exit_message or "")
            if farewell and not state.ended:
                await self._send(state, farewell)
        finally:
            await self.http.release_client(state.client)


def _pressed(session: CRSSession, text: str) -> str:
    """What to send for the user's message `text`: the payload of the button it pressed, if any
    (MovieBot's NLU reads a button's payload first), else the text."""
    chosen = session.chosen_option
    return chosen.payload if chosen is not None and chosen.payload else text


def _buttons(attachments: Any, what: str) -> list[ReplyOption]:
    """The buttons of a reply's attachments (other attachments, such as a poster image, are skipped)."""
    if attachments is None:
        return []
    if not isinstance(attachments, list):
        raise CRSInvalidResponse(f"{what}: 'message.attachments' must be a list; it sent {sent(attachments)}")
    options: list[ReplyOption] = []
    for attachment in attachments:
        if not isinstance(attachment, dict) or attachment.get("type") != "buttons":
            continue
        buttons = (
            attachment.get("payload", {}).get("buttons")
            if isinstance(attachment.get("payload"), dict)
            else None
        )
        if not isinstance(buttons, list):
            raise CRSInvalidResponse(
                f"{what}: a 'buttons' attachment must hold payload.buttons, a list; "
                f"it sent {sent(attachment)}"
            )
        for button in buttons:
            title = button.get("title") if isinstance(button, dict) else None
            payload = button.get("payload") if isinstance(button, dict) else None
            if not isinstance(title, str) or not isinstance(payload, str):
                raise CRSInvalidResponse(
                    f"{what}: each button must have a string 'title' and 'payload'; it sent {sent(button)}"
                )
            options.append(ReplyOption(label=title, payload=payload))
    return options
