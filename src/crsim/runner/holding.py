"""Holding dialogues in this process: one dialogue that never raises, and a list of them
`config.concurrency` at a time, each handed to a `record` callback as it finishes.

The local executor of `crsim.runner.batch` and each shard of the Ray executor
(`crsim.runner.ray_executor`) hold their dialogues here, so both produce the same records.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any

from crsim.crs.base import CRS, CRSSession
from crsim.model import annotations as keys
from crsim.model.dialogue import Dialogue, ErrorInfo, Termination, TerminationReason
from crsim.runner.build import DialogueTask, Experiment
from crsim.runner.loop import run_dialogue

logger = logging.getLogger(__name__)


async def hold_dialogue(experiment: Experiment, task: DialogueTask) -> Dialogue:
    """One dialogue, never raising: a simulator that cannot be built is a `user_error` record, any
    other failure outside the participants an `infrastructure_error` record (source 'loop')."""
    metadata: dict[str, Any] = {**keys.SEED.entry(task.seed), **keys.DOMAIN.entry(experiment.domain.name)}
    if experiment.config.trials > 1:
        keys.TRIAL.put(metadata, task.trial)
    source = "user"
    try:
        simulator = experiment.simulator_factories[task.simulator_label](task.seed)
        source = "loop"
        return await run_dialogue(
            simulator,
            experiment.crss[task.crs_label],
            task.user,
            dialogue_id=task.id,
            session=CRSSession(id=task.id, seed=task.seed),
            max_turns=experiment.config.max_turns,
            items=experiment.domain.items,
            metadata=metadata,
            crs_id=task.crs_label,
            simulator_id=task.simulator_label,
            trial=task.trial,
            timeout_s=experiment.config.dialogue_timeout_s,
        )
    except Exception as exc:  # noqa: BLE001 - one failing dialogue never sinks a run
        error = ErrorInfo(source=source, type=type(exc).__name__, message=str(exc))
        reason = TerminationReason.USER_ERROR if source == "user" else TerminationReason.INFRASTRUCTURE_ERROR
        return Dialogue(
            id=task.id,
            user_id=task.user.id,
            crs_id=task.crs_label,
            simulator_id=task.simulator_label,
            information_need=task.user.need,
            user_profile=task.user.profile,
            metadata=metadata,
            termination=Termination(reason=reason, error=error),
        )


async def hold_dialogues(
    experiment: Experiment, tasks: list[DialogueTask], record: Callable[[Dialogue], None]
) -> None:
    """Hold `tasks` in this process, `config.concurrency` at a time, handing each dialogue to `record`
    as it finishes (the local executor, and each shard of the Ray executor)."""
    queue: asyncio.Queue[DialogueTask] = asyncio.Queue()
    for task in tasks:
        queue.put_nowait(task)

    stopping = False

    async def worker() -> None:
        while not queue.empty() and not stopping:
            record(await hold_dialogue(experiment, queue.get_nowait()))
            # Built-in components may hold a whole dialogue without suspending: without this a
            # cancellation (Ctrl-C, SIGTERM) would only arrive once every dialogue was held.
            await asyncio.sleep(0)

    workers = [
        asyncio.ensure_future(worker()) for _ in range(min(experiment.config.concurrency, max(1, len(tasks))))
    ]
    try:
        await asyncio.gather(*workers)
    finally:
        # `gather` ends as soon as one worker is cancelled or fails. Another may not have seen its
        # cancellation (Python 3.11's `asyncio.wait_for` swallows it when the awaited call ended at the
        # same moment) and would go on holding dialogues and hand them to a closed writer: stop them
        # all, and return only once none runs. A dialogue one of them finishes meanwhile is recorded.
        stopping = True
        for work in workers:
            work.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        await close_crss(experiment.crss.values())


async def close_crss(crss: Iterable[CRS]) -> None:
    """Let each CRS release what it keeps between dialogues (an HTTP CRS's kept connections) by its
    optional `aclose()`. A failure there is logged, never raised: every dialogue is already held."""
    for crs in crss:
        aclose = getattr(crs, "aclose", None)
        if aclose is None:
            continue
        try:
            await aclose()
        except Exception:  # the records are written; a failed cleanup must not lose them
            logger.warning("closing the CRS %r failed", crs, exc_info=True)
