"""How far the behaviour report's rules can be trusted: each rule against two readers' labels of a
labelled set of dialogues (tests/fixtures/behaviour_labels/, its GUIDE.md).

A labelled set is a folder with `dialogues.jsonl` (crsim Dialogue records naming their domain in
`metadata.domain`), optionally `caps.json` (CRS id -> the `max_message_chars` its run configured),
two reader label files `labels-*.jsonl` and optionally `adjudicated.jsonl`. A label line:
`{"dialogue": id, "behaviour": name, "messages": [indices], "present": bool, "note": "..."}`.

Per behaviour, at the rule's unit (a message of the rule's role for message-level rules, else a
dialogue): the readers' agreement (share of units and Cohen's kappa); the gold label (units where
they agree; a disagreement takes the adjudicated label when `adjudicated.jsonl` has one, else it is
left out and counted); the rule's precision and recall against the gold label with 95% Wilson
intervals, computed by the same code `crsim analyze behaviour` runs; and a status: `validated` when
precision >= 0.9 and recall >= 0.8 on at least 10 gold positives, `experimental` otherwise, `no rule`
for a behaviour readers label that no rule detects yet.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from crsim.core.errors import DataError
from crsim.core.jsonl import Unreadable, jsonl_records
from crsim.domains import domain_named
from crsim.model.annotations import DOMAIN
from crsim.model.dialogue import Dialogue, Role
from crsim.model.run_folder.files import RunPaths
from crsim.studies.behaviour.observation import Observation
from crsim.studies.behaviour.records import RunRecords
from crsim.studies.behaviour.report import observe, wilson

CAPS = "caps.json"
ADJUDICATED = "adjudicated.jsonl"
READER_GLOB = "labels-*.jsonl"
#: A rule is validated from this precision and this recall on (point estimates).
MIN_PRECISION = 0.9
MIN_RECALL = 0.8
#: ... on at least this many gold positives: 10 of 10 found still leaves a Wilson lower bound of 0.72.
MIN_POSITIVES = 10


@dataclass(frozen=True)
class Behaviour:
    """A behaviour readers label: the rule (report measure) that detects it, whether the rule's hit
    means the behaviour (`negate`: the rule fires when it is absent), and the unit: the messages of
    `role`, or the dialogue when `role` is None."""

    name: str
    measure: str | None
    role: Role | None
    negate: bool = False
    #: Whether the rule was tuned on the labelled set's `dev` half: its standing is then read on the
    #: held-out `test` half only (`standing`).
    tuned: bool = True


#: Every behaviour of the labelling guide, in its order.
BEHAVIOURS: dict[str, Behaviour] = {
    b.name: b
    for b in (
        Behaviour("first_turn_end", "first_turn_end", None, tuned=False),
        Behaviour("target_leaked", "target_leaked", None, tuned=False),
        Behaviour("role_flip", "role_flip", Role.USER),
        Behaviour("meta_text", "meta_text", Role.USER),
        Behaviour("user_truncated", "user_truncated", Role.USER, tuned=False),
        Behaviour("user_repeats", "user_repeats", None),
        Behaviour("parroting", "parroting", None),
        Behaviour("contradicting_acceptance", "contradicting_acceptance", None),
        Behaviour("stop_before_recommendation", "stop_before_recommendation", None, tuned=False),
        Behaviour("missed_recommendation", "missed_recommendation", None),
        Behaviour("restated_constraint", "restated_constraint", None, tuned=False),
        Behaviour("asked_stated_slot", "asked_stated_slot", None),
        Behaviour("truncated", "truncated", Role.CRS),
        Behaviour("text_misses_item", "text_names_item", Role.CRS, negate=True),
        Behaviour("claim_contradicts_item", "claim_contradicts_item", Role.CRS),
        Behaviour("crs_repeats", "crs_repeats", None),
        Behaviour("crs_role_flip", "crs_role_flip", Role.CRS),
    )
}

#: A unit: (dialogue id, message index), the index -1 for a dialogue-level behaviour.
Unit = tuple[str, int]
_DIALOGUE = -1


class Label(BaseModel):
    """One line of a label file: one behaviour of one dialogue."""

    model_config = ConfigDict(extra="forbid")

    dialogue: str
    behaviour: str
    messages: list[int] = Field(default_factory=list)
    present: bool
    note: str = ""


class Rate(BaseModel):
    """k of n with its 95% Wilson interval (value None when n = 0)."""

    k: int
    n: int
    value: float | None
    ci_low: float | None
    ci_high: float | None


def rate(k: int, n: int) -> Rate:
    low, high = wilson(k, n) if n else (None, None)
    return Rate(k=k, n=n, value=k / n if n else None, ci_low=low, ci_high=high)


class BehaviourCheck(BaseModel):
    """One behaviour: the readers' agreement, the gold label and the rule against it."""

    behaviour: str
    measure: str | None
    unit: str
    units: int = Field(description="Units both readers labelled.")
    agreement: float | None
    kappa: float | None = Field(description="Cohen's kappa; None when chance agreement is 1.")
    disagreements: int
    adjudicated: int
    excluded: int = Field(description="Disagreements without an adjudicated label, left out of the gold set.")
    gold_units: int
    gold_positive: int
    detected: int = Field(description="Gold units the rule flags.")
    true_positive: int
    precision: Rate | None
    recall: Rate | None
    status: str


