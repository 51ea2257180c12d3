"""The predicted side of meta-evaluation: scores per conversation, assistant turn and aspect.

Predictions come from a run file (the format of FACE's `face_run.json`) or from running a crsim
evaluator (`crsim.studies.meta.evaluator`), and can be written back as a run file so an expensive judge
run is scored once and re-analysed later.

Run file format: a JSON array (optionally gzipped) of
`{"conv_id": str, "turns": [{"turn_ind": int, "turn_level_pred": {aspect: number}}],
"dial_level_pred": {aspect: number}}`. `turn_ind` is the 0-based position of the assistant
utterance in the gold conversation (an integral float such as 3.0 is accepted); the overall aspect
may be called `dialogue_overall`, `dialog_overall`, `overall_impression` or `overall`; `null` is a
prediction that failed (counted as missing). Fields and aspects that are not used are listed in
`notes`, never dropped silently.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crsim.core.atomic_files import atomic_output
from crsim.core.errors import DataError
from crsim.datasets.files import read_json
from crsim.studies.meta.aspects import TURN_ASPECTS, canonical_aspect, level_of

#: (conv_id, assistant turn_ind or None for dialogue level, canonical aspect).
Key = tuple[str, int | None, str]
#: Why a value in a run file is None.
NULL_VALUE = "null in the run file"
_RECORD_FIELDS = ("conv_id", "turns", "dial_level_pred")
_TURN_FIELDS = ("turn_ind", "turn_level_pred")


@dataclass
class Predictions:
    """Predicted values by (conv_id, turn_ind, aspect); None values carry a reason in `reasons`."""

    source: str
    values: dict[Key, float | None] = field(default_factory=dict)
    reasons: dict[Key, str] = field(default_factory=dict)
    #: What was read but not used (unknown aspects, fields, turns without a label), with counts.
    notes: Counter[str] = field(default_factory=Counter)

    def add(self, key: Key, value: float | None, reason: str | None = None) -> None:
        self.values[key] = value
        if value is None:
            self.reasons[key] = reason or "no value"
        else:
            self.reasons.pop(key, None)

    def conv_ids(self) -> set[str]:
        return {key[0] for key in self.values}

    def aspects(self) -> set[str]:
        return {key[2] for key in self.values}


class _RunRecord:
    """One record of a run file, for errors that name the file, the record and the field."""

    def __init__(self, path: Path, number: int, data: Any) -> None:
        self.path, self.number, self.data = path, number, data
        self.conv_id: str | None = None

    def error(self, message: str, field: str | None = None) -> DataError:
        prefix = f"conv_id {self.conv_id!r}: " if self.conv_id else ""
        return DataError(prefix + message, path=str(self.path), record=self.number, field=field)

    def mapping(self, value: Any, where: str | None) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.error(f"expected a JSON object, got {_kind(value)}", where)
        return value


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _number(record: _RunRecord, value: Any, where: str) -> float | None:
    """A finite number, or None for JSON null; anything else is an error naming the field."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise record.error(f"expected a number or null, got {value!r}", where)
    if not math.isfinite(value):
        raise record.error(f"expected a finite number, got {value!r}", where)
    return float(value)


