"""Stopping a run on Ctrl-C or SIGTERM: cancel the work, let it unwind, say so.

`run_interruptibly` is `asyncio.run` with SIGINT and SIGTERM handled: the first one cancels the
coroutine, whose `finally` blocks then close the dialogue writer and the LLM clients, and
`Interrupted` is raised once everything has unwound. Cancellation lands at the coroutine's next
suspension point, so loops over work that may never suspend (built-in CRSs and simulators) must
yield to the event loop between items (`await asyncio.sleep(0)`), as `run.batch` and
`eval.evaluation` do. A second signal while unwinding ends the process at once (exit 128 + signal):
every record already written has been flushed. Between event loops (building the experiment,
setting up the evaluation), `signals_interrupt` makes the same signals raise `Interrupted` directly.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, TypeVar, cast

T = TypeVar("T")

#: The signals that stop a run: Ctrl-C, and what `kill`, systemd, Docker and job schedulers send.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """The work was stopped by a signal; `exit_code` is the shell's convention (128 + signal number)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def run_interruptibly(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` to completion like `asyncio.run`; SIGINT or SIGTERM cancel it and raise `Interrupted`.

    Outside the main thread (where signals cannot be handled) this is plain `asyncio.run`.
    """
    if threading.current_thread() is not threading.main_thread():
        return asyncio.run(main)
    received: list[int] = []
    try:
        value = asyncio.run(_guarded(main, received))
    except asyncio.CancelledError:
        # A signal while `main` was finishing its last step: it returned, and the task still counts
        # as cancelled. Reported as a stop all the same; whatever it wrote is in place.
        if not received:
            raise
    if received:
        raise Interrupted(received[0])
    return cast(T, value)  # None only when a signal was received


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """In this block SIGINT and SIGTERM raise `Interrupted` wherever the main thread is, for the
    synchronous stretches between event loops (`run_interruptibly` handles them inside a loop)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_interrupted(signum: int, _frame: FrameType | None) -> None:
        raise Interrupted(signum)

    previous = {signum: signal.signal(signum, raise_interrupted) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


async def _guarded(main: Coroutine[Any, Any, T], received: list[int]) -> T | None:
    """Await `main` with the stop signals cancelling it; None (and the signal in `received`) if they did.

    The handlers are Python-level (`signal.signal`, as `asyncio.Runner` does for SIGINT), not
    `loop.add_signal_handler`: they run at once, between two bytecodes of whatever is running, so the
    cancellation is requested before the loop steps the other ready tasks (each of which may hold a
    whole dialogue before it suspends); with the loop's handler a stop waited for a round of all of them.
    """
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if received:  # a second signal while unwinding: stop now, nothing more to save
            os.write(2, f"\n{signal.Signals(signum).name} again: stopping at once\n".encode())
            os._exit(128 + signum)
        received.append(signum)
        task.cancel()
        loop.call_soon_threadsafe(lambda: None)  # wake the loop if it waits in select()

    previous = {signum: signal.signal(signum, on_signal) for signum in STOP_SIGNALS}
    try:
        return await main
    except asyncio.CancelledError:
        if not received:
            raise
        task.uncancel()
        return None
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