class DetectorValidation(BaseModel):
    """Every behaviour of a labelled set."""

    folder: str
    part: str = Field(description="'all', or the half of the set: 'dev' (odd positions) or 'test'.")
    dialogues: int
    readers: list[str]
    checks: list[BehaviourCheck]


def _bad(path: Path, line: int, problem: str) -> DataError:
    return DataError(f"line {line}: {problem}", path=str(path))


def read_labels(path: Path, dialogues: dict[str, Dialogue]) -> dict[tuple[str, str], Label]:
    """A label file by (dialogue, behaviour); a line naming an unknown dialogue, behaviour or message,
    or a message of the wrong role, or a repeated pair, is an error naming the line."""
    found: dict[tuple[str, str], Label] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            label = Label.model_validate_json(line)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "the line"
            raise _bad(path, number, f"{where}: {first['msg']}; expected a label (GUIDE.md)") from None
        dialogue = dialogues.get(label.dialogue)
        if dialogue is None:
            raise _bad(path, number, f"dialogue: {label.dialogue!r} is not among the set's dialogues")
        behaviour = BEHAVIOURS.get(label.behaviour)
        if behaviour is None:
            raise _bad(
                path,
                number,
                f"behaviour: unknown {label.behaviour!r}; expected one of {', '.join(BEHAVIOURS)}",
            )
        for index in label.messages:
            if not 0 <= index < len(dialogue.utterances):
                raise _bad(path, number, f"messages: {index} is no message index of {label.dialogue!r}")
            role = dialogue.utterances[index].role
            if behaviour.role is not None and role is not behaviour.role:
                raise _bad(
                    path,
                    number,
                    f"messages: {index} is a {role.value} message; "
                    f"{label.behaviour} is about {behaviour.role.value} messages",
                )
        if behaviour.role is not None and label.present != bool(label.messages):
            raise _bad(path, number, "present must be true exactly when messages lists where it occurs")
        key = (label.dialogue, label.behaviour)
        if key in found:
            raise _bad(path, number, f"a second label of {key[1]} for dialogue {key[0]!r}")
        found[key] = label
    return found


def _complete(path: Path, labels: dict[tuple[str, str], Label], dialogues: dict[str, Dialogue]) -> None:
    missing = [(d, b) for d in dialogues for b in BEHAVIOURS if (d, b) not in labels]
    if missing:
        d, b = missing[0]
        raise DataError(
            f"{len(missing)} (dialogue, behaviour) pairs have no label, the first: {b} of {d!r}; "
            "a reader labels every behaviour of every dialogue (present false when absent)",
            path=str(path),
        )


def units_of(behaviour: Behaviour, dialogue: Dialogue) -> list[Unit]:
    """The units of a behaviour in a dialogue: the messages of its role, or the dialogue."""
    if behaviour.role is None:
        return [(dialogue.id, _DIALOGUE)]
    return [(dialogue.id, i) for i, u in enumerate(dialogue.utterances) if u.role is behaviour.role]


def positives(behaviour: Behaviour, labels: dict[tuple[str, str], Label]) -> set[Unit]:
    """The units a label file marks present."""
    found: set[Unit] = set()
    for (dialogue, name), label in labels.items():
        if name != behaviour.name or not label.present:
            continue
        if behaviour.role is None:
            found.add((dialogue, _DIALOGUE))
        else:
            found |= {(dialogue, i) for i in label.messages}
    return found


def detections(behaviour: Behaviour, observations: list[Observation]) -> set[Unit]:
    """The units the behaviour's rule flags (a unit the rule cannot evaluate is not flagged)."""
    found: set[Unit] = set()
    for obs in observations:
        if obs.measure != behaviour.measure or obs.hit is None or obs.hit == behaviour.negate:
            continue
        found.add(
            (
                obs.dialogue_id,
                _DIALOGUE
                if behaviour.role is None
                else (obs.message if obs.message is not None else _DIALOGUE),
            )
        )
    return found


