"""Per-dialogue accounting of LLM calls, and the trial index that keys the cache.

The runner opens a `UsageLog` around each dialogue (`collect`); every call made by any participant
in that dialogue's task is appended to it, without the participants passing anything along.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from crsim.model.dialogue import LLMCall


@dataclass
class UsageLog:
    """The LLM calls of one dialogue, in order; `drain` hands over those made since the last drain."""

    trial: int = 0
    calls: list[LLMCall] = field(default_factory=list)
    _drained: int = 0

    def add(self, call: LLMCall) -> None:
        self.calls.append(call)

    def drain(self) -> list[LLMCall]:
        new = self.calls[self._drained :]
        self._drained = len(self.calls)
        return new


_current: ContextVar[UsageLog | None] = ContextVar("crsim_llm_usage", default=None)


@dataclass
class Tally:
    """Running totals of the LLM calls answered while it is open (`tallying`), for progress displays;
    never written into records."""

    calls: int = 0
    cached: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    priced: bool = False  # some call came from a model with a price table

    def add(self, call: LLMCall, cost: float | None = None) -> None:
        if cost is not None:
            self.cost += cost
            self.priced = True
        self.calls += 1
        self.cached += call.cached
        self.errors += call.error is not None
        self.prompt_tokens += call.prompt_tokens
        self.completion_tokens += call.completion_tokens


_tally: ContextVar[Tally | None] = ContextVar("crsim_llm_tally", default=None)


@contextmanager
def tallying() -> Iterator[Tally]:
    """Count every LLM call made inside this block (and in tasks and event loops it starts) in a new tally."""
    tally = Tally()
    token = _tally.set(tally)
    try:
        yield tally
    finally:
        _tally.reset(token)


def count(call: LLMCall, cost: float | None = None) -> None:
    """Add a call (and its estimated cost, when its model has prices) to the open tally, if any."""
    tally = _tally.get()
    if tally is not None:
        tally.add(call, cost)


@contextmanager
def collect(trial: int = 0) -> Iterator[UsageLog]:
    """Record the LLM calls made inside this block (and in tasks it starts) into a new log."""
    log = UsageLog(trial=trial)
    token = _current.set(log)
    try:
        yield log
    finally:
        _current.reset(token)


def current() -> UsageLog | None:
    return _current.get()


def current_trial() -> int:
    log = _current.get()
    return log.trial if log is not None else 0
