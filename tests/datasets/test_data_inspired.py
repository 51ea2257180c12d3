"""INSPIRED converter on the real files: original TSV and the processed 801/99/99 split."""

from __future__ import annotations

import csv
import gzip
import io
import json
from itertools import groupby
from pathlib import Path
from typing import Any

import pytest

from crsim.core.errors import DataError
from crsim.datasets.base import ConversionReport, convert_dataset
from crsim.datasets.inspired import STRATEGY_INTENTS, InspiredReader
from crsim.model.dialogue import Dialogue, Role
from crsim.model.mentions import named_items

INSPIRED = Path(__file__).parents[1] / "fixtures" / "inspired"
ORIGINAL, PROCESSED = INSPIRED / "original", INSPIRED / "processed"


def _convert(src: Path, skip: bool = False, **params: Any) -> tuple[list[Dialogue], ConversionReport]:
    report = ConversionReport()
    reader = InspiredReader(InspiredReader.Params(**params))
    return list(convert_dataset(reader, src, skip_invalid=skip, report=report)), report


def _tsv_rows(name: str) -> list[dict[str, str]]:
    text = gzip.decompress((ORIGINAL / f"{name}.tsv.gz").read_bytes()).decode("utf-8")
    return list(csv.DictReader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE))


def _processed(name: str) -> list[list[dict[str, Any]]]:
    with gzip.open(PROCESSED / f"{name}_data_dbpedia.jsonl.gz", "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


@pytest.fixture(scope="module")
def original() -> list[Dialogue]:
    return _convert(ORIGINAL)[0]


@pytest.fixture(scope="module")
def processed() -> list[Dialogue]:
    return _convert(PROCESSED)[0]


def test_original_counts(original: list[Dialogue]) -> None:
    dialogues = utterances = 0
    for name in ("dev", "test"):
        for _, rows in groupby(_tsv_rows(name), key=lambda r: r["dialog_id"]):
            dialogues += 1
            utterances += len(list(groupby(r["speaker"] for r in rows)))
    assert len(original) == dialogues == 198
    assert sum(len(d.utterances) for d in original) == utterances
    assert [d.metadata["split"] for d in original].count("dev") == 99


def test_processed_counts(processed: list[Dialogue]) -> None:
    raw = {name: _processed(name) for name in ("train", "valid", "test")}
    assert [len(raw[n]) for n in ("train", "valid", "test")] == [801, 99, 99]
    assert len(processed) == 999
    expected = sum(len(list(groupby(t["role"] for t in d))) for dialogues in raw.values() for d in dialogues)
    assert sum(len(d.utterances) for d in processed) == expected


def test_original_first_dialogue(original: list[Dialogue]) -> None:
    dialogue = original[0]
    assert dialogue.id == "inspired/dev/20191202-103716_425_live.pkl"
    first = dialogue.utterances[0]
    assert (first.role, first.text) == (Role.CRS, "Hello how are you today?")
    assert first.annotations["labels"] == {"strategy": ["no_strategy"]}
    assert dialogue.metadata["fine_label"] == "accept_rating_good"
    assert dialogue.metadata["movie_id"] == "Ks_MbPPkhmA"
    assert dialogue.utterances[2].acts[0].intent == "elicit"  # opinion_inquiry
    quoted = dialogue.utterances[9]
    assert quoted.role == Role.USER and '"future"' in quoted.text
    assert any("QUOTATION_MARKfutureQUOTATION_MARK" in s["text"] for s in quoted.annotations["sentences"])
    assert quoted.mentioned_items == ["The Future (2011)"]
    rec = dialogue.utterances[12]
    assert rec.text == "Full Metal Jacket" and rec.recommended_items == ["Full Metal Jacket (1987)"]
    assert rec.mentioned_items == []  # recommended, so not also mentioned
    assert [a.intent for a in rec.acts] == ["other", "recommend"]


def test_sentences_are_merged_like_the_processed_files(original: list[Dialogue]) -> None:
    """Both forms of the test split start with the same dialogue; merging must agree."""
    tsv = next(d for d in original if d.metadata["split"] == "test")
    raw = _processed("test")[0]
    assert [u.text for u in tsv.utterances[:3]] == [t["text"] for t in raw[:3]]
    assert len(tsv.utterances[0].annotations["sentences"]) == 2


def test_labels_kept_and_mapped(original: list[Dialogue]) -> None:
    for dialogue in original:
        for utterance in dialogue.utterances:
            labels = utterance.annotations.get("labels", {}).get("strategy", [])
            if utterance.role == Role.USER:
                assert not labels and not utterance.recommended_items
            mapped = {STRATEGY_INTENTS[label] for label in labels}
            assert mapped == {a.intent for a in utterance.acts if a.intent != "recommend"}


def test_processed_spot_checks(processed: list[Dialogue]) -> None:
    test = [d for d in processed if d.metadata["split"] == "test"]
    first = test[0]
    assert first.id == "inspired/test/1"
    assert (first.utterances[0].role, first.utterances[0].text) == (
        Role.CRS,
        "Hi! I'm here to help you chose a movie!",
    )
    assert first.utterances[3].mentioned_items == ["Hustlers (2019)"]
    assert first.utterances[3].annotations["entities"][0]["movie_link"] == [
        "<http://dbpedia.org/resource/Hustlers_(film)>"
    ]
    assert first.utterances[3].recommended_items == []  # the seeker named it


def test_items_and_round_trip(original: list[Dialogue], processed: list[Dialogue]) -> None:
    items = InspiredReader(InspiredReader.Params()).items(ORIGINAL)
    hustlers = items["Hustlers (2019)"]
    assert (hustlers.title, hustlers.year) == ("Hustlers", 2019)
    mentioned = {m for d in original for u in d.utterances for m in named_items(u)}
    assert mentioned == set(items.ids)
    for dialogue in original[:50] + processed[:50]:
        assert Dialogue.model_validate_json(dialogue.model_dump_json()) == dialogue


def test_version_choice(tmp_path: Path) -> None:
    for path in (*ORIGINAL.iterdir(), *PROCESSED.iterdir()):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    assert len(_convert(tmp_path)[0]) == 198  # auto prefers the original files
    assert len(_convert(tmp_path, version="processed")[0]) == 999
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no INSPIRED file"):
        _convert(tmp_path / "empty")


# --- bad input ---------------------------------------------------------------------------------


def _tsv_lines(count: int) -> list[str]:
    text = gzip.decompress((ORIGINAL / "dev.tsv.gz").read_bytes()).decode("utf-8")
    return text.splitlines(keepends=True)[:count]


def test_bad_tsv_rows(tmp_path: Path) -> None:
    lines = _tsv_lines(60)
    fields = lines[3].split("\t")
    fields[2] = "NARRATOR"  # a wrong speaker in row 4 of the first dialogue
    lines[3] = "\t".join(fields)
    lines[30] = "\t".join(lines[30].split("\t")[:5]) + "\n"  # a row with missing columns
    path = tmp_path / "dev.tsv"
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(DataError) as info:
        _convert(path)
    assert (info.value.record, info.value.field) == (4, "speaker")
    dialogues, report = _convert(path, skip=True)
    assert report.skipped == 2 and "record 31" in report.errors[1]
    assert len(dialogues) == len({line.split("\t")[0] for line in lines[1:]}) - 1


def test_wrong_header_and_non_utf8(tmp_path: Path) -> None:
    lines = _tsv_lines(10)
    path = tmp_path / "test.tsv"
    path.write_text(lines[0].replace("speaker", "who"), encoding="utf-8")
    with pytest.raises(DataError, match="missing column"):
        _convert(path)
    path.write_bytes("".join(lines[:5]).encode() + b"x\t\xff\n" + "".join(lines[5:]).encode())
    with pytest.raises(DataError, match="not UTF-8") as info:
        _convert(path)
    assert info.value.record == 6


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[]", "at least one turn"),
        ('[{"role": "SEEKER", "text": "hi"}]', "missing"),
        ('[{"role": "BOT", "text": "hi", "movie": []}]', "SEEKER or RECOMMENDER"),
        ('[{"role": "SEEKER", "text": "hi", "movie": [3]}]', "movie titles"),
        ('[{"role": "SEEKER", "text": "hi", "movie": []}', "not valid JSON"),
    ],
)
def test_bad_processed_lines(tmp_path: Path, line: str, message: str) -> None:
    good = gzip.decompress((PROCESSED / "test_data_dbpedia.jsonl.gz").read_bytes()).decode().splitlines()[0]
    path = tmp_path / "test_data_dbpedia.jsonl"
    path.write_text(f"{good}\n{line}\n{good}\n", encoding="utf-8")
    with pytest.raises(DataError, match=message) as info:
        _convert(path)
    assert info.value.record == 2 and info.value.path == str(path)
    dialogues, report = _convert(path, skip=True)
    assert len(dialogues) == 2 and report.skipped == 1
