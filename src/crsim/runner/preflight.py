"""Preflight: before the first dialogue, try every server a run depends on once.

A run against a CRS server that refuses connections, answers in another protocol, or an LLM endpoint
that is down would otherwise end every dialogue in an error and still look like a run. So `crsim run`
(and `crsim.run`) first open one session with each HTTP CRS (open, one message, close) and make one
minimal call to each LLM endpoint a component of the run uses; the first failure is a
`PreflightFailed` naming the component, the URL and what went wrong, before anything is written to
the run folder. The calls bypass the response cache and the per-dialogue usage log: they test the
endpoint, they are not part of the run. `--no-preflight` (`preflight=False`) skips them, and so does
a resumed run that has no dialogue left to hold (`needed`).

One function per kind of participant: `check_http_crs` (one session with one CRS) and
`check_llm_endpoint` (one call to one model endpoint); `preflight` runs them for an experiment.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from crsim.core.errors import CrsimError
from crsim.core.secrets import redact
from crsim.crs.base import CRS, CRSSession
from crsim.llm.config import ModelConfig
from crsim.llm.types import Message, ResolvedGeneration

if TYPE_CHECKING:
    from crsim.runner.build import Experiment

__all__ = [
    "PreflightFailed",
    "check_http_crs",
    "check_llm_endpoint",
    "llm_endpoints",
    "needed",
    "preflight",
]

#: What the preflight session says to a CRS, and asks of a model.
GREETING = "Hello, can you recommend something?"
PROMPT = "Reply with the single word OK."
#: Providers that call no server (an embedded model, scripted answers): nothing to try.
LOCAL_PROVIDERS = frozenset({"local", "scripted"})


class PreflightFailed(CrsimError):
    """A server the run depends on failed its preflight check; nothing was written."""


def shown_url(url: str) -> str:
    """A URL as an error line may show it: no user info, query or fragment, secrets masked."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return redact(urlunsplit((parts.scheme, netloc, parts.path, "", "")))


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return redact(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


async def check_http_crs(label: str, crs: CRS, url: str, timeout_s: float | None = None) -> None:
    """One session with `crs` (the run's CRS `label`, served at `url`): open it, send one message,
    close it. Raises `PreflightFailed` naming the CRS, the URL and the failure (within `timeout_s`
    for the whole session when given; the CRS's own request deadlines apply in any case)."""
    session = CRSSession(id=f"crsim-preflight-{label}", seed=0)
    where = f"preflight: CRS {label!r} at {shown_url(url)}"
    try:
        async with asyncio.timeout(timeout_s):
            try:
                await crs.start(session)
                reply = await crs.respond(session, GREETING)
            finally:
                await crs.close(session)
    except TimeoutError:
        raise PreflightFailed(f"{where}: no complete session within {timeout_s:g} s") from None
    except Exception as exc:  # noqa: BLE001 - any failure of the session is the finding
        raise PreflightFailed(f"{where}: {_reason(exc)}") from None
    if not reply.text.strip():
        raise PreflightFailed(f"{where}: the reply to one message has no text")


async def check_llm_endpoint(config: ModelConfig, users: Sequence[str]) -> None:
    """One minimal call (a few tokens, no retries) to the endpoint of `config`, which `users` (the
    components and roles that call it) depend on. Raises `PreflightFailed` naming them, the URL and
    the failure. A provider of its own is made and closed for the call: the run's own providers,
    cache and usage logs are not touched."""
    from crsim.llm.providers.base import create_provider

    who = ", ".join(users)
    url = shown_url(config.base_url) if config.base_url else f"the {config.provider} default endpoint"
    where = f"preflight: LLM {config.label()!r} at {url} (used by {who})"
    generation = ResolvedGeneration(temperature=0.0, max_tokens=4, seed=config.seed)
    try:
        provider = create_provider(config)
    except CrsimError as exc:
        raise PreflightFailed(f"{where}: {_reason(exc)}") from None
    try:
        async with asyncio.timeout(config.timeout):
            await provider.complete([Message(role="user", content=PROMPT)], generation)
    except TimeoutError:
        raise PreflightFailed(f"{where}: no answer within {config.timeout:g} s") from None
    except Exception as exc:  # noqa: BLE001 - any failure of the call is the finding
        raise PreflightFailed(f"{where}: {_reason(exc)}") from None
    finally:
        await provider.aclose()


@dataclass(frozen=True)
class Endpoint:
    """One model endpoint of a run and who calls it."""

    config: ModelConfig
    users: tuple[str, ...]


def llm_endpoints(experiment: Experiment) -> list[Endpoint]:
    """The model endpoints the run's components call (one per provider, URL and model), each with
    the components and roles that call it; embedded and scripted models are left out."""
    found: dict[str, tuple[ModelConfig, list[str]]] = {}
    for role, components in experiment.llm_users.items():
        config = experiment.config.llm.for_role(role)
        if config.provider in LOCAL_PROVIDERS:
            continue
        key = f"{config.endpoint()}|{config.model}"
        entry = found.setdefault(key, (config, []))
        entry[1].extend(f"{component} (role {role!r})" for component in components)
    return [Endpoint(config, tuple(users)) for config, users in found.values()]


def http_crss(crss: Mapping[str, CRS]) -> dict[str, tuple[CRS, str]]:
    """The run's CRSs reached over HTTP, by label, with their base URLs."""
    from crsim.crs.http.base import HTTPCRS

    return {label: (crs, crs.params.base_url) for label, crs in crss.items() if isinstance(crs, HTTPCRS)}


def needed(experiment: Experiment, run_dir: Path, resume: bool, retry: frozenset[str]) -> bool:
    """Whether the run will hold any dialogue: not when resuming a run whose dialogues are all in
    (re-scoring it needs no server), unless `retry` finds some to hold again."""
    from crsim.runner.batch import kept_dialogues
    from crsim.runner.retry import errored_records

    if not resume or not run_dir.is_dir():
        return True
    if kept_dialogues(run_dir) < len(experiment.tasks):
        return True
    return bool(retry) and bool(errored_records(run_dir, retry))


async def preflight(experiment: Experiment) -> None:
    """Check every HTTP CRS that takes part in a planned dialogue and every LLM endpoint of
    `experiment`, concurrently; raise the first failure (in config order) as `PreflightFailed`.
    Closes the connections the checks opened."""
    planned = {task.crs_label for task in experiment.tasks}
    crss = http_crss({label: crs for label, crs in experiment.crss.items() if label in planned})
    checks = [check_http_crs(label, crs, url) for label, (crs, url) in crss.items()]
    checks += [check_llm_endpoint(e.config, e.users) for e in llm_endpoints(experiment)]
    try:
        outcomes = await asyncio.gather(*checks, return_exceptions=True)
    finally:
        for crs, _ in crss.values():
            aclose = getattr(crs, "aclose", None)
            if aclose is not None:
                await aclose()
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
