"""`scores.jsonl` and the record types of an evaluation: score records, aggregates, group summaries.

These are the records `crsim evaluate` writes and reports, dataframes and comparisons read; they live
in the model layer so that readers need not import the evaluation code. `crsim.eval.scores` and
`crsim.eval.stats` re-export them under their old names.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from pydantic import BaseModel, Field
from pydantic_core import to_json

from crsim.core.errors import DataError
from crsim.core.jsonl import Unreadable, jsonl_records
from crsim.core.secrets import redact_json_lines
from crsim.model.run_folder.files import part_path

#: The percentile bootstrap of the mean, resampling the values (dialogues) with replacement.
DIALOGUE_BOOTSTRAP = "percentile bootstrap over dialogues"
#: The cluster bootstrap: distinct users resampled with replacement, each with all of its values.
USER_BOOTSTRAP = "percentile cluster bootstrap over users"


class Aggregate(BaseModel):
    """Summary of one metric over a population; `missing` values (None) are excluded from all stats."""

    mean: float | None = Field(description="Mean of the present values; None when there are none.")
    std: float | None = Field(description="Sample standard deviation (ddof=1); None for fewer than 2 values.")
    ci_low: float | None = Field(
        description="Lower end of the percentile-bootstrap interval; None when too few values for one."
    )
    ci_high: float | None = Field(description="Upper end of the percentile-bootstrap interval (see ci_low).")
    n: int = Field(description="Number of present values.")
    missing: int = Field(description="Number of values that were None (not applicable or failed).")
    not_evaluable: int = Field(
        0,
        description="Dialogues left out because the simulator or the infrastructure broke them: "
        "neither in n nor missing (n + missing + not_evaluable = dialogues).",
    )
    confidence: float = 0.95
    method: str | None = Field(
        None,
        description=f"How the interval was computed: {DIALOGUE_BOOTSTRAP!r} or {USER_BOOTSTRAP!r}; "
        "None when there is no interval (or in summaries written before crsim recorded it).",
    )
    clusters: int | None = Field(
        None, description="Distinct users among the present values; None when the users are unknown."
    )
    resamples: int | None = Field(None, description="Bootstrap resamples behind the interval.")
    seed: int | None = Field(None, description="Seed of the bootstrap's random draws.")


class ScoreRecord(BaseModel):
    """One metric's value for one dialogue; value None means missing (see `missing_reason`/`error`)."""

    dialogue_id: str
    crs_id: str | None
    simulator_id: str | None
    termination: str | None = Field(None, description="Why the dialogue ended; None if not recorded.")
    metric: str = Field(description="The metric's label, unique within one evaluation.")
    value: float | None
    missing_reason: str | None = Field(
        None, description="Why value is None: the metric does not apply, or 'error: <type>' when it raised."
    )
    error: str | None = Field(None, description="The failure, when computing the metric raised.")
    turn: int | None = Field(
        None, description="For turn-level values: the turn t (1-based); None for dialogue-level values."
    )
    explanation: str | None = Field(None, description="A judge's justification of the value.")
    raw: str | None = Field(None, description="A model's unreadable answer, kept when value is None.")
    annotator: str | None = Field(
        None, description="The act annotator that filled in acts this dialogue lacked, if any."
    )
    llm_judged: bool = Field(
        False,
        description="True when a language model gave the value (an LLM judge), not a formula.",
    )


class GroupSummary(BaseModel):
    """Aggregates for one (CRS, simulator) pair."""

    crs_id: str | None
    simulator_id: str | None
    n_dialogues: int
    n_evaluable: int | None = Field(
        None,
        description="Dialogues the CRS metrics count: all but those the simulator or the "
        "infrastructure broke (None in summaries written before crsim attributed failures).",
    )
    n_users: int | None = Field(
        None,
        description="Distinct simulated users among the dialogues (a reused user, 'ml-7#2', is the "
        "user 'ml-7'); None when the dialogues were not available.",
    )
    terminations: dict[str, int] = Field(description="Dialogues per termination reason.")
    faults: dict[str, int] = Field(
        default_factory=dict,
        description="Fault ('crs', 'user', 'infrastructure') -> dialogues that did not end normally "
        "and are charged to it.",
    )
    metrics: dict[str, Aggregate] = Field(description="Metric label -> aggregate over the dialogues.")
    errors: dict[str, int] = Field(
        default_factory=dict,
        description="Error kind ('source: ExceptionType') -> dialogues that ended with it.",
    )
    error_examples: dict[str, str] = Field(
        default_factory=dict, description="Error kind -> the message of its first occurrence."
    )
    missing_reasons: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="Metric label -> reason -> dialogues missing for that reason."
    )
    annotated: dict[str, int] = Field(
        default_factory=dict, description="Act annotator -> dialogues whose missing acts it filled in."
    )
    ambiguous_links: int | None = Field(
        None,
        description="Titles in the CRS's text linked to one of several catalogue items the text names "
        "equally (utterance annotation `ambiguous_links`); None when the dialogues were not available.",
    )


def write_scores(records: Iterable[ScoreRecord], path: str | Path) -> None:
    """JSON Lines, one record per dialogue and metric; replaces `path` only once all are written."""
    _write_atomic(Path(path), _redacted_lines(records))


