"""How long an LLM run will take, said once on stderr after its first few model calls.

Calls planned: for every dialogue, `max_turns` times the calls per turn of its simulator and its CRS
(a component's `llm_calls_per_turn`, 1 for any component that uses a model and does not say; 0 for
one that uses none). Dialogues that end before `max_turns` make fewer calls; repaired answers and
closing lines add a few (60 planned, 65 made in `configs/llm-local.yaml`). Seconds per call: the
wall time of the phase so far over the fresh (uncached) calls answered, so concurrency and the
machine's load are in it. A cached re-run, or a run whose components use no model, prints nothing.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from crsim.core.components import llm_roles_of

if TYPE_CHECKING:
    from crsim.runner.build import Experiment
    from crsim.runner.progress import PhaseMeter

#: Fresh calls measured before the estimate is given.
FIRST_CALLS = 4


def calls_per_turn(cls: type[Any], params: Any) -> float:
    """Model calls a component makes per turn with these arguments (0 when it uses no model)."""
    if not llm_roles_of(cls, params):
        return 0.0
    return float(getattr(cls, "llm_calls_per_turn", 1.0))


def planned_llm_calls(experiment: Experiment, held: int = 0) -> int:
    """An upper bound on the model calls of the dialogues still to hold (all but `held` of them)."""
    from crsim.crs.base import crs_registry
    from crsim.sim.base import simulator_registry

    per_turn: dict[tuple[str, str], float] = {}
    config = experiment.config
    for kind, registry, specs in (
        ("crss", crs_registry, config.crss),
        ("simulators", simulator_registry, config.simulators),
    ):
        for spec, built in zip(specs, experiment.components[kind], strict=True):
            params = registry.params(spec.name, spec.args, where=kind)
            per_turn[kind, built["id"]] = calls_per_turn(registry.get(spec.name), params)
    todo = experiment.tasks[held:]
    turns = config.max_turns
    return round(
        sum(turns * (per_turn["crss", t.crs_label] + per_turn["simulators", t.simulator_label]) for t in todo)
    )


def estimate_line(planned: int, fresh: int, done: int, elapsed: float) -> str:
    """`LLM run: about 60 model calls planned ...; at 11.0 s per call ..., about 11 min in all ...`."""
    per_call = elapsed / fresh
    total = elapsed + max(planned - done, 0) * per_call
    return (
        f"LLM run: about {planned:,} model calls planned (dialogues × max_turns × calls per turn); "
        f"at {per_call:.1f} s per call (measured over the first {fresh}), about {_duration(total)} in all "
        "(less when dialogues end early)"
    )


def _to_stderr(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@contextmanager
def llm_duration_estimate(
    meter: PhaseMeter,
    planned: int,
    write: Callable[[str], None] | None = None,
    *,
    first: int = FIRST_CALLS,
    poll: float = 0.5,
) -> Iterator[None]:
    """Inside the dialogue phase: once `first` fresh calls are answered, `write` the estimate line
    once (default: to stderr as it is then, so a progress bar on the terminal stays intact).
    Nothing when no call is planned."""
    say = write if write is not None else _to_stderr
    if planned <= 0:
        yield
        return
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(poll):
            tally = meter.tally
            fresh = tally.calls - tally.cached
            if fresh >= first:
                say(estimate_line(planned, fresh, tally.calls, meter.elapsed()))
                return

    watcher = threading.Thread(target=watch, name="crsim-estimate", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join(timeout=2)
