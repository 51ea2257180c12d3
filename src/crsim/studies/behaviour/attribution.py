"""Failures of the simulated user, counted per CRS × simulator pairing beside a run's metrics.

A CRS's Success falls when the user did not hear a recommendation, when it kept restating a constraint
the CRS never took, or when it asked about what it had itself said: `crsim evaluate` shows how many
dialogues of each pairing the behaviour report's simulator measures flag for these
(`SIMULATOR_ISSUES`, docs/behaviour.md), so a reader can see how much of a CRS's failure is the
simulator's.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from crsim.model.dialogue import Dialogue
from crsim.model.domain import Domain
from crsim.studies.behaviour.facts import UNNAMED, Facts
from crsim.studies.behaviour.records import read_run, run_domain
from crsim.studies.behaviour.user_reactions import missed_recommendation
from crsim.studies.behaviour.users import asked_stated_slot, restated_constraint

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


#: `crsim evaluate` counts the simulator-attributed issues on at most this many dialogues of a run: a
#: seeded uniform sample (reservoir sampling over the file) when the run holds more. The measures read
#: every user message with the rule-based understanding, which costs more than scoring the metrics.
ISSUES_SAMPLE = 5000


class IssueSample:
    """A seeded uniform sample of at most `size` (default `ISSUES_SAMPLE`) dialogues of a stream, kept
    while the stream passes (`add` each batch in file order), then counted by `simulator_issues`.

    Reservoir sampling (Algorithm R) with `random.Random(seed)`: the same file and seed give the same
    sample; a stream of at most `size` dialogues is kept whole, in order. A kept dialogue is held as
    its JSON text until it is counted: a string is one object the garbage collector never scans,
    where a parsed dialogue is hundreds that every collection during the stream would walk.
    """

    def __init__(self, size: int | None = None, seed: int = 0) -> None:
        size = ISSUES_SAMPLE if size is None else size
        if size < 1:
            raise ValueError(f"sample size {size} < 1")
        self.size, self.seed = size, seed
        self.seen = 0
        self._rng = random.Random(seed)
        self._kept: list[tuple[int, str]] = []

    def add(self, dialogues: Sequence[Dialogue]) -> None:
        for dialogue in dialogues:
            if self.seen < self.size:
                self._kept.append((self.seen, dialogue.model_dump_json()))
            else:
                slot = self._rng.randrange(self.seen + 1)
                if slot < self.size:
                    self._kept[slot] = (self.seen, dialogue.model_dump_json())
            self.seen += 1

    @property
    def sampled(self) -> bool:
        """Whether some dialogues were left out (the stream held more than `size`)."""
        return self.seen > self.size

    @property
    def dialogues(self) -> list[Dialogue]:
        """The kept dialogues, in file order."""
        kept = sorted(self._kept, key=lambda entry: entry[0])
        return [Dialogue.model_validate_json(text) for _, text in kept]

    def issues(self, path: str | Path, domain: Domain | None = None) -> list[PairingIssues]:
        """`simulator_issues` of the kept dialogues, over the domain of the run at `path` (its
        manifest's, else the one the kept records name)."""
        kept = self.dialogues
        return simulator_issues(kept, domain or run_domain(Path(path), kept))