class ScoresAppender:
    """Appends to an open scores file: `append(records)` for score records, `append.lines(text)` for
    lines made by `score_line`; both redacted as `write_scores` redacts."""

    def __init__(self, handle: TextIO) -> None:
        self._handle = handle

    def __call__(self, records: Iterable[ScoreRecord]) -> None:
        self._handle.writelines(_redacted_lines(records))

    def lines(self, text: str, *, redacted: bool = False) -> None:
        """Lines (each ending in a newline) that `score_line` made; `redacted`: the caller redacted
        them already (checked part by part, `crsim.core.secrets.secret_check`)."""
        if text:
            self._handle.write(text if redacted else redact_json_lines(text))


@contextmanager
def scores_writer(path: str | Path) -> Iterator[ScoresAppender]:
    """`write(records)` (and `write.lines(text)`) appends JSON Lines to a temporary file that replaces
    `path` only when the block completes, so scores can be written batch by batch and a failure keeps
    the old file."""
    path = Path(path)
    temp = part_path(path)
    try:
        with temp.open("w", encoding="utf-8", newline="\n") as handle:
            yield ScoresAppender(handle)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def _redacted_lines(records: Iterable[ScoreRecord], batch: int = 1000) -> Iterator[str]:
    """JSON Lines of `records`, redacted (error texts quote servers) a batch at a time: the check for
    secrets is one search per batch, not per line."""
    lines: list[str] = []
    for record in records:
        lines.append(record.model_dump_json() + "\n")
        if len(lines) >= batch:
            yield redact_json_lines("".join(lines))
            lines.clear()
    if lines:
        yield redact_json_lines("".join(lines))


def json_string(text: str | None) -> str:
    """`text` as pydantic writes it in JSON (`null` for None): quoted as it is when it is printable
    ASCII without quotes or backslashes, else through pydantic's own serializer."""
    if text is None:
        return "null"
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    return to_json(text).decode()


def json_float(value: float | None) -> str:
    """`value` as pydantic writes it in JSON: Python's `repr` where the two agree (0 and magnitudes
    from 1e-4 to below 1e16; pydantic writes 1e-5 as 0.00001), else pydantic's own serializer."""
    if value is None:
        return "null"
    if value == 0.0 or 1e-4 <= abs(value) < 1e16:
        return repr(value)
    return to_json(value).decode()


#: The fields `score_line` is given, in `ScoreRecord`'s order; the others are written at their defaults.
LINE_FIELDS = (
    "dialogue_id", "crs_id", "simulator_id", "termination", "metric", "value", "missing_reason", "error",
)  # fmt: skip
if tuple(ScoreRecord.model_fields)[: len(LINE_FIELDS)] != LINE_FIELDS:  # the lines follow the model
    raise RuntimeError("ScoreRecord's fields changed: update `score_line`")
_LINE_TAIL = (
    "".join(
        f',"{name}":{to_json(info.default).decode()}'
        for name, info in ScoreRecord.model_fields.items()
        if name not in LINE_FIELDS
    )
    + "}\n"
)


_PRESENT_TAIL = ',"missing_reason":null,"error":null' + _LINE_TAIL


def line_head(dialogue_id: str, crs_id: str | None, simulator_id: str | None, termination: str | None) -> str:
    """The start of every `score_line` of one dialogue, up to the metric's label."""
    return (
        f'{{"dialogue_id":{json_string(dialogue_id)},"crs_id":{json_string(crs_id)},'
        f'"simulator_id":{json_string(simulator_id)},"termination":{json_string(termination)},"metric":'
    )


def metric_part(metric: str) -> str:
    """What follows `line_head` in every `score_line` of one metric, up to its value."""
    return f'{json_string(metric)},"value":'


def score_line(
    head: str, metric: str, value: float | None, missing_reason: str | None, error: str | None
) -> str:
    """The line `ScoreRecord(...).model_dump_json()` writes (with a newline) for a dialogue-level record
    of these fields and defaults elsewhere, without building the record; `head` is `line_head` of the
    dialogue and `metric` the `metric_part` of the metric's label. An evaluation writes one per
    dialogue and metric."""
    if missing_reason is None and error is None:
        return f"{head}{metric}{json_float(value)}{_PRESENT_TAIL}"
    return (
        f'{head}{metric}{json_float(value)},"missing_reason":{json_string(missing_reason)},'
        f'"error":{json_string(error)}{_LINE_TAIL}'
    )


def _write_atomic(path: Path, chunks: Iterable[str]) -> None:
    """Write through a temporary file renamed into place: an interrupted write keeps the old file."""
    temp = part_path(path)
    try:
        with temp.open("w", encoding="utf-8", newline="\n") as handle:
            for chunk in chunks:
                handle.write(chunk)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def iter_scores(path: str | Path, bad: list[Unreadable] | None = None) -> Iterator[ScoreRecord]:
    """The records of a scores file, streamed: the one reader of `scores.jsonl`. Strict with `bad`
    None (a bad line is a DataError naming the file, the record and the field); lenient otherwise (a
    bad line is appended to `bad`, located, and skipped). A missing file is a DataError."""
    path = Path(path)
    if not path.is_file():
        raise DataError("file not found; expected scores written by `crsim evaluate`", path=str(path))
    return jsonl_records(path, ScoreRecord.model_validate_json, bad)


def read_scores(path: str | Path, bad: list[Unreadable] | None = None) -> list[ScoreRecord]:
    """Every record of a scores file (strict or lenient, as `iter_scores`)."""
    return list(iter_scores(path, bad))
