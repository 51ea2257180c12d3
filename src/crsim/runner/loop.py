"""`run_dialogue`: one bounded conversation between a simulated user and a CRS.

Pure: no config parsing and no I/O. Every way out of the loop records a termination reason that
says whose fault it was (after tau2-bench): an exception raised by the CRS is `crs_error`, one raised
by the simulator `user_error`, an LLM endpoint that cannot be reached, refuses to serve or does not
speak its protocol (`crsim.llm.errors`: connection, timeout, HTTP 5xx, 429, authentication, unknown
model, a body that is no chat response) `infrastructure_error`, whichever participant's model it
was (a model's own unusable answer, `LLMOutputError`, stays the participant's); a dialogue that
outlives its wall-time budget is `timeout`, charged to the participant being awaited when the
budget ran out (`ErrorInfo.source`). An exception ends only this dialogue and is kept in the record.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple, TypeVar

from crsim.crs.base import CRS, CRSReply, CRSSession
from crsim.llm import usage
from crsim.llm.errors import (
    LLMAuthError,
    LLMConnectionError,
    LLMModelNotFound,
    LLMProtocolError,
    LLMRateLimited,
    LLMServerError,
    LLMTimeout,
)
from crsim.model.annotations import AMBIGUOUS_LINKS, RECOMMENDED_ITEMS_SOURCE
from crsim.model.dialogue import (
    Dialogue,
    ErrorInfo,
    LLMCall,
    LLMUsage,
    Role,
    Termination,
    TerminationReason,
    Timing,
    Utterance,
)
from crsim.model.items import ItemCollection
from crsim.model.linking import Mention, ambiguous_links
from crsim.model.mentions import split_linked
from crsim.model.user import SimulatedUser, UserProfile
from crsim.sim.base import DialogueNotes, UserSimulator, UserTurn

T = TypeVar("T")


class DialogueTimeout(Exception):
    """The dialogue's wall-time budget ran out while a participant was being awaited."""


#: LLM failures that say nothing about the participant that asked: the endpoint could not be
#: reached, did not answer in time, failed on its side, asked to slow down, refused the key, does
#: not serve the model, or answered with something that is not a chat response (docs/metrics.md,
#: "Who failed").
INFRASTRUCTURE_ERRORS: tuple[type[Exception], ...] = (
    LLMConnectionError,
    LLMTimeout,
    LLMServerError,
    LLMRateLimited,
    LLMAuthError,
    LLMModelNotFound,
    LLMProtocolError,
)


class _ParticipantError(Exception):
    def __init__(self, source: str, error: BaseException) -> None:
        self.source, self.error = source, error


async def run_dialogue(
    simulator: UserSimulator,
    crs: CRS,
    user: SimulatedUser,
    *,
    dialogue_id: str,
    session: CRSSession,
    max_turns: int = 20,
    items: ItemCollection | None = None,
    metadata: dict[str, Any] | None = None,
    crs_id: str | None = None,
    simulator_id: str | None = None,
    trial: int = 0,
    timeout_s: float | None = None,
) -> Dialogue:
    """Hold one dialogue. A turn is one user utterance and the CRS reply to it.

    `items`, when given, links item titles in replies of CRSs that return text only. LLM calls made
    by either participant are attached to the utterance they produced and summed per role; `trial`
    keys the LLM cache, so repeated trials of one pairing are sampled afresh. `timeout_s` bounds the
    dialogue's wall time (None: no bound); closing the CRS session gets `CLOSE_GRACE_S` more.
    """
    started_at, clock = datetime.now(UTC).isoformat(timespec="seconds"), time.perf_counter()
    deadline = None if timeout_s is None else asyncio.get_running_loop().time() + timeout_s
    utterances: list[Utterance] = []
    termination = Termination(reason=TerminationReason.MAX_TURNS)
    with usage.collect(trial) as calls:
        turns = _Turns(_Budget(deadline, timeout_s), _NamedItems(items), utterances, calls)
        try:
            termination = await turns.hold(simulator, crs, user, session, max_turns)
        except _ParticipantError as exc:
            termination = failure(exc.source, exc.error)
        finally:
            termination = await _close(crs, session, termination, timeout_s)
    profile, metadata, termination = _with_notes(simulator, user, dict(metadata or {}), termination)
    return Dialogue(
        id=dialogue_id,
        utterances=utterances,
        user_id=user.id,
        crs_id=crs_id or getattr(crs, "registry_name", type(crs).__name__),
        simulator_id=simulator_id or getattr(simulator, "registry_name", type(simulator).__name__),
        information_need=user.need,
        user_profile=profile,
        metadata=metadata,
        termination=termination,
        timing=Timing(started_at=started_at, duration_s=round(time.perf_counter() - clock, 6)),
        llm_usage=LLMUsage.summarize(calls.calls),
    )


