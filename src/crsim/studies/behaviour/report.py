"""The behaviour report: every measure aggregated per subject (simulator, CRS or judge) with its n,
the share of units where it fires and a 95% Wilson score interval; a tidy dataframe of the same."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from crsim.language.claims import claim_phrases
from crsim.language.message_rules import role_flip_patterns
from crsim.model.domain import Domain
from crsim.studies.behaviour.crs import crs_observations
from crsim.studies.behaviour.facts import Facts
from crsim.studies.behaviour.judges import judge_observations
from crsim.studies.behaviour.observation import MEASURES, Kind, Observation
from crsim.studies.behaviour.records import RunRecords, read_run
from crsim.studies.behaviour.users import simulator_observations

if TYPE_CHECKING:
    import pandas as pd

#: z of a two-sided 95% interval.
Z95 = 1.959963984540054
#: Dialogue ids (with the evidence) kept per row as examples of where the measure fired.
EXAMPLES = 3
WILSON = "wilson95"


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials (inside [0, 1], not zero-width at 0 or n)."""
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    low = 0.0 if k == 0 else max(0.0, centre - half)  # exact bounds where rounding leaves 1e-17
    high = 1.0 if k == n else min(1.0, centre + half)
    return low, high


class Row(BaseModel):
    """One measure of one subject: `k` of `n` evaluable units fire (`value` = k / n, its 95% Wilson
    interval); `not_evaluable` units lacked what the measure needs."""

    kind: Kind
    subject: str
    measure: str
    unit: str
    n: int
    k: int
    value: float | None
    ci_low: float | None
    ci_high: float | None
    interval: str | None = Field(description="How the interval was computed ('wilson95'), None when n = 0.")
    not_evaluable: int
    examples: list[str] = Field(
        default_factory=list,
        description="'dialogue id: evidence' where it fired (where it did not, when firing is wanted).",
    )
    detail: str = ""
    status: str = Field(
        "unchecked",
        description="The rule's standing against the labelled set: validated, experimental or unchecked.",
    )


class Problem(BaseModel):
    """A record the report could not read: file, line and what was wrong."""

    path: str
    line: int
    problem: str


class BehaviourReport(BaseModel):
    """The behaviour of every simulator, CRS and judge of one run."""

    run: str
    domain: str
    dialogues: int
    scores: int
    rows: list[Row]
    unreadable: list[Problem] = Field(default_factory=list)

    def rows_of(self, kind: Kind) -> list[Row]:
        return [r for r in self.rows if r.kind is kind]


def _row(key: tuple[Kind, str, str], found: list[Observation], detail: str) -> Row:
    """The row of one measure of one subject from its observations."""
    kind, subject, measure = key
    hits = [o for o in found if o.hit]
    shown = [o for o in found if o.hit is False] if MEASURES[measure].wanted else hits
    n = sum(1 for o in found if o.hit is not None)
    low, high = wilson(len(hits), n) if n else (None, None)
    return Row(
        kind=kind,
        subject=subject,
        measure=measure,
        unit=MEASURES[measure].unit,
        n=n,
        k=len(hits),
        value=len(hits) / n if n else None,
        ci_low=low,
        ci_high=high,
        interval=WILSON if n else None,
        not_evaluable=len(found) - n,
        examples=[f"{o.dialogue_id}: {o.note}" if o.note else o.dialogue_id for o in shown[:EXAMPLES]],
        detail=detail,
        status=MEASURES[measure].status,
    )


def aggregate(observations: Iterable[Observation], details: dict[str, str] | None = None) -> list[Row]:
    """One row per (kind, subject, measure): simulators, CRSs, judges; measures in MEASURES order;
    subjects in order of appearance. `details`: judge label -> its score spread (`score_at_max` rows)."""
    groups: dict[tuple[Kind, str, str], list[Observation]] = {}
    for obs in observations:
        groups.setdefault((obs.kind, obs.subject, obs.measure), []).append(obs)
    kinds, measures = list(Kind), list(MEASURES)
    ordered = sorted(groups, key=lambda key: (kinds.index(key[0]), measures.index(key[2])))
    spread = details or {}
    return [
        _row(key, groups[key], spread.get(key[1], "") if key[2] == "score_at_max" else "") for key in ordered
    ]


def observe(records: RunRecords) -> tuple[list[Observation], dict[str, str]]:
    """Every observation of every measure on the run's records, and the judges' score spreads."""
    patterns = role_flip_patterns(records.domain)
    phrases = claim_phrases(records.domain)
    found: list[Observation] = []
    for dialogue in records.dialogues:
        facts = Facts(dialogue, records.domain)
        found += simulator_observations(facts, patterns)
        found += crs_observations(facts, records.caps, phrases)
    judged, spread = judge_observations(records.scores, {d.id: d for d in records.dialogues}, records.rubrics)
    return found + judged, spread


def behaviour_of(records: RunRecords) -> BehaviourReport:
    """The report of records already read."""
    observations, spread = observe(records)
    return BehaviourReport(
        run=records.name,
        domain=records.domain.name,
        dialogues=len(records.dialogues),
        scores=len(records.scores),
        rows=aggregate(observations, spread),
        unreadable=[Problem(path=u.path, line=u.line, problem=u.problem) for u in records.unreadable],
    )


def behaviour_report(
    path: str | Path, domain: Domain | None = None, scores: Sequence[str | Path] = ()
) -> BehaviourReport:
    """The behaviour report of a run folder (or a dialogue file with `domain`), with the judge scores
    of the run folder or of the scores files / evaluation folders `scores` names."""
    return behaviour_of(read_run(Path(path), domain, [Path(s) for s in scores]))


def behaviour_frame(report: BehaviourReport) -> pd.DataFrame:
    """The report as a tidy dataframe: one row per measure × subject, with n, k, value and interval."""
    import pandas as pd

    columns = list(Row.model_fields)
    records = [row.model_dump(mode="json") | {"examples": " | ".join(row.examples)} for row in report.rows]
    return pd.DataFrame(records, columns=columns)


def write_report(report: BehaviourReport, path: Path) -> None:
    """Write the report: the tidy table as CSV for a `.csv` path, else the whole report as JSON."""
    from crsim.core.atomic_files import atomic_output

    with atomic_output(path) as handle:
        if path.suffix.lower() == ".csv":
            behaviour_frame(report).to_csv(handle, index=False)
        else:
            handle.write(report.model_dump_json(indent=2) + "\n")
