"""Whether a run tested its CRSs: the CRS × simulator pairings whose dialogues mostly failed.

A run whose CRS server was down holds every dialogue and scores it as not evaluable; its table of
zeros must not look like a result. A pairing *failed* when all its dialogues, or more than
`failed_pairing_share` of them (default one half), ended in `crs_error`, `infrastructure_error` or
`timeout`. `crsim run` then ends with exit code `EXIT_FAILED_PAIRINGS` and a closing line naming the
pairings and their dominant error; `crsim.run` raises `FailedPairings` carrying the result.

Exit codes of crsim commands (README, docs/cli.md): 0 success; 1 an unexpected error (a bug: the
traceback is shown); 2 bad input, a refused run folder or a failed preflight (one line, nothing
written by the run); 3 the run finished but a pairing failed (this module); 128 + N stopped by signal
N (130 Ctrl-C, 143 SIGTERM).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from crsim.core.errors import CrsimError
from crsim.model.run_folder.scores import GroupSummary

__all__ = [
    "EXIT_FAILED_PAIRINGS",
    "FAILURE_REASONS",
    "FailedPairing",
    "FailedPairings",
    "closing_line",
    "failed_pairings",
]

#: The exit code of a run in which a pairing failed (0, 1, 2 and 128 + N are taken).
EXIT_FAILED_PAIRINGS = 3
#: Terminations that mean the CRS (or what stands between it and crsim) was not tested.
FAILURE_REASONS = ("crs_error", "infrastructure_error", "timeout")


@dataclass(frozen=True)
class FailedPairing:
    """One CRS × simulator pairing most of whose dialogues failed, and how."""

    crs_id: str | None
    simulator_id: str | None
    failed: int
    dialogues: int
    #: The termination reason most of its failed dialogues ended with, e.g. `crs_error`.
    reason: str
    #: The error kind most frequent among them ('crs: CRSConnectionError'), or '' if none recorded.
    error: str = ""
    #: The first message of that error kind, one line.
    example: str = ""

    @property
    def label(self) -> str:
        return f"{self.crs_id} × {self.simulator_id}"

    def describe(self) -> str:
        """`remote × abus: 10/10 dialogues failed, mostly crs_error (crs: CRSConnectionError: ...)`."""
        error = f" ({self.error}: {self.example})" if self.error and self.example else ""
        error = error or (f" ({self.error})" if self.error else "")
        return f"{self.label}: {self.failed}/{self.dialogues} dialogues failed, mostly {self.reason}{error}"


def failed_pairings(summaries: Sequence[GroupSummary], share: float = 0.5) -> list[FailedPairing]:
    """The pairings in `summaries` that failed: all dialogues, or more than `share` of them, ended in
    one of `FAILURE_REASONS`."""
    found = []
    for group in summaries:
        failures = {r: group.terminations.get(r, 0) for r in FAILURE_REASONS if group.terminations.get(r)}
        failed = sum(failures.values())
        if not failed or not group.n_dialogues:
            continue
        if failed < group.n_dialogues and failed / group.n_dialogues <= share:
            continue
        reason = max(failures, key=lambda r: failures[r])
        error = max(group.errors, key=lambda k: group.errors[k]) if group.errors else ""
        example = group.error_examples.get(error, "").strip().splitlines()
        found.append(
            FailedPairing(
                group.crs_id,
                group.simulator_id,
                failed,
                group.n_dialogues,
                reason,
                error,
                example[0][:200] if example else "",
            )
        )
    return found


def closing_line(pairings: Sequence[FailedPairing]) -> str:
    """The one line a run with failed pairings ends with."""
    which = "; ".join(p.describe() for p in pairings)
    many = "pairings" if len(pairings) > 1 else "pairing"
    return (
        f"the run did not test {len(pairings)} CRS × simulator {many}: {which}; fix the cause, then "
        "hold them again with --resume --retry-errors"
    )


class FailedPairings(CrsimError):
    """`crsim.run` finished, but some CRS × simulator pairings failed (`failed_pairings`).

    `result` is the run's result as `crsim.run` would have returned it; `pairings` the failures."""

    def __init__(self, pairings: Sequence[FailedPairing], result: Any = None) -> None:
        super().__init__(closing_line(pairings))
        self.pairings = list(pairings)
        self.result = result