def cohen_kappa(a: list[bool], b: list[bool]) -> float | None:
    """Cohen's kappa of two binary labellings of the same units; None when chance agreement is 1
    (both readers gave every unit the same one label)."""
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    chance = pa * pb + (1 - pa) * (1 - pb)
    if chance >= 1.0:
        return None
    return (observed - chance) / (1 - chance)


def check(
    behaviour: Behaviour,
    units: list[Unit],
    reader_a: set[Unit],
    reader_b: set[Unit],
    adjudicated: set[Unit] | None,
    adjudicated_dialogues: set[str],
    detected: set[Unit],
) -> BehaviourCheck:
    """One behaviour's agreement, gold label and rule performance over `units`. `adjudicated`: the
    units the adjudication marks present (None without an adjudication file); it settles the
    disagreements in `adjudicated_dialogues`."""
    a = [u in reader_a for u in units]
    b = [u in reader_b for u in units]
    gold, disagreements, settled = _gold(units, a, b, adjudicated, adjudicated_dialogues)
    positive = {u for u, v in gold.items() if v}
    flagged = {u for u in gold if u in detected}
    hits = len(positive & flagged)
    precision = rate(hits, len(flagged)) if behaviour.measure else None
    recall = rate(hits, len(positive)) if behaviour.measure else None
    status = _status(behaviour, precision, recall, len(positive))
    return BehaviourCheck(
        behaviour=behaviour.name,
        measure=behaviour.measure,
        unit="dialogue" if behaviour.role is None else f"{behaviour.role.value} message",
        units=len(units),
        agreement=sum(x == y for x, y in zip(a, b, strict=True)) / len(units) if units else None,
        kappa=cohen_kappa(a, b) if units else None,
        disagreements=disagreements,
        adjudicated=settled,
        excluded=disagreements - settled,
        gold_units=len(gold),
        gold_positive=len(positive),
        detected=len(flagged),
        true_positive=hits,
        precision=precision,
        recall=recall,
        status=status,
    )


def _gold(
    units: list[Unit],
    a: list[bool],
    b: list[bool],
    adjudicated: set[Unit] | None,
    adjudicated_dialogues: set[str],
) -> tuple[dict[Unit, bool], int, int]:
    """The gold label of each unit the readers agree on or the adjudication settles, the number of
    disagreements and the number settled (the others have no gold label)."""
    gold: dict[Unit, bool] = {}
    disagreements = settled = 0
    for unit, x, y in zip(units, a, b, strict=True):
        if x == y:
            gold[unit] = x
            continue
        disagreements += 1
        if adjudicated is not None and unit[0] in adjudicated_dialogues:
            gold[unit] = unit in adjudicated
            settled += 1
    return gold, disagreements, settled


def _status(behaviour: Behaviour, precision: Rate | None, recall: Rate | None, positives: int) -> str:
    """no rule; validated (precision, recall and gold positives reach their minimums); else experimental."""
    if behaviour.measure is None:
        return "no rule"
    if (
        precision is not None
        and recall is not None
        and precision.value is not None
        and recall.value is not None
        and precision.value >= MIN_PRECISION
        and recall.value >= MIN_RECALL
        and positives >= MIN_POSITIVES
    ):
        return "validated"
    return "experimental"


def read_dialogues(folder: Path) -> list[Dialogue]:
    path = RunPaths(folder).dialogues  # a labelled set keeps its dialogues as a run folder does
    if not path.is_file():
        raise DataError(
            f"no {path.name}; expected a labelled set (tests/fixtures/behaviour_labels)", path=str(folder)
        )
    bad: list[Unreadable] = []
    dialogues = list(jsonl_records(path, Dialogue.model_validate_json, bad))
    if bad:
        raise DataError(f"line {bad[0].line}: {bad[0].problem}", path=str(path))
    return dialogues


def observations_of(dialogues: list[Dialogue], caps: dict[str, int]) -> list[Observation]:
    """The behaviour report's observations of the dialogues, domain by domain (`metadata.domain`)."""
    by_domain: dict[str, list[Dialogue]] = {}
    for dialogue in dialogues:
        name = DOMAIN.get(dialogue.metadata, where=f"dialogue {dialogue.id!r}")
        if not name:
            raise DataError(
                f"dialogue {dialogue.id!r}: metadata.domain is missing; expected the domain's name"
            )
        by_domain.setdefault(name, []).append(dialogue)
    found: list[Observation] = []
    for name, group in by_domain.items():
        records = RunRecords(name="labels", domain=domain_named(name), dialogues=group, caps=caps)
        found += observe(records)[0]
    return found


#: The halves of a labelled set (`part`): rules are tuned on `dev` and reported on `test` as well,
#: so a rule fitted to the labels shows it. By position in dialogues.jsonl: 1st, 3rd, ... are `dev`.
PARTS = ("all", "dev", "test")