@dataclass
class _Turns:
    """The turns of one dialogue as they are held: the wall-time budget, the linking of titles in
    replies, the utterances so far and the LLM calls not yet attached to one."""

    budget: _Budget
    named_items: _NamedItems
    utterances: list[Utterance]
    calls: usage.UsageLog

    async def hold(
        self, simulator: UserSimulator, crs: CRS, user: SimulatedUser, session: CRSSession, max_turns: int
    ) -> Termination:
        """The greeting, then user turn and CRS reply until one ends or `max_turns` is reached; why it
        stopped. A participant's exception is raised as `_ParticipantError`."""
        greeting = await _call("crs", crs.start(session), self.budget)
        if greeting is not None:
            await self.add_reply(greeting)
        user_turn = await _call("user", simulator.start(user, greeting), self.budget)
        for turn in range(1, max_turns + 1):
            self.utterances.append(_guard("user", _user_utterance, user_turn, self.calls.drain()))
            if user_turn.end:
                session.closing_text = user_turn.text or None  # the CRS may deliver it on close
                session.chosen_option = user_turn.option
                return Termination(reason=TerminationReason.USER_ENDED, detail=user_turn.end_reason)
            session.chosen_option = user_turn.option
            reply = await _call("crs", crs.respond(session, user_turn.text), self.budget)
            await self.add_reply(reply)
            if reply.end:
                return Termination(reason=TerminationReason.CRS_ENDED)
            if turn == max_turns:
                break
            user_turn = await _call("user", simulator.respond(reply), self.budget)
        return Termination(reason=TerminationReason.MAX_TURNS)

    async def add_reply(self, reply: CRSReply) -> None:
        """The CRS utterance of a reply, its titles linked when it names none."""
        named = await _call("crs", self.named_items.split(reply, self.utterances), self.budget)
        self.utterances.append(_guard("crs", _crs_utterance, reply, named, self.calls.drain()))


def _with_notes(
    simulator: UserSimulator, user: SimulatedUser, metadata: dict[str, Any], termination: Termination
) -> tuple[UserProfile, dict[str, Any], Termination]:
    """The user's profile and the dialogue's metadata with what the simulator notes about the dialogue
    (`dialogue_notes`); a failing hook is a user error (unless the dialogue already failed)."""
    profile = user.profile
    try:
        notes = _simulator_notes(simulator)
    except Exception as exc:  # noqa: BLE001 - a failing hook must not lose the dialogue
        notes = None
        if termination.error is None:
            error = ErrorInfo(source="user", type=type(exc).__name__, message=f"on dialogue_notes: {exc}")
            termination = Termination(reason=TerminationReason.USER_ERROR, error=error)
    if notes is not None:
        if notes.persona:
            profile = profile.model_copy(update={"persona": {**profile.persona, **notes.persona}})
        metadata.update(notes.metadata)
    return profile, metadata, termination


