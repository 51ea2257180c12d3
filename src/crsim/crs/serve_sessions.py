"""The open conversations of one `crsim serve` process: each with its own `CRSSession`, at most
`max_sessions` of them, idle ones closed, the least recently used idle one evicted when full."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from fastapi import HTTPException

from crsim.core.seeding import derive_seed
from crsim.crs.base import CRS, CRSReply, CRSSession, ReplyOption
from crsim.crs.serve_protocol import ReplyBody, reply_body


@dataclass
class Conversation:
    """One conversation: its CRS session, a lock held while it replies, its last turn and reply."""

    session: CRSSession
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_turn: int = 0
    last_reply: ReplyBody | None = None
    touched: float = field(default_factory=time.monotonic)


class Conversations:
    """The open conversations of one server: at most `max_sessions`, idle ones closed.

    Conversations are kept in two queues, least recently used first: `_new` (opened, never come
    back to) and `_returning` (the client came back with the key at least once). When the table is
    full, opening one closes an idle conversation instead of refusing: a `_new` one first, so a flood
    of one-request clients churns through its own kind and never evicts a client that keeps talking.
    Only when every conversation is busy computing a reply is the new one refused (503).
    """

    def __init__(self, crs: CRS, seed: int, max_sessions: int, idle_timeout_s: float) -> None:
        self.crs, self.seed = crs, seed
        self.max_sessions, self.idle_timeout_s = max_sessions, idle_timeout_s
        self._new: OrderedDict[str, Conversation] = OrderedDict()
        self._returning: OrderedDict[str, Conversation] = OrderedDict()
        #: Conversations closed to make room for new ones (not counting idle expiry).
        self.evicted = 0

    def __len__(self) -> int:
        return len(self._new) + len(self._returning)

    async def open(
        self, key: str, dialogue_id: str, seed: int | None
    ) -> tuple[Conversation, CRSReply | None]:
        await self._expire()
        while len(self) >= self.max_sessions:  # re-checked: other requests may open while we close
            await self._evict_one()
        session = CRSSession(id=dialogue_id, seed=derive_seed(self.seed, key) if seed is None else seed)
        conversation = Conversation(session)
        self._new[key] = conversation
        try:
            async with conversation.lock:  # busy, so not evicted while it starts
                greeting = await self._call(self.crs.start(session))
        except HTTPException:  # nobody learns the key of a failed start: free it now
            with contextlib.suppress(HTTPException):
                await self.close(key)
            raise
        return conversation, greeting

    def get(self, key: str) -> Conversation | None:
        """The conversation under `key`, now the most recently used; a first return promotes it."""
        conversation = self._new.pop(key, None) or self._returning.get(key)
        if conversation is not None:
            conversation.touched = time.monotonic()
            self._returning[key] = conversation
            self._returning.move_to_end(key)
        return conversation

    async def close(self, key: str) -> bool:
        """Forget the conversation and release its state, after any reply still being computed."""
        conversation = self._new.pop(key, None) or self._returning.pop(key, None)
        if conversation is None:
            return False
        async with conversation.lock:
            await self._call(self.crs.close(conversation.session))
        return True

    async def close_all(self) -> None:
        for key in [*self._new, *self._returning]:
            await self.close(key)

    async def respond(
        self, conversation: Conversation, text: str, option: ReplyOption | None = None
    ) -> ReplyBody:
        """The CRS's reply to `text`; `option` is the button the user picked, if any."""
        conversation.session.chosen_option = option
        return reply_body(await self._call(self.crs.respond(conversation.session, text)))

    async def _expire(self) -> None:
        """Close conversations idle for `idle_timeout_s`; each queue is in order of last use."""
        deadline = time.monotonic() - self.idle_timeout_s
        for queue in (self._new, self._returning):
            expired = []
            for key, conversation in queue.items():
                if conversation.touched >= deadline:
                    break
                if not conversation.lock.locked():
                    expired.append(key)
            for key in expired:
                await self.close(key)

    async def _evict_one(self) -> None:
        for queue in (self._new, self._returning):
            key = next((k for k, c in queue.items() if not c.lock.locked()), None)
            if key is not None:
                self.evicted += 1
                await self.close(key)
                return
        raise HTTPException(
            503, f"all {self.max_sessions} conversations are busy replying (--max-sessions); try again later"
        )

    @staticmethod
    async def _call(awaitable: Any) -> Any:
        try:
            return await awaitable
        except HTTPException:
            raise
        except Exception as exc:  # a failing CRS becomes a 500 for this request only
            raise HTTPException(500, f"CRS failed: {type(exc).__name__}: {exc}") from exc
