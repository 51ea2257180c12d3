"""Pairing the dialogues of two runs by CRS, simulated user and trial, and choosing each run's
simulator."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from crsim.core.errors import ConfigError
from crsim.model.dialogue import Dialogue

_TRIAL = re.compile(r"#(\d+)$")


class PairKey(BaseModel):
    """What a pair shares: the CRS, the simulated user and the trial."""

    model_config = ConfigDict(frozen=True)

    crs_id: str | None
    user_id: str
    trial: int

    def sort_key(self) -> tuple[str, str, int]:
        return (self.crs_id or "", self.user_id, self.trial)


def trial_of(dialogue_id: str) -> int:
    """The trial index in a dialogue id (`crs/sim/user#2` -> 2); 0 without a `#N` suffix."""
    match = _TRIAL.search(dialogue_id)
    return int(match.group(1)) if match else 0


def pair_key(dialogue: Dialogue) -> PairKey | None:
    """The dialogue's pairing key, or None when it names no user (it cannot be paired)."""
    if not dialogue.user_id:
        return None
    return PairKey(crs_id=dialogue.crs_id, user_id=dialogue.user_id, trial=trial_of(dialogue.id))


@dataclass
class Pairing:
    """Paired dialogues (sorted by key) and the ids of those left unpaired or repeated."""

    pairs: list[tuple[PairKey, Dialogue, Dialogue]] = field(default_factory=list)
    unpaired_a: list[str] = field(default_factory=list)
    unpaired_b: list[str] = field(default_factory=list)
    duplicates_a: list[str] = field(default_factory=list)
    duplicates_b: list[str] = field(default_factory=list)


def _index(dialogues: list[Dialogue]) -> tuple[dict[PairKey, Dialogue], list[str], list[str]]:
    keyed: dict[PairKey, Dialogue] = {}
    unkeyed: list[str] = []
    duplicates: list[str] = []
    for dialogue in dialogues:
        key = pair_key(dialogue)
        if key is None:
            unkeyed.append(dialogue.id)
        elif key in keyed:
            duplicates.append(dialogue.id)
        else:
            keyed[key] = dialogue
    return keyed, unkeyed, duplicates


def pair_dialogues(dialogues_a: list[Dialogue], dialogues_b: list[Dialogue]) -> Pairing:
    """Pair by (crs_id, user_id, trial); the first dialogue of a repeated key is kept."""
    a, unkeyed_a, duplicates_a = _index(dialogues_a)
    b, unkeyed_b, duplicates_b = _index(dialogues_b)
    shared = sorted(set(a) & set(b), key=PairKey.sort_key)
    return Pairing(
        pairs=[(key, a[key], b[key]) for key in shared],
        unpaired_a=unkeyed_a + [d.id for k, d in a.items() if k not in b],
        unpaired_b=unkeyed_b + [d.id for k, d in b.items() if k not in a],
        duplicates_a=duplicates_a,
        duplicates_b=duplicates_b,
    )


def select_simulator(
    dialogues: list[Dialogue], simulator: str | None, side: str
) -> tuple[list[Dialogue], str | None]:
    """The dialogues of one simulator: `simulator`, or the only one present; else a ConfigError."""
    present = Counter(d.simulator_id for d in dialogues)
    if simulator is not None:
        chosen = [d for d in dialogues if d.simulator_id == simulator]
        if not chosen:
            known = ", ".join(sorted(str(s) for s in present)) or "none"
            raise ConfigError(
                f"run {side}: no dialogue of simulator {simulator!r}; simulators present: {known}"
            )
        return chosen, simulator
    if len(present) > 1:
        known = ", ".join(sorted(str(s) for s in present))
        raise ConfigError(
            f"run {side} holds dialogues of several simulators ({known}); choose one (--sim-{side.lower()})"
        )
    return dialogues, next(iter(present), None)