def failure(source: str, error: BaseException) -> Termination:
    """How a dialogue ends when awaiting `source` ('crs' or 'user') raised `error`: a timeout of the
    dialogue's budget, an infrastructure error (an LLM endpoint failed, anywhere in the exception's
    causes), else the error of that participant."""
    info = ErrorInfo(source=source, type=type(error).__name__, message=str(error))
    if isinstance(error, DialogueTimeout):
        reason = TerminationReason.TIMEOUT
    elif is_infrastructure_failure(error):
        reason = TerminationReason.INFRASTRUCTURE_ERROR
    elif source == "crs":
        reason = TerminationReason.CRS_ERROR
    else:
        reason = TerminationReason.USER_ERROR
    return Termination(reason=reason, error=info)


def is_infrastructure_failure(error: BaseException) -> bool:
    """Whether `error`, or an exception it was raised from or while handling, is one of
    `INFRASTRUCTURE_ERRORS` (a participant may wrap the LLM error in its own)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, INFRASTRUCTURE_ERRORS):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


#: Seconds a CRS gets to close its session after a dialogue with a wall-time budget ended.
CLOSE_GRACE_S = 10.0


async def _close(
    crs: CRS, session: CRSSession, termination: Termination, timeout_s: float | None
) -> Termination:
    """Close the CRS session; a failing close is kept in the record but does not change the reason."""
    try:
        async with asyncio.timeout(None if timeout_s is None else CLOSE_GRACE_S):
            await crs.close(session)
    except Exception as exc:  # noqa: BLE001 - a failing close must not lose the dialogue
        if termination.error is None:
            error = ErrorInfo(source="crs", type=type(exc).__name__, message=f"on close: {exc}")
            return termination.model_copy(update={"error": error})
    return termination


def _simulator_notes(simulator: UserSimulator) -> DialogueNotes | None:
    """What a simulator with the optional `dialogue_notes()` hook adds to the record."""
    hook = getattr(simulator, "dialogue_notes", None)
    if not callable(hook):
        return None
    notes = hook()
    if not isinstance(notes, DialogueNotes):
        raise TypeError(f"dialogue_notes() returned {type(notes).__name__}, expected DialogueNotes")
    return notes


class _Budget:
    """The dialogue's deadline on the event loop's clock (None: unbounded) and the budget in seconds."""

    def __init__(self, deadline: float | None, seconds: float | None) -> None:
        self.deadline, self.seconds = deadline, seconds

    def spent(self) -> bool:
        """Whether the deadline has passed."""
        return self.deadline is not None and asyncio.get_running_loop().time() >= self.deadline

    def timeout(self, source: str) -> DialogueTimeout:
        who = "the CRS" if source == "crs" else "the simulated user"
        return DialogueTimeout(f"waiting for {who} when the {self.seconds:g} s dialogue budget ran out")


async def _call(source: str, awaitable: Awaitable[T], budget: _Budget) -> T:
    """Await a participant within the dialogue's budget; what goes wrong is that participant's
    `_ParticipantError` (a `DialogueTimeout` when the budget ran out, never the participant's own
    timeout errors). A participant that never yields to the event loop (synchronous work inside
    `async def`) cannot be interrupted; if it returns after the deadline, its answer is dropped and
    the timeout is charged to it, so the budget holds for it too."""
    if budget.deadline is None:  # no budget (the default): no timeout scope to enter and leave per call
        try:
            return await awaitable
        except Exception as exc:
            raise _ParticipantError(source, exc) from exc
    scope = asyncio.timeout_at(budget.deadline)
    try:
        async with scope:
            result = await awaitable
    except Exception as exc:
        if scope.expired():
            raise _ParticipantError(source, budget.timeout(source)) from exc
        raise _ParticipantError(source, exc) from exc
    if budget.spent():
        raise _ParticipantError(source, budget.timeout(source))
    return result


def _guard(source: str, convert: Callable[..., Utterance], *args: Any) -> Utterance:
    """Record what a participant returned; a malformed return (wrong types) is that participant's error."""
    try:
        return convert(*args)
    except Exception as exc:
        raise _ParticipantError(source, exc) from exc


