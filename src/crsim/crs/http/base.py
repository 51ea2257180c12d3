"""`HTTPCRS`, the base of the CRSs reached over HTTP: one transport (`client.HTTPClient`) per CRS, one
`httpx.AsyncClient` per dialogue, and replies made from server fields (text checked, titles in text
linked to the catalogue, buttons kept).

The transport (timeouts, retries, limits, secrets) is in `client`, the settings in `params`, the error
kinds and `field_of` in `errors`, the reading of a body in `body`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from crsim.core.components import BuildContext
from crsim.crs.base import BaseCRS, CRSReply, CRSSession, ReplyOption
from crsim.crs.http.client import ExchangeLog, HTTPClient
from crsim.crs.http.errors import CRSInvalidResponse, sent
from crsim.crs.http.params import HTTPParams
from crsim.model.acts import DialogueAct
from crsim.model.annotations import AMBIGUOUS_LINKS, RECOMMENDED_ITEMS_SOURCE
from crsim.model.linking import Mention, ambiguous_links


class HTTPCRS(BaseCRS):
    """Base of the HTTP adapters: one client per CRS, one `httpx.AsyncClient` per dialogue."""

    Params = HTTPParams

    def __init__(self, params: HTTPParams, ctx: BuildContext) -> None:
        domain = ctx.require_domain(type(self).__name__)
        self.params, self.domain = params, domain
        self.http = HTTPClient(params)
        if params.link_titles:
            _ = domain.items.linker  # build the index now, not mid-dialogue where it would eat timeouts

    async def make_reply(
        self,
        text: Any,
        log: ExchangeLog,
        *,
        items: list[str] | None = None,
        mentioned: list[str] | None = None,
        end: bool = False,
        acts: list[DialogueAct] | None = None,
        extra: dict[str, Any] | None = None,
        options: list[ReplyOption] | None = None,
    ) -> CRSReply:
        """A reply from server fields: text checked, titles linked when no items were given.

        `mentioned` (not None, even empty) means the server listed every item its text names, in
        `items` (recommended) and `mentioned`: nothing is linked and the reply is `items_listed`.
        `options` are the buttons the server offered with the reply.
        """
        if not isinstance(text, str):
            raise CRSInvalidResponse(f"reply text must be a string; the server sent {sent(text)}")
        if not text.strip() and not self.params.allow_empty_text:
            raise CRSInvalidResponse("reply text is empty")
        annotations: dict[str, Any] = {**(extra or {}), **log.annotations()}  # a server cannot hide a resend
        recommended = list(items or [])
        if mentioned is not None:
            return CRSReply(
                text,
                recommended,
                list(acts or []),
                end,
                annotations,
                mentioned_items=list(mentioned),
                items_listed=True,
                options=list(options or []),
            )
        if not recommended and self.params.link_titles and text:
            mentions = await self.linked_mentions(text)
            recommended = list(dict.fromkeys(m.item_id for m in mentions))
            if recommended:
                RECOMMENDED_ITEMS_SOURCE.put(annotations, "linked")
            if ambiguous := ambiguous_links(mentions):
                AMBIGUOUS_LINKS.put(annotations, ambiguous)
        return CRSReply(text, recommended, list(acts or []), end, annotations, options=list(options or []))

    async def linked_mentions(self, text: str) -> list[Mention]:
        """The catalogue titles the text names (off the event loop: linking a long reply takes
        seconds of CPU, and other dialogues go on meanwhile)."""
        return await asyncio.to_thread(self.domain.items.linker.link, text)

    async def linked_items(self, text: str) -> list[str]:
        """Ids of the catalogue items whose titles the text names, in order, each once."""
        return list(dict.fromkeys(m.item_id for m in await self.linked_mentions(text)))

    async def close(self, session: CRSSession) -> None:
        client = getattr(session.state, "client", None)
        if isinstance(client, httpx.AsyncClient):
            await self.http.release_client(client)

    async def aclose(self) -> None:
        """Close the connections kept between dialogues; the batch calls it when it is done."""
        await self.http.aclose()
