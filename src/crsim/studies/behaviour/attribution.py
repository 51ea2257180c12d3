"""Failures of the simulated user, counted per CRS × simulator pairing beside a run's metrics.

A CRS's Success falls when the user did not hear a recommendation, when it kept restating a constraint
the CRS never took, or when it asked about what it had itself said: `crsim evaluate` shows how many
dialogues of each pairing the behaviour report's simulator measures flag for these
(`SIMULATOR_ISSUES`, docs/behaviour.md), so a reader can see how much of a CRS's failure is the
simulator's.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, Field

from crsim.model.dialogue import Dialogue
from crsim.model.domain import Domain
from crsim.studies.behaviour.facts import UNNAMED, Facts
from crsim.studies.behaviour.records import read_run
from crsim.studies.behaviour.users import asked_stated_slot, missed_recommendation, restated_constraint

#: The simulator measures reported beside the metrics, in order.
SIMULATOR_ISSUES = ("missed_recommendation", "restated_constraint", "asked_stated_slot")
_MEASURES = (missed_recommendation, restated_constraint, asked_stated_slot)


class IssueCount(BaseModel):
    """Dialogues a measure flags (`k`) of those it could judge (`n`), with up to three examples."""

    k: int = 0
    n: int = 0
    examples: list[str] = Field(default_factory=list)


class PairingIssues(BaseModel):
    """The simulator-attributed issues of one CRS × simulator pairing."""

    crs_id: str
    simulator_id: str
    dialogues: int = 0
    issues: dict[str, IssueCount]


def simulator_issues(dialogues: Iterable[Dialogue], domain: Domain) -> list[PairingIssues]:
    """Per pairing, in order of appearance: how many dialogues each of `SIMULATOR_ISSUES` flags."""
    pairings: dict[tuple[str, str], PairingIssues] = {}
    for dialogue in dialogues:
        key = (dialogue.crs_id or UNNAMED, dialogue.simulator_id or UNNAMED)
        pairing = pairings.get(key)
        if pairing is None:
            pairing = pairings[key] = PairingIssues(
                crs_id=key[0], simulator_id=key[1], issues={m: IssueCount() for m in SIMULATOR_ISSUES}
            )
        pairing.dialogues += 1
        facts = Facts(dialogue, domain)
        for measure in _MEASURES:
            for observation in measure(facts):
                if observation.hit is None:
                    continue
                count = pairing.issues[observation.measure]
                count.n += 1
                if observation.hit:
                    count.k += 1
                    if len(count.examples) < 3:
                        count.examples.append(f"{dialogue.id}: {observation.note}")
    return list(pairings.values())


def simulator_issues_of(path: str | Path, domain: Domain | None = None) -> list[PairingIssues]:
    """The simulator-attributed issues of a run folder (or of a dialogue file that names its domain)."""
    records = read_run(Path(path), domain, [])
    return simulator_issues(records.dialogues, records.domain)