def _user_utterance(turn: UserTurn, calls: list[LLMCall]) -> Utterance:
    return Utterance(
        role=Role.USER,
        text=turn.text,
        acts=list(turn.acts),
        shown_items=list(turn.shown_items),
        annotations=dict(turn.annotations),
        llm_calls=calls,
        chosen_option=turn.option,
    )


#: Replies longer than this are linked in a worker thread, so one long text cannot stall other dialogues.
_LINK_INLINE_CHARS = 2_000


class _NamedItems:
    """The items named so far in one dialogue, to tell recommended from mentioned items in linked text.

    A reply whose CRS listed its items is taken as it is. Titles linked in a text-only reply (by the
    loop, or by an HTTP adapter: `recommended_items_source` "linked") are split by
    `crsim.model.mentions.split_linked` against every item named before: by the CRS, and by the user
    (user texts are linked only once a reply needs it).
    """

    def __init__(self, items: ItemCollection | None) -> None:
        self.items = items
        self.ids: set[str] = set()
        self._users_linked = 0  #: utterances already scanned for user mentions

    async def _link(self, text: str) -> list[Mention]:
        assert self.items is not None
        linker = self.items.linker
        return (
            linker.link(text)
            if len(text) <= _LINK_INLINE_CHARS
            else await asyncio.to_thread(linker.link, text)
        )

    async def _catch_up(self, earlier: list[Utterance]) -> None:
        for utterance in earlier[self._users_linked :]:
            if utterance.role is Role.USER and self.items is not None and utterance.text:
                self.ids.update(m.item_id for m in await self._link(utterance.text))
        self._users_linked = len(earlier)

    async def split(self, reply: CRSReply, earlier: list[Utterance]) -> _Named:
        """Recommended and mentioned ids of one CRS reply, whether they come from linked titles, and
        the ambiguous links among them (`crsim.model.linking.ambiguous_links`)."""
        adapter_linked = reply.annotations.get(RECOMMENDED_ITEMS_SOURCE.name) == "linked"
        listed = reply.items_listed or bool(reply.mentioned_items)
        ambiguous: dict[str, list[str]] = {}
        if listed or (reply.recommended_items and not adapter_linked):
            recommended, mentioned, linked = list(reply.recommended_items), list(reply.mentioned_items), False
        elif adapter_linked or (self.items is not None and isinstance(reply.text, str) and reply.text):
            if adapter_linked:
                ids = list(reply.recommended_items)
            else:
                mentions = await self._link(reply.text)
                ids, ambiguous = [m.item_id for m in mentions], ambiguous_links(mentions)
            await self._catch_up(earlier)
            (recommended, mentioned), linked = split_linked(ids, self.ids), True
        else:
            recommended, mentioned, linked = [], [], False
        self.ids.update(recommended, mentioned)
        return _Named(recommended, mentioned, linked, ambiguous)


class _Named(NamedTuple):
    recommended: list[str]
    mentioned: list[str]
    linked: bool
    ambiguous: dict[str, list[str]]


def _crs_utterance(reply: CRSReply, named: _Named, calls: list[LLMCall]) -> Utterance:
    recommended, mentioned, linked, ambiguous = named
    annotations = dict(reply.annotations)
    if linked and (recommended or mentioned):
        RECOMMENDED_ITEMS_SOURCE.put(annotations, "linked")
    if ambiguous:
        AMBIGUOUS_LINKS.put(annotations, ambiguous)
    return Utterance(
        role=Role.CRS,
        text=reply.text,
        acts=list(reply.acts),
        recommended_items=recommended,
        mentioned_items=mentioned,
        annotations=annotations,
        llm_calls=calls,
        options=list(reply.options),
    )