def validate_detectors(
    folder: str | Path, readers: tuple[str, str] | None = None, part: str = "all"
) -> DetectorValidation:
    """Check every behaviour of a labelled set: its two reader files (`readers`, file names in the
    folder; default the two `labels-*.jsonl` there) and `adjudicated.jsonl` when present, on the whole
    set or one half of it (`part`, `PARTS`)."""
    if part not in PARTS:
        raise DataError(f"part {part!r}: expected one of {', '.join(PARTS)}")
    root = Path(folder)
    every = read_dialogues(root)
    by_id = {d.id: d for d in every}
    dialogues = every if part == "all" else every[(0 if part == "dev" else 1) :: 2]
    if readers is None:
        files = sorted(root.glob(READER_GLOB))
        if len(files) != 2:
            raise DataError(f"expected two reader files {READER_GLOB}, found {len(files)}", path=str(root))
    else:
        files = [root / name for name in readers]
    labels = []
    for file in files:
        if not file.is_file():
            raise DataError("reader label file not found", path=str(file))
        read = read_labels(file, by_id)
        _complete(file, read, by_id)
        labels.append(read)
    adjudication = root / ADJUDICATED
    adjudicated = read_labels(adjudication, by_id) if adjudication.is_file() else None
    caps_file = root / CAPS
    caps = json.loads(caps_file.read_text(encoding="utf-8")) if caps_file.is_file() else {}
    observations = observations_of(dialogues, caps)
    checks = []
    for behaviour in BEHAVIOURS.values():
        units = [u for d in dialogues for u in units_of(behaviour, d)]
        settled = None if adjudicated is None else positives(behaviour, adjudicated)
        settled_dialogues = (
            set() if adjudicated is None else {d for d, name in adjudicated if name == behaviour.name}
        )
        checks.append(
            check(
                behaviour,
                units,
                positives(behaviour, labels[0]),
                positives(behaviour, labels[1]),
                settled,
                settled_dialogues,
                detections(behaviour, observations),
            )
        )
    return DetectorValidation(
        folder=root.name, part=part, dialogues=len(dialogues), readers=[f.name for f in files], checks=checks
    )


def standing(folder: str | Path) -> dict[str, str]:
    """Rule (report measure) -> its status against a labelled set: on the held-out `test` half for a
    rule tuned on `dev`, on the whole set for the others. `MEASURES[...].status` records it."""
    parts = {part: validate_detectors(folder, part=part) for part in ("all", "test")}
    out = {}
    for behaviour in BEHAVIOURS.values():
        if behaviour.measure is None:
            continue
        checks = parts["test" if behaviour.tuned else "all"].checks
        out[behaviour.measure] = next(c.status for c in checks if c.behaviour == behaviour.name)
    return out


def _share(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def check_rows(result: DetectorValidation) -> list[dict[str, object]]:
    """One flat row per behaviour (for CSV and tables)."""
    rows = []
    for c in result.checks:
        row: dict[str, object] = {
            "behaviour": c.behaviour,
            "rule": c.measure or "",
            "unit": c.unit,
            "units": c.units,
            "agreement": c.agreement,
            "kappa": c.kappa,
            "disagreements": c.disagreements,
            "adjudicated": c.adjudicated,
            "excluded": c.excluded,
            "gold_units": c.gold_units,
            "gold_positive": c.gold_positive,
            "detected": c.detected,
            "true_positive": c.true_positive,
        }
        for name, r in (("precision", c.precision), ("recall", c.recall)):
            row |= {
                name: r.value if r else None,
                f"{name}_n": r.n if r else None,
                f"{name}_ci_low": r.ci_low if r else None,
                f"{name}_ci_high": r.ci_high if r else None,
            }
        row["status"] = c.status
        rows.append(row)
    return rows


def rate_text(r: Rate | None) -> str:
    """`k/n 0.92 [0.80, 0.97]`, or `-/0` when n = 0."""
    if r is None:
        return ""
    if r.value is None:
        return f"-/{r.n}"
    return f"{r.k}/{r.n} {r.value:.2f} [{_share(r.ci_low)}, {_share(r.ci_high)}]"


def write_checks(result: DetectorValidation, path: Path) -> None:
    """The checks as CSV for a `.csv` path, else the whole result as JSON."""
    import csv

    from crsim.core.atomic_files import atomic_output

    with atomic_output(path) as handle:
        if path.suffix.lower() == ".csv":
            rows = check_rows(result)
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else ["behaviour"])
            writer.writeheader()
            writer.writerows(rows)
        else:
            handle.write(result.model_dump_json(indent=2) + "\n")
