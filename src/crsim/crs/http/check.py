"""`check_crs`: prove a CRS server before a study (`crsim crs check`, the runner's preflight).

Two sessions are opened at once and sent different first messages at once; every reply of one
session must carry none of the words that only the other session's user said. A server that keeps
one conversation for all its clients (MovieBot v2 given a body it cannot read, a server that ignores
its session ids or cookies) fails here instead of scoring every dialogue of a run on one mixed-up
conversation. Then each session holds a few more turns, says goodbye and is closed; any error of the
adapter (status, body, recipient, empty text, timeout) fails the step it happened in. Every step is
timed.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from crsim.components import BuildContext, build
from crsim.crs.base import CRS, CRSReply, CRSSession, crs_registry
from crsim.model.domain import Domain
from crsim.registry import ComponentSpec

T = TypeVar("T")

#: The adapters `crsim crs check --protocol` names (their registry names).
PROTOCOLS = {"generic": "generic_http", "crs_arena": "crs_arena", "moviebot": "moviebot"}


@dataclass(frozen=True)
class Probe:
    """What the two check sessions say: an opening each, with the words that are that user's alone,
    then the follow-ups both send, and the goodbye sent on close."""

    opening_a: str = "I am looking for a science fiction film, something like The Matrix."
    opening_b: str = "I am looking for a romantic comedy, something like Notting Hill."
    markers_a: tuple[str, ...] = ("science fiction", "matrix")
    markers_b: tuple[str, ...] = ("romantic comedy", "notting hill")
    follow_ups: tuple[str, ...] = ("Something else, please.", "Tell me more about it.")
    goodbye: str = "Thank you, goodbye."


@dataclass
class CheckStep:
    """One checked step of one session (or of both, `session` "a+b")."""

    step: str
    session: str
    ok: bool
    seconds: float
    detail: str = ""


@dataclass
class CheckReport:
    """Every step checked against one CRS, in order; `ok` when none failed."""

    target: str
    steps: list[CheckStep] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(step.ok for step in self.steps)

    @property
    def failures(self) -> list[CheckStep]:
        return [step for step in self.steps if not step.ok]


def build_http_crs(name: str, args: dict[str, Any], domain: Domain) -> CRS:
    """An adapter by registry name (`generic_http`, `crs_arena`, `moviebot`) with checked arguments;
    a bad argument is a ConfigError naming it."""
    spec = ComponentSpec(name=name, args=args)
    return build(crs_registry, spec, BuildContext(domain=domain), f"crs {name!r}")


async def _timed(awaitable: Awaitable[T]) -> tuple[T | None, float, Exception | None]:
    started = time.perf_counter()
    try:
        result = await awaitable
    except Exception as exc:  # noqa: BLE001 - a failing server is what the check reports
        return None, time.perf_counter() - started, exc
    return result, time.perf_counter() - started, None


def _error(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"


def _quote(text: str, limit: int = 70) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def _leaks(text: str, markers: tuple[str, ...]) -> list[str]:
    lowered = text.lower()
    return [m for m in markers if re.search(rf"\b{re.escape(m.lower())}\b", lowered)]


class _Run:
    """One session of the check: its CRS session, its replies and whether it is still going."""

    def __init__(self, name: str, session: CRSSession) -> None:
        self.name, self.session = name, session
        self.replies: list[CRSReply] = []
        self.alive = True  #: no error so far and the CRS has not ended the dialogue
        self.opened = False
        self.checked = 0  #: replies already looked at for the other session's words


async def check_crs(crs: CRS, *, target: str = "", turns: int = 3, probe: Probe | None = None) -> CheckReport:
    """Check one CRS with two sessions at once (see the module docstring); never raises for what the
    server does. `turns` counts the user messages each session sends (at least 1)."""
    probe = probe or Probe()
    report = CheckReport(target or type(crs).__name__)
    tag = secrets.token_hex(3)
    runs = [_Run(name, CRSSession(f"crsim-check-{tag}-{name}", seed)) for name, seed in (("a", 1), ("b", 2))]

    async def open_one(run: _Run) -> None:
        reply, seconds, error = await _timed(crs.start(run.session))
        run.opened = error is None
        run.alive = error is None
        detail = _error(error) if error else ("greeting " + _quote(reply.text) if reply else "no greeting")
        if reply is not None:
            run.replies.append(reply)
        report.steps.append(CheckStep("open (both at once)", run.name, error is None, seconds, detail))

    async def say(run: _Run, text: str, step: str) -> None:
        if not run.alive:
            return
        reply, seconds, error = await _timed(crs.respond(run.session, text))
        if error is not None or reply is None:
            run.alive = False
            report.steps.append(CheckStep(step, run.name, False, seconds, _error(error) if error else ""))
            return
        run.replies.append(reply)
        ended = " (the CRS ended the dialogue)" if reply.end else ""
        run.alive = not reply.end
        report.steps.append(CheckStep(step, run.name, True, seconds, _quote(reply.text) + ended))

    try:
        await asyncio.gather(*(open_one(run) for run in runs))
        first = "turn 1 (both at once, different messages)"
        await asyncio.gather(say(runs[0], probe.opening_a, first), say(runs[1], probe.opening_b, first))
        report.steps.append(_isolation(runs, probe, "kept apart after turn 1"))
        for turn in range(2, max(turns, 1) + 1):
            text = probe.follow_ups[(turn - 2) % len(probe.follow_ups)]
            await asyncio.gather(*(say(run, text, f"turn {turn}") for run in runs))
        if turns > 1:
            report.steps.append(_isolation(runs, probe, f"kept apart after turn {turns}"))
    finally:
        for run in runs:
            if not run.opened:
                continue
            if run.alive:
                run.session.closing_text = probe.goodbye
            _, seconds, error = await _timed(crs.close(run.session))
            detail = _error(error) if error else "closed"
            report.steps.append(CheckStep("close", run.name, error is None, seconds, detail))
    return report


def _isolation(runs: list[_Run], probe: Probe, step: str) -> CheckStep:
    """Whether a reply of one session not looked at before carries words only the other session's
    user said."""
    found = []
    for run, others in ((runs[0], probe.markers_b), (runs[1], probe.markers_a)):
        for reply in run.replies[run.checked :]:
            leaked = _leaks(reply.text, others)
            if leaked:
                told = ", ".join(map(repr, leaked))
                found.append(f"session {run.name} was told {told}: {_quote(reply.text)}")
        run.checked = len(run.replies)
    detail = "; ".join(found) if found else "no reply names what the other session's user said"
    if found:
        detail = "shared conversation? " + detail
    return CheckStep(step, "a+b", not found, 0.0, detail)
