"""The CRS protocol: how crsim talks to any conversational recommender."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from crsim.core.components import Buildable
from crsim.core.plugins import Params, Registry
from crsim.model.acts import DialogueAct
from crsim.model.dialogue import ReplyOption as ReplyOption  # the options of a CRSReply


@dataclass
class CRSReply:
    """What a CRS says: its text and, when it knows them, the ids of the items it recommends.

    `mentioned_items` are ids the text names without recommending them (an answer about an earlier
    recommendation). `items_listed` says the CRS listed every item its text names in those two
    fields, so crsim does not link titles in the text; without it, a reply with no ids is linked
    and the titles found are split into recommended and mentioned by the dialogue context
    (`crsim.model.mentions`). `options` are the buttons or quick replies the CRS offers with the
    reply, in its order (empty when it offers none; `crsim.model.dialogue.ReplyOption`).
    """

    text: str
    recommended_items: list[str] = field(default_factory=list)
    acts: list[DialogueAct] = field(default_factory=list)
    end: bool = False
    annotations: dict[str, Any] = field(default_factory=dict)
    mentioned_items: list[str] = field(default_factory=list)
    items_listed: bool = False
    options: list[ReplyOption] = field(default_factory=list)


@dataclass
class CRSSession:
    """Per-dialogue state of a CRS. The CRS object itself holds only read-only resources.

    `chosen_option` is the option of the CRS's last reply that the user picked for the message now
    being answered (set by the loop before each `respond`, and for `closing_text` before `close`;
    None when the user wrote its own words):
    `respond` gets the option's label as the text, and a CRS whose protocol takes a choice sends the
    option's `payload` instead (`generic_http` sends both, `moviebot` the payload).

    `closing_text` is the user's last message when the user ended the dialogue: the loop records it
    but asks the CRS for no reply to it. A CRS whose server must see it (IAI MovieBot ends and saves
    its conversation on the user's goodbye) sends it from `close`.
    """

    id: str
    seed: int
    state: Any = None
    chosen_option: ReplyOption | None = None
    closing_text: str | None = None
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)


@runtime_checkable
class CRS(Buildable, Protocol):
    """A conversational recommender. One object serves many dialogues, each with its own session.

    Built once per run as `Class(params, ctx)` (`crsim.core.components`); `needs_llm` / `llm_roles(params)`
    declare the language models it calls through `ctx.llms`.
    """

    async def start(self, session: CRSSession) -> CRSReply | None:
        """Open the dialogue: a greeting, or None to let the user speak first."""
        ...

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        """Reply to one user message."""
        ...

    async def close(self, session: CRSSession) -> None:
        """Release what the session holds (connections, server-side state)."""
        ...


class BaseCRS:
    """Convenience base: no greeting unless overridden, nothing to release on close, no model."""

    Params: ClassVar[type[Params]] = Params
    needs_llm: ClassVar[bool] = False

    @classmethod
    def llm_roles(cls, params: Any) -> list[str]:
        """The model roles the CRS calls (none unless `needs_llm`)."""
        return []

    async def start(self, session: CRSSession) -> CRSReply | None:
        return None

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        raise NotImplementedError

    async def close(self, session: CRSSession) -> None:
        return None


#: The CRS registry: `get` gives a CRS class.
crs_registry: Registry[type[CRS]] = Registry("crs")

_CRSClass = TypeVar("_CRSClass", bound=type[CRS])


def crs(name: str) -> Callable[[_CRSClass], _CRSClass]:
    """Register a CRS class under `name` (`@crs("retrieval")`); mypy checks it follows the CRS protocol."""
    return crs_registry.register(name)  # type: ignore[return-value]
