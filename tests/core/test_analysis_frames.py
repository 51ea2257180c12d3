"""crsim.report.dataframes dataframes and `crsim export` on a small real run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.core.errors import ConfigError, DataError
from crsim.eval.scores import default_metrics
from crsim.model.io import iter_dialogues
from crsim.report.dataframes import dialogues_df, scores_df, utterances_df
from report_support import small_run

pd = pytest.importorskip("pandas", reason="dataframes need the `analysis` extra")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_run(tmp_path_factory.mktemp("frames") / "run", users=4, crss=["popular", "retrieval"])


def test_frames_match_the_records(run_dir: Path) -> None:
    dialogues = list(iter_dialogues(run_dir / "dialogues.jsonl"))
    frame = dialogues_df(run_dir)
    assert list(frame["dialogue_id"]) == [d.id for d in dialogues]
    assert list(frame["turns"]) == [d.num_turns for d in dialogues]
    assert set(frame["crs_id"]) == {"popular", "retrieval"}
    assert frame["termination"].notna().all()
    utterances = utterances_df(run_dir)
    assert len(utterances) == sum(len(d.utterances) for d in dialogues)
    first = utterances[utterances["dialogue_id"] == dialogues[0].id]
    assert list(first["text"]) == [u.text for u in dialogues[0].utterances]
    crs = first[first["role"] == "crs"]
    assert any(len(items) for items in crs["recommended_items"])
    user = first[first["role"] == "user"].iloc[0]
    assert json.loads(user["annotations"]) == dialogues[0].utterances[1].annotations
    scores = scores_df(run_dir)
    assert len(scores) == len(default_metrics()) * len(dialogues)
    wide = scores[scores["turn"].isna()].pivot(index="dialogue_id", columns="metric", values="value")
    assert list(wide.loc[dialogues[0].id, ["Turns"]]) == [dialogues[0].num_turns]


def test_mentioned_items_beside_recommended_ones(run_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    records = [
        json.loads(line) for line in (run / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    crs_turn = next(u for u in records[1]["utterances"] if u["role"] == "crs" and u["recommended_items"])
    crs_turn["mentioned_items"] = ["1", "2"]  # what a CRS answering about earlier items records
    (run / "dialogues.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    dialogues = list(iter_dialogues(run / "dialogues.jsonl"))
    utterances = utterances_df(run)
    columns = list(utterances.columns)
    assert columns.index("mentioned_items") == columns.index("recommended_items") + 1
    assert list(utterances["mentioned_items"]) == [u.mentioned_items for d in dialogues for u in d.utterances]
    assert sum(len(items) for items in utterances["mentioned_items"]) == 2
    per_dialogue = [sum(len(u.mentioned_items) for u in d.utterances if u.role == "crs") for d in dialogues]
    assert list(dialogues_df(run)["mentioned_items"]) == per_dialogue and per_dialogue[1] == 2
    out = tmp_path / "csv"
    assert CliRunner().invoke(app, ["export", str(run), "--format", "csv", "-o", str(out)]).exit_code == 0
    csv = pd.read_csv(out / "utterances.csv")
    assert [json.loads(v) for v in csv["mentioned_items"]] == list(utterances["mentioned_items"])


def test_export_parquet_and_csv(run_dir: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["export", str(run_dir), "-o", str(tmp_path / "pq")])
    assert result.exit_code == 0, result.output
    frame = pd.read_parquet(tmp_path / "pq" / "utterances.parquet")
    assert list(frame.columns) == list(utterances_df(run_dir).columns)
    assert len(pd.read_parquet(tmp_path / "pq" / "scores.parquet")) == len(scores_df(run_dir))
    result = runner.invoke(app, ["export", str(run_dir), "--format", "csv", "-o", str(tmp_path / "csv")])
    assert result.exit_code == 0, result.output
    csv = pd.read_csv(tmp_path / "csv" / "dialogues.csv")
    assert list(csv["dialogue_id"]) == list(dialogues_df(run_dir)["dialogue_id"])
    bad = runner.invoke(app, ["export", str(run_dir), "--format", "xlsx"])
    assert bad.exit_code == 2 and "--format: unknown format 'xlsx'" in bad.output


def test_bad_input_names_file_record_and_field(run_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"no manifest\.json"):
        dialogues_df(tmp_path)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text((run_dir / "manifest.json").read_text())
    lines = (run_dir / "dialogues.jsonl").read_text().splitlines()
    (broken / "dialogues.jsonl").write_text(lines[0] + "\n{not json\n")
    with pytest.raises(DataError, match=r"dialogues.jsonl, record 2"):
        utterances_df(broken)
    result = CliRunner().invoke(app, ["export", str(broken)])
    assert result.exit_code == 2 and "record 2" in result.output


@pytest.mark.parametrize("frame", [dialogues_df, utterances_df, scores_df])
def test_frames_read_in_chunks_are_the_whole_frame(run_dir: Path, frame: Any) -> None:
    whole = frame(run_dir)
    chunks = list(frame(run_dir, chunksize=7))
    assert len(chunks) == -(-len(whole) // 7) and all(len(c) <= 7 for c in chunks)
    assert all(list(c.columns) == list(whole.columns) for c in chunks)
    joined = pd.concat(chunks, ignore_index=True)

    # pandas infers a text column's dtype from the values it sees: a chunk whose column is all None
    # keeps `object` (and None where the whole frame's string column has NaN); the values are equal
    def plain(df: Any) -> Any:
        return df.astype(object).where(df.notna(), None)

    pd.testing.assert_frame_equal(plain(joined), plain(whole))
    with pytest.raises(ConfigError, match="chunksize"):
        frame(run_dir, chunksize=0)


def test_an_empty_run_gives_one_empty_chunk_with_the_columns(run_dir: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    shutil.copytree(run_dir, empty)
    (empty / "dialogues.jsonl").write_text("", encoding="utf-8")
    (chunk,) = list(dialogues_df(empty, chunksize=5))
    assert chunk.empty and list(chunk.columns) == list(dialogues_df(run_dir).columns)