def _turn_index(record: _RunRecord, value: Any, where: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise record.error(f"expected a non-negative integer turn index, got {value!r}", where)
    return value


def _aspect_values(
    record: _RunRecord, preds: Mapping[str, Any], where: str, level: str, notes: Counter[str]
) -> dict[str, float | None]:
    """Canonical aspect -> value of one prediction object; unusable keys go to `notes`."""
    out: dict[str, float | None] = {}
    spelled: dict[str, str] = {}
    for name, raw in preds.items():
        value = _number(record, raw, f"{where}.{name}")
        aspect = canonical_aspect(name)
        if aspect is None:
            notes[f"unknown {level}-level aspect {name!r} (ignored)"] += 1
            continue
        if level_of(aspect) != level:
            notes[f"{level}-level prediction of {level_of(aspect)}-level aspect {name!r} (ignored)"] += 1
            continue
        if aspect in out and out[aspect] != value:
            raise record.error(
                f"{name!r} and {spelled[aspect]!r} both give {aspect} with different values",
                f"{where}.{name}",
            )
        out[aspect] = value
        spelled[aspect] = name
    return out


def _read_record(record: _RunRecord, predictions: Predictions, seen: dict[str, int]) -> None:
    data = record.mapping(record.data, None)
    if "conv_id" not in data:
        raise record.error("missing", "conv_id")
    conv_id = data["conv_id"]
    if not isinstance(conv_id, str) or not conv_id:
        raise record.error(f"expected a non-empty string, got {_kind(conv_id)}", "conv_id")
    record.conv_id = conv_id
    if conv_id in seen:
        raise record.error(f"conversation already given in record {seen[conv_id]}", "conv_id")
    seen[conv_id] = record.number
    for name in data:
        if name not in _RECORD_FIELDS:
            predictions.notes[f"unknown record field {name!r} (ignored)"] += 1
    turns = data.get("turns", [])
    if not isinstance(turns, list):
        raise record.error(f"expected a list of turns, got {_kind(turns)}", "turns")
    done_turns: set[int] = set()
    for position, turn in enumerate(turns):
        where = f"turns[{position}]"
        turn_data = record.mapping(turn, where)
        if "turn_ind" not in turn_data:
            raise record.error("missing", f"{where}.turn_ind")
        turn_ind = _turn_index(record, turn_data["turn_ind"], f"{where}.turn_ind")
        if turn_ind in done_turns:
            raise record.error(f"turn index {turn_ind} given twice", f"{where}.turn_ind")
        done_turns.add(turn_ind)
        for name in turn_data:
            if name not in _TURN_FIELDS:
                predictions.notes[f"unknown turn field {name!r} (ignored)"] += 1
        preds = record.mapping(turn_data.get("turn_level_pred", {}), f"{where}.turn_level_pred")
        values = _aspect_values(record, preds, f"{where}.turn_level_pred", "turn", predictions.notes)
        for aspect, value in values.items():
            predictions.add((conv_id, turn_ind, aspect), value, NULL_VALUE)
    dial = record.mapping(data.get("dial_level_pred", {}), "dial_level_pred")
    for aspect, value in _aspect_values(
        record, dial, "dial_level_pred", "dialogue", predictions.notes
    ).items():
        predictions.add((conv_id, None, aspect), value, NULL_VALUE)


def read_run_file(path: str | Path) -> Predictions:
    """Predictions from a run file (plain or .gz); the first malformed record raises `DataError`."""
    path = Path(path)
    if not path.is_file():
        raise DataError("not found; expected a run file (JSON array of predictions)", path=str(path))
    data = read_json(path)
    if not isinstance(data, list):
        raise DataError(f"expected a JSON array of records, got {_kind(data)}", path=str(path))
    predictions = Predictions(source=str(path))
    seen: dict[str, int] = {}
    for number, raw in enumerate(data, start=1):
        _read_record(_RunRecord(path, number, raw), predictions, seen)
    return predictions


def run_file_records(predictions: Predictions, order: list[str] | None = None) -> list[dict[str, Any]]:
    """The predictions in run file form (missing values left out), conversations in `order` (each
    listed, with empty predictions if it has none), then any others sorted."""
    by_conv: dict[str, dict[str, Any]] = {
        conv_id: {"conv_id": conv_id, "turns": {}, "dial_level_pred": {}} for conv_id in order or []
    }
    for (conv_id, turn_ind, aspect), value in predictions.values.items():
        record = by_conv.setdefault(conv_id, {"conv_id": conv_id, "turns": {}, "dial_level_pred": {}})
        if value is None:
            continue
        name = "dialogue_overall" if aspect == "overall" else aspect
        if turn_ind is None:
            record["dial_level_pred"][name] = value
        else:
            record["turns"].setdefault(turn_ind, {})[name] = value
    first = list(dict.fromkeys(order or []))
    ordered = first + sorted(set(by_conv) - set(first))
    out = []
    for conv_id in ordered:
        record = by_conv[conv_id]
        turns = [
            {"turn_ind": ind, "turn_level_pred": {a: preds[a] for a in TURN_ASPECTS if a in preds}}
            for ind, preds in sorted(record["turns"].items())
        ]
        out.append({"conv_id": conv_id, "turns": turns, "dial_level_pred": record["dial_level_pred"]})
    return out


def write_run_file(predictions: Predictions, path: str | Path, order: list[str] | None = None) -> None:
    """Write a run file that `read_run_file` (and FACE's own eval script) reads back; atomic."""
    path = Path(path)
    with atomic_output(path) as handle:
        json.dump(run_file_records(predictions, order), handle, indent=1)
        handle.write("\n")
