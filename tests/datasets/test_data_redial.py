"""ReDial converter on the real files: counts, spot checks, round trip and bad input."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from itertools import groupby
from pathlib import Path
from typing import Any

import pytest

from crsim.core.errors import DataError
from crsim.datasets.base import ConversionReport, convert_dataset
from crsim.datasets.redial import RedialReader
from crsim.model.dialogue import Dialogue, Role
from crsim.model.items import ItemCollection
from crsim.model.mentions import named_items

REDIAL = Path(__file__).parents[1] / "fixtures" / "redial"
FILES = ("test_data", "train_subset_ievalm_valid_data", "train_subset_kgsf_valid_data")


def _raw(name: str) -> list[dict[str, Any]]:
    with gzip.open(REDIAL / f"{name}.jsonl.gz", "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


@pytest.fixture(scope="module")
def raw() -> dict[str, list[dict[str, Any]]]:
    return {name: _raw(name) for name in FILES}


@pytest.fixture(scope="module")
def conversion() -> tuple[RedialReader, list[Dialogue]]:
    reader = RedialReader(RedialReader.Params())
    return reader, list(convert_dataset(reader, REDIAL))


@pytest.fixture(scope="module")
def converted(conversion: tuple[RedialReader, list[Dialogue]]) -> list[Dialogue]:
    return conversion[1]


@pytest.fixture(scope="module")
def by_id(converted: list[Dialogue]) -> dict[str, Dialogue]:
    return {d.id: d for d in converted}


def test_counts_match_the_raw_files(raw: dict[str, list[dict[str, Any]]], converted: list[Dialogue]) -> None:
    seen: set[str] = set()
    dialogues = utterances = 0
    for name in FILES:
        for record in raw[name]:
            if record["conversationId"] in seen:
                continue
            seen.add(record["conversationId"])
            dialogues += 1
            utterances += len(list(groupby(m["senderWorkerId"] for m in record["messages"])))
    assert dialogues == len(converted) == 3155
    assert utterances == sum(len(d.utterances) for d in converted)


def test_first_dialogue(by_id: dict[str, Dialogue]) -> None:
    dialogue = by_id["redial/test/20001"]
    first = dialogue.utterances[0]
    assert first.role == Role.USER
    assert first.text == "Hi I am looking for a movie like Super Troopers (2001)"
    assert first.annotations["original_text"] == "Hi I am looking for a movie like @111776"
    assert first.annotations["messages"] == [{"timeOffset": 0, "messageId": 204171}]
    assert first.mentioned_items == ["111776"] and "mentioned_items" not in first.annotations
    assert first.recommended_items == []
    reply = dialogue.utterances[1]
    assert reply.role == Role.CRS and reply.text == "You should watch Police Academy (1984)"
    assert reply.recommended_items == ["151656"]
    assert [a.intent for a in reply.acts] == ["recommend"]
    assert reply.acts[0].value("item") == "151656"
    assert dialogue.metadata["initiator_worker_id"] == 956 and dialogue.metadata["split"] == "test"


def test_consecutive_messages_are_merged(by_id: dict[str, Dialogue]) -> None:
    third = by_id["redial/test/20001"].utterances[2]
    assert third.text.endswith("I have seen American Pie\nI mean American Pie (1999)")
    assert [m["messageId"] for m in third.annotations["messages"]] == [204173, 204174]
    assert third.mentioned_items == ["192131", "134643"]


def test_feedback_keeps_both_answers(by_id: dict[str, Dialogue]) -> None:
    feedback = by_id["redial/test/20001"].metadata["item_feedback"]
    # the workers disagree on who suggested "Lethal Weapon"; the respondent's "recommender" wins
    assert feedback["101794"]["initiator"] == {"suggested_by": "seeker", "seen": None, "liked": None}
    assert feedback["101794"]["respondent"] == {"suggested_by": "recommender", "seen": False, "liked": None}
    lethal = next(u for u in by_id["redial/test/20001"].utterances if "101794" in u.recommended_items)
    assert lethal.text == "yes Lethal Weapon (1987)"
    assert lethal.annotations["item_feedback"]["101794"] == feedback["101794"]


def test_seeker_mentions_are_not_recommendations(converted: list[Dialogue]) -> None:
    for dialogue in converted:
        for utterance in dialogue.by(Role.USER):
            assert utterance.recommended_items == []
        for utterance in dialogue.utterances:  # recommended or mentioned, never both
            assert not set(utterance.recommended_items) & set(utterance.mentioned_items)
            assert "mentioned_items" not in utterance.annotations


def test_ievalm_annotations_and_catalog_fallback(by_id: dict[str, Dialogue]) -> None:
    dialogue = by_id["redial/train/1382"]
    assert dialogue.metadata["source_file"] == "train_subset_ievalm_valid_data.jsonl.gz"
    first = dialogue.utterances[0].annotations["messages"][0]
    assert first["turn_id"] == 0 and first["masked_text"] == "hi, what movies are you looking for?"
    # @115908 is missing from this dialogue's movieMentions: its name comes from the catalog
    liked = dialogue.utterances[3]
    assert liked.annotations["original_text"] == "I really liked @115908"
    assert liked.text == "I really liked 50 First Dates (2004)"


def test_duplicates_across_subsets_are_read_once(
    raw: dict[str, list[dict[str, Any]]], conversion: tuple[RedialReader, list[Dialogue]]
) -> None:
    kgsf = {r["conversationId"] for r in raw["train_subset_kgsf_valid_data"]}
    ievalm = {r["conversationId"] for r in raw["train_subset_ievalm_valid_data"]}
    reader, dialogues = conversion
    assert reader.duplicates == len(kgsf & ievalm) == 88
    assert len({d.id for d in dialogues}) == len(dialogues)


@pytest.fixture(scope="module")
def items() -> ItemCollection:
    return RedialReader(RedialReader.Params()).items(REDIAL)


def test_items_join_catalog_and_metadata(items: ItemCollection) -> None:
    assert len(items) == 6924
    back = items["100043"]
    assert back.title == "Back to the Future" and back.directors == ["Robert Zemeckis"]
    assert "sci-fi" in back.genres and back.extra["imdb_id"] == "tt0088763"
    police = items["151656"]
    assert (police.title, police.year, police.extra["popularity"]) == ("Police Academy", 1984, 21)
    nameless = items["103034"]  # the catalog gives only "(2015)" for this film
    assert (nameless.title, nameless.year) == ("(2015)", 2015)


def test_every_mention_links_to_an_item(converted: list[Dialogue], items: ItemCollection) -> None:
    mentioned = {m for d in converted for u in d.utterances for m in named_items(u)}
    assert mentioned and mentioned <= set(items.ids)
    assert not any(re.search(r"@\d", u.text) for d in converted for u in d.utterances)


def test_round_trip(converted: list[Dialogue]) -> None:
    for dialogue in converted[:200]:
        assert Dialogue.model_validate_json(dialogue.model_dump_json()) == dialogue


# --- bad input ---------------------------------------------------------------------------------


def _folder(tmp_path: Path, lines: list[str]) -> Path:
    shutil.copy(REDIAL / "movies_with_mentions.csv.gz", tmp_path)
    (tmp_path / "test_data.jsonl").write_text("".join(lines), encoding="utf-8")
    return tmp_path


def _lines(count: int = 4) -> list[str]:
    with gzip.open(REDIAL / "test_data.jsonl.gz", "rt", encoding="utf-8") as handle:
        return [next(handle) for _ in range(count)]


def _convert(folder: Path, skip: bool = False) -> tuple[list[Dialogue], ConversionReport]:
    report = ConversionReport()
    reader = RedialReader(RedialReader.Params())
    return list(convert_dataset(reader, folder, skip_invalid=skip, report=report)), report


def _mutated(mutate: Any) -> str:
    record = json.loads(_lines(2)[1])
    mutate(record)
    return json.dumps(record) + "\n"


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda r: r.pop("initiatorWorkerId"), "initiatorWorkerId"),
        (lambda r: r.__setitem__("messages", []), "messages"),
        (lambda r: r["messages"][0].__setitem__("text", "like @999999999"), "messages[0].text"),
        (lambda r: r["messages"][1].pop("senderWorkerId"), "messages[1].senderWorkerId"),
        (lambda r: r["messages"][2].__setitem__("senderWorkerId", 1), "messages[2].senderWorkerId"),
        (lambda r: r["initiatorQuestions"].__setitem__("1", {"suggested": 0}), "initiatorQuestions.1"),
    ],
)
def test_bad_record_names_file_record_and_field(tmp_path: Path, mutate: Any, field: str) -> None:
    folder = _folder(tmp_path, [_lines(1)[0], _mutated(mutate)])
    with pytest.raises(DataError) as info:
        _convert(folder)
    assert info.value.path is not None and info.value.path.endswith("test_data.jsonl")
    assert info.value.record == 2
    assert info.value.field is not None and info.value.field.startswith(field)


def test_truncated_file_and_skip_invalid(tmp_path: Path) -> None:
    lines = _lines(4)
    lines[3] = lines[3][: len(lines[3]) // 2]  # a file cut off in its last record
    folder = _folder(tmp_path, lines)
    with pytest.raises(DataError, match="not valid JSON") as info:
        _convert(folder)
    assert info.value.record == 4
    dialogues, report = _convert(folder, skip=True)
    assert len(dialogues) == 3 and report.skipped == 1


def test_non_utf8_line_is_skipped_and_counted(tmp_path: Path) -> None:
    lines = _lines(3)
    folder = _folder(tmp_path, [])
    (folder / "test_data.jsonl").write_bytes(
        lines[0].encode() + b'{"text": "\xff\xfe"}\n' + lines[2].encode()
    )
    with pytest.raises(DataError, match="not UTF-8") as info:
        _convert(folder)
    assert info.value.record == 2
    dialogues, report = _convert(folder, skip=True)
    assert [d.metadata["conversation_id"] for d in dialogues] == [
        json.loads(lines[0])["conversationId"],
        json.loads(lines[2])["conversationId"],
    ]
    assert report.skipped == 1 and "record 2" in report.errors[0]


def test_damaged_archive_and_missing_catalog(tmp_path: Path) -> None:
    data = (REDIAL / "test_data.jsonl.gz").read_bytes()
    (tmp_path / "test_data.jsonl.gz").write_bytes(data[: len(data) // 3])
    with pytest.raises(DataError, match=r"no movies_with_mentions\.csv"):
        _convert(tmp_path)
    shutil.copy(REDIAL / "movies_with_mentions.csv.gz", tmp_path)
    with pytest.raises(DataError, match="truncated archive") as info:
        _convert(tmp_path)
    assert info.value.path is not None and info.value.path.endswith("test_data.jsonl.gz")
    dialogues, report = _convert(tmp_path, skip=True)  # what precedes the damage is kept
    assert 0 < len(dialogues) < 1342 and report.skipped == 1


def test_catalog_with_a_wrong_column(tmp_path: Path) -> None:
    folder = _folder(tmp_path, _lines(1))
    (folder / "movies_with_mentions.csv.gz").unlink()
    (folder / "movies_with_mentions.csv").write_text("id,movieName\n1,A (2000)\n", encoding="utf-8")
    with pytest.raises(DataError, match="missing column"):
        _convert(folder)


def test_catalog_with_an_oversized_field_is_a_data_error(tmp_path: Path) -> None:
    folder = _folder(tmp_path, _lines(1))
    (folder / "movies_with_mentions.csv.gz").unlink()
    oversized = 'movieId,movieName\n1,A (2000)\n2,"' + "x" * 200_000 + '"\n'
    (folder / "movies_with_mentions.csv").write_text(oversized, encoding="utf-8")
    with pytest.raises(DataError, match=r"movies_with_mentions\.csv, record 3: not readable CSV"):
        _convert(folder)
