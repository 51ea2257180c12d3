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
