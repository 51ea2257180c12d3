"""A run folder as pandas dataframes, for notebooks, and `crsim export` to Parquet or CSV.

    from crsim.report.dataframes import dialogues_df, utterances_df, scores_df
    dialogues = dialogues_df("runs/quickstart-20260101-120000")

Each of `dialogues_df`, `utterances_df` and `scores_df` also reads a run in chunks: with
`chunksize=N` it returns an iterator of frames of at most N rows each (the same rows and columns, in
the same order, as the whole frame), so a run of a million dialogues fits in memory:

    for chunk in scores_df(run, chunksize=100_000):
        ...

`dialogues_df` has one row per dialogue, `utterances_df` one per utterance, `scores_df` one per line of
`scores.jsonl` (one per dialogue and metric, or per turn for turn-level aspects), `comparisons_df` one
per simulator, metric and pair of CRSs (paired differences and tests, docs/compare.md). `evaluable` says
whether the CRS metrics count a dialogue (not when the simulator or the infrastructure broke it),
`fault` whose fault a failed dialogue was, and `source_user_id` the distinct user behind a reused one.
Columns that hold free-form structures (annotations, metadata, information needs) are JSON text,
so every frame has a fixed set of columns whatever the simulators put there. Needs the `analysis` extra
(`pip install 'crsim[analysis]'`: pandas, and pyarrow for Parquet).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from crsim.core.errors import ConfigError
from crsim.core.secrets import redactor
from crsim.model import annotations as keys
from crsim.model.acts import format_acts
from crsim.model.dialogue import Dialogue, Role
from crsim.model.run_folder.files import part_path
from crsim.model.run_folder.folder import RunFolder, open_run
from crsim.model.user import source_user_id
from crsim.studies.compare import PairResult

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["comparisons_df", "dialogues_df", "export_run", "scores_df", "utterances_df"]

ExportFormat = Literal["parquet", "csv"]


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise ConfigError("dataframes need pandas: pip install 'crsim[analysis]'") from None
    return pandas


def _folder(run: str | Path | RunFolder) -> RunFolder:
    return run if isinstance(run, RunFolder) else open_run(Path(run))


def _json(value: Any) -> str | None:
    if value is None or value == {} or value == []:
        return None
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _dialogue_row(dialogue: Dialogue) -> dict[str, Any]:
    termination = dialogue.termination
    error = termination.error if termination else None
    need = dialogue.information_need
    crs_turns = dialogue.by(Role.CRS)
    return {
        "dialogue_id": dialogue.id,
        "crs_id": dialogue.crs_id,
        "simulator_id": dialogue.simulator_id,
        "user_id": dialogue.user_id,
        "source_user_id": source_user_id(dialogue.user_id) if dialogue.user_id else None,
        "termination": termination.reason.value if termination else None,
        "fault": termination.fault.value if termination and termination.fault else None,
        "evaluable": dialogue.evaluable,
        "error_source": error.source if error else None,
        "error_type": error.type if error else None,
        "error_message": error.message if error else None,
        "turns": dialogue.num_turns,
        "utterances": len(dialogue.utterances),
        "recommendations": sum(1 for u in crs_turns if u.recommended_items),
        "recommended_items": sum(len(u.recommended_items) for u in crs_turns),
        "mentioned_items": sum(len(u.mentioned_items) for u in crs_turns),
        "targets": len(need.targets) if need else 0,
        "trial": keys.metadata(keys.TRIAL, dialogue) or 0,
        "seed": keys.metadata(keys.SEED, dialogue),
        "started_at": dialogue.timing.started_at if dialogue.timing else None,
        "duration_s": dialogue.timing.duration_s if dialogue.timing else None,
        "llm_calls": sum(u.calls for u in dialogue.llm_usage.values()),
        "llm_prompt_tokens": sum(u.prompt_tokens for u in dialogue.llm_usage.values()),
        "llm_completion_tokens": sum(u.completion_tokens for u in dialogue.llm_usage.values()),
        "information_need": _json(need.model_dump(mode="json") if need else None),
        "metadata": _json(dialogue.metadata),
    }


def _dialogue_facts(dialogue: Dialogue) -> dict[str, Any]:
    """What a score row borrows from its dialogue: the distinct user, the fault and evaluability."""
    fault = dialogue.termination.fault if dialogue.termination else None
    return {
        "source_user_id": source_user_id(dialogue.user_id) if dialogue.user_id else None,
        "fault": fault.value if fault else None,
        "evaluable": dialogue.evaluable,
    }


def _utterance_rows(dialogue: Dialogue) -> Iterator[dict[str, Any]]:
    turn = 0
    for index, utterance in enumerate(dialogue.utterances):
        if utterance.role is Role.USER:
            turn += 1
        yield {
            "dialogue_id": dialogue.id,
            "crs_id": dialogue.crs_id,
            "simulator_id": dialogue.simulator_id,
            "index": index,
            "turn": max(turn, 1),
            "role": utterance.role.value,
            "text": utterance.text,
            "acts": format_acts(utterance.acts) if utterance.acts else None,
            "intents": [a.intent for a in utterance.acts],
            "recommended_items": list(utterance.recommended_items),
            "mentioned_items": list(utterance.mentioned_items),
            "shown_items": list(utterance.shown_items),
            "annotations": _json(utterance.annotations),
            "llm_calls": len(utterance.llm_calls),
        }


def _row_batches(rows: Iterable[dict[str, Any]], chunksize: int) -> Iterator[list[dict[str, Any]]]:
    """Lists of at most `chunksize` rows, in order; one empty list when there are no rows (so that a
    reader of the chunks always gets a frame with the columns)."""
    if chunksize < 1:
        raise ConfigError(f"chunksize must be at least 1, got {chunksize}")
    return _batched(iter(rows), chunksize)


def _batched(rows: Iterator[dict[str, Any]], chunksize: int) -> Iterator[list[dict[str, Any]]]:
    batch = list(islice(rows, chunksize))
    yield batch
    while batch := list(islice(rows, chunksize)):
        yield batch


def _frames(rows: Iterable[dict[str, Any]], columns: list[str], chunksize: int) -> Iterator[pd.DataFrame]:
    pandas = _pandas()
    return (pandas.DataFrame(batch, columns=columns) for batch in _row_batches(rows, chunksize))


_DIALOGUE_COLUMNS = list(_dialogue_row(Dialogue(id="-")).keys())


@overload
def dialogues_df(run: str | Path | RunFolder, *, chunksize: None = None) -> pd.DataFrame: ...
@overload
def dialogues_df(run: str | Path | RunFolder, *, chunksize: int) -> Iterator[pd.DataFrame]: ...
def dialogues_df(
    run: str | Path | RunFolder, *, chunksize: int | None = None
) -> pd.DataFrame | Iterator[pd.DataFrame]:
    """One row per dialogue: ids, termination (and error), turns, recommendations, LLM usage. With
    `chunksize`, an iterator of frames of at most that many rows (the dialogues are streamed)."""
    rows = (_dialogue_row(d) for d in _folder(run).dialogues())
    if chunksize is not None:
        return _frames(rows, _DIALOGUE_COLUMNS, chunksize)
    return _pandas().DataFrame(list(rows), columns=_DIALOGUE_COLUMNS)


_UTTERANCE_COLUMNS = [
    "dialogue_id", "crs_id", "simulator_id", "index", "turn", "role", "text", "acts", "intents",
    "recommended_items", "mentioned_items", "shown_items", "annotations", "llm_calls",
]  # fmt: skip


@overload
def utterances_df(run: str | Path | RunFolder, *, chunksize: None = None) -> pd.DataFrame: ...
@overload
def utterances_df(run: str | Path | RunFolder, *, chunksize: int) -> Iterator[pd.DataFrame]: ...
def utterances_df(
    run: str | Path | RunFolder, *, chunksize: int | None = None
) -> pd.DataFrame | Iterator[pd.DataFrame]:
    """One row per utterance: role, text, acts (string form and intents), item lists (recommended,
    mentioned without being recommended, shown), annotations. With `chunksize`, an iterator of frames
    of at most that many rows.

    `turn` is the turn the utterance belongs to (a CRS opening belongs to turn 1).
    """
    rows = (row for d in _folder(run).dialogues() for row in _utterance_rows(d))
    if chunksize is not None:
        return _frames(rows, _UTTERANCE_COLUMNS, chunksize)
    return _pandas().DataFrame(list(rows), columns=_UTTERANCE_COLUMNS)


_SCORE_COLUMNS = [
    "dialogue_id", "crs_id", "simulator_id", "source_user_id", "termination", "fault", "evaluable",
    "metric", "value", "turn", "missing_reason", "error", "explanation", "raw", "annotator",
]  # fmt: skip


def _known_facts(folder: RunFolder) -> dict[str, dict[str, Any]]:
    """Dialogue id -> what its score rows borrow (`_dialogue_facts`); equal facts are one shared dict,
    so a large run costs about one dictionary entry per dialogue."""
    shared: dict[tuple[Any, ...], dict[str, Any]] = {}
    known: dict[str, dict[str, Any]] = {}
    for dialogue in folder.dialogues():
        facts = _dialogue_facts(dialogue)
        known[dialogue.id] = shared.setdefault(tuple(facts.values()), facts)
    return known


def _score_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = _pandas().DataFrame(rows, columns=_SCORE_COLUMNS)
    frame["evaluable"] = frame["evaluable"].astype("boolean")
    frame["turn"] = frame["turn"].astype("Int64")
    frame["value"] = frame["value"].astype("Float64")
    return frame


@overload
def scores_df(run: str | Path | RunFolder, *, chunksize: None = None) -> pd.DataFrame: ...
@overload
def scores_df(run: str | Path | RunFolder, *, chunksize: int) -> Iterator[pd.DataFrame]: ...
def scores_df(
    run: str | Path | RunFolder, *, chunksize: int | None = None
) -> pd.DataFrame | Iterator[pd.DataFrame]:
    """The lines of `scores.jsonl`: one per dialogue and metric (per turn for turn-level aspects), with
    the user, fault and evaluability of their dialogue (None for a dialogue not in the run). With
    `chunksize`, an iterator of frames of at most that many rows (the scores are streamed; the facts
    borrowed from the dialogues are read first, one small entry per dialogue).

    Wide per-dialogue values: `scores_df(run).query("turn.isna()").pivot(index="dialogue_id",
    columns="metric", values="value")`.
    """
    folder = _folder(run)
    if chunksize is not None and chunksize < 1:
        raise ConfigError(f"chunksize must be at least 1, got {chunksize}")
    known = _known_facts(folder)
    unknown = {"source_user_id": None, "fault": None, "evaluable": None}
    rows = ({**record.model_dump(), **known.get(record.dialogue_id, unknown)} for record in folder.scores())
    if chunksize is None:
        return _score_frame(list(rows))
    return (_score_frame(batch) for batch in _row_batches(rows, chunksize))


def comparisons_df(
    runs: str | Path | RunFolder | Sequence[str | Path | RunFolder],
    *,
    baseline: str | None = None,
    metrics: Sequence[str] | None = None,
    detect: float | None = None,
) -> pd.DataFrame:
    """One row per simulator, metric and pair of CRSs (A, B): the paired difference A − B with its
    bootstrap CI over users, the test and its Holm-corrected p-value, the minimum detectable
    difference, pairs dropped, and each CRS's rank and significance group (as `crsim compare`).
    Several runs are compared together (CRS names then end in " [run]")."""
    from crsim.report.compare import compare_folders
    from crsim.studies.compare import ComparisonOptions

    pandas = _pandas()
    many = runs if isinstance(runs, Sequence) and not isinstance(runs, str) else [runs]
    options = ComparisonOptions(baseline=baseline, metrics=list(metrics) if metrics else None, detect=detect)
    found = compare_folders([_folder(run) for run in many], options)
    rows = []
    for result in found.comparison.results:
        ranks = {entry.crs: entry for entry in result.ranking}
        for pair in result.pairs:
            row = {**pair.model_dump(), "direction": result.direction}
            for side, name in (("a", pair.crs_a), ("b", pair.crs_b)):
                row[f"rank_{side}"] = ranks[name].rank if name in ranks else None
                row[f"group_{side}"] = ranks[name].group if name in ranks else None
            rows.append(row)
    columns = [*PairResult.model_fields, "direction", "rank_a", "group_a", "rank_b", "group_b"]
    return pandas.DataFrame(rows, columns=columns)


def verdicts_df(runs: str | Path | RunFolder | Sequence[str | Path | RunFolder]) -> pd.DataFrame:
    """One row per simulator, pair of CRSs (A, B) and metric: the metric's direction, the winner
    (the CRS better by that direction when the Holm-corrected test is significant; empty for a tie
    or a metric without direction), the test it rests on, and the pair's wins/ties across metrics
    (as `crsim compare`'s verdicts)."""
    from crsim.report.compare import compare_folders

    pandas = _pandas()
    many = runs if isinstance(runs, Sequence) and not isinstance(runs, str) else [runs]
    found = compare_folders([_folder(run) for run in many])
    rows = [
        {
            "simulator": v.simulator,
            "crs_a": v.crs_a,
            "crs_b": v.crs_b,
            "wins_a": v.wins_a,
            "wins_b": v.wins_b,
            "ties": v.ties,
            "undirected": v.undirected,
            **entry.model_dump(),
        }
        for v in found.comparison.verdicts
        for entry in v.metrics
    ]
    columns = ["simulator", "crs_a", "crs_b", "wins_a", "wins_b", "ties", "undirected"]
    columns += ["metric", "direction", "winner", "difference", "p_holm", "test"]
    return pandas.DataFrame(rows, columns=columns)


def _redact_frame(frame: pd.DataFrame) -> None:
    """Mask secrets in every text cell (error messages, texts, JSON columns), in place."""
    mask = redactor()
    for column in frame.columns:
        if frame[column].dtype == object or str(frame[column].dtype).startswith("str"):
            frame[column] = frame[column].map(lambda v: mask(v) if isinstance(v, str) else v)


def export_run(run: str | Path | RunFolder, out_dir: str | Path, fmt: ExportFormat = "parquet") -> list[Path]:
    """Write dialogues, utterances and (when evaluated) scores as Parquet or CSV files in `out_dir`."""
    out_dir = Path(out_dir)
    folder = _folder(run)
    if fmt not in ("parquet", "csv"):
        raise ConfigError(f"--format: unknown format {fmt!r}; expected parquet or csv")
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ConfigError("Parquet needs pyarrow: pip install 'crsim[analysis]'") from None
    frames = {"dialogues": dialogues_df(folder), "utterances": utterances_df(folder)}
    if folder.scores_path.is_file():
        frames["scores"] = scores_df(folder)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in frames.items():
        _redact_frame(frame)
        path = out_dir / f"{name}.{fmt}"
        temp = part_path(path)
        if fmt == "parquet":
            frame.to_parquet(temp, index=False)
        else:
            for column in ("intents", "recommended_items", "mentioned_items", "shown_items"):
                if column in frame:
                    frame[column] = frame[column].map(json.dumps)
            frame.to_csv(temp, index=False)
        temp.replace(path)
        written.append(path)
    return written
