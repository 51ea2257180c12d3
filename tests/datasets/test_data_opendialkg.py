"""OpenDialKG (iEvaLM's processed recommendation turns) on the real test and valid files."""

from __future__ import annotations

import gzip
import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from crsim.core.errors import DataError
from crsim.datasets.base import ConversionReport, convert_dataset
from crsim.datasets.opendialkg import OpenDialKGReader
from crsim.model.dialogue import Dialogue, Role

ODKG = Path(__file__).parents[1] / "fixtures" / "opendialkg"
EVAL = ODKG / "opendialkg_eval"


def _convert(src: Path, skip: bool = False, **params: Any) -> tuple[list[Dialogue], ConversionReport]:
    report = ConversionReport()
    reader = OpenDialKGReader(OpenDialKGReader.Params(**params))
    return list(convert_dataset(reader, src, skip_invalid=skip, report=report)), report


def _raw(split: str) -> list[dict[str, Any]]:
    with gzip.open(EVAL / f"{split}_data_processed.jsonl.gz", "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


@pytest.fixture(scope="module")
def converted() -> list[Dialogue]:
    return _convert(ODKG)[0]


def test_counts(converted: list[Dialogue]) -> None:
    dialogues = utterances = samples = 0
    for split in ("valid", "test"):
        longest: dict[int, int] = {}
        for sample in _raw(split):
            samples += 1
            longest[sample["dialog_id"]] = max(
                longest.get(sample["dialog_id"], 0), len(sample["context"]) + 1
            )
        dialogues += len(longest)
        utterances += sum(longest.values())
    assert len(converted) == dialogues == 1124 + 1113
    assert sum(len(d.utterances) for d in converted) == utterances
    assert sum(len(d.metadata["sample_ids"]) for d in converted) == samples == 2 * 1188


def test_first_test_dialogue(converted: list[Dialogue]) -> None:
    dialogue = next(d for d in converted if d.id == "opendialkg/test/3")
    first, reply = dialogue.utterances
    assert (first.role, first.text) == (Role.USER, "Could you recommend some movies similar to Fight Club?")
    assert (reply.role, reply.text) == (Role.CRS, "Sure, Panic Room is a similar movie")
    items = OpenDialKGReader(OpenDialKGReader.Params()).items(ODKG)
    assert [items[i].title for i in reply.recommended_items] == ["Panic Room"]
    assert [items[i].title for i in first.mentioned_items] == ["Fight Club"] and reply.mentioned_items == []
    assert reply.acts[0].intent == "recommend" and reply.annotations["ievalm"]["entity"] == ["Fight Club"]


def test_samples_of_one_dialogue_are_joined(converted: list[Dialogue]) -> None:
    dialogue = next(d for d in converted if d.id == "opendialkg/test/70")
    assert dialogue.metadata["sample_ids"] == ["70_1", "70_11"]
    assert len(dialogue.utterances) == 12
    recommending = [i for i, u in enumerate(dialogue.utterances) if u.recommended_items]
    assert recommending == [1, 11]
    assert all(dialogue.utterances[i].role == Role.CRS for i in recommending)


def test_roles_alternate_back_from_the_response(converted: list[Dialogue]) -> None:
    odd = next(d for d in converted if d.id == "opendialkg/test/4148")  # six context turns
    assert [u.role for u in odd.utterances[:2]] == [Role.CRS, Role.USER] and odd.utterances[
        -1
    ].role == Role.CRS
    for dialogue in converted:
        roles = [u.role for u in dialogue.utterances]
        assert all(a != b for a, b in pairwise(roles)) and roles[-1] == Role.CRS


def test_items_and_round_trip(converted: list[Dialogue]) -> None:
    items = OpenDialKGReader(OpenDialKGReader.Params()).items(ODKG)
    assert len(items) == 3672
    slumdog = items["0"]
    assert (slumdog.title, slumdog.year, slumdog.directors) == (
        "Slumdog Millionaire",
        2008,
        ["Loveleen Tandan", "Danny Boyle"],
    )
    assert slumdog.actors.count("Anil Kapoor") == 1  # the catalog repeats some names
    for dialogue in converted[:100]:
        assert Dialogue.model_validate_json(dialogue.model_dump_json()) == dialogue


# --- bad input ---------------------------------------------------------------------------------


def _folder(tmp_path: Path, lines: list[str]) -> Path:
    (tmp_path / "opendialkg").mkdir()
    (tmp_path / "opendialkg" / "id2info.json.gz").write_bytes(
        (ODKG / "opendialkg" / "id2info.json.gz").read_bytes()
    )
    (tmp_path / "opendialkg_eval").mkdir()
    (tmp_path / "opendialkg_eval" / "test_data_processed.jsonl").write_text("".join(lines), encoding="utf-8")
    return tmp_path


def _lines() -> list[str]:
    return [json.dumps(s) + "\n" for s in _raw("test")[:3]]


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"rec": ["No Such Film (1901)"]}, "rec", "not in the catalog"),
        ({"resp": ""}, "[0].resp", "non-empty"),
        ({"context": "just text"}, "[0].context", "expected list"),
        ({"dialog_id": None}, "[0].dialog_id", "expected int"),
    ],
)
def test_bad_sample(tmp_path: Path, change: dict[str, Any], field: str, message: str) -> None:
    lines = _lines()
    lines[1] = json.dumps({**json.loads(lines[1]), **change}) + "\n"
    folder = _folder(tmp_path, lines)
    with pytest.raises(DataError, match=message) as info:
        _convert(folder)
    assert (info.value.record, info.value.field) == (2, field)
    dialogues, report = _convert(folder, skip=True)
    assert len(dialogues) == 2 and report.skipped == 1


def test_truncated_and_non_utf8_lines(tmp_path: Path) -> None:
    lines = _lines()
    folder = _folder(tmp_path, [lines[0], lines[1][:40] + "\n", lines[2]])
    with pytest.raises(DataError, match="not valid JSON") as info:
        _convert(folder)
    assert info.value.record == 2
    path = folder / "opendialkg_eval" / "test_data_processed.jsonl"
    path.write_bytes(lines[0].encode() + b'{"resp": "\xe9"}\n' + lines[2].encode())
    dialogues, report = _convert(folder, skip=True)
    assert len(dialogues) == 2 and report.skipped == 1 and "not UTF-8" in report.errors[0]


def test_missing_catalog(tmp_path: Path) -> None:
    (tmp_path / "test_data_processed.jsonl").write_text("".join(_lines()), encoding="utf-8")
    with pytest.raises(DataError, match=r"no id2info\.json"):
        _convert(tmp_path)
    catalog = tmp_path / "elsewhere.json.gz"
    catalog.write_bytes((ODKG / "opendialkg" / "id2info.json.gz").read_bytes())
    assert len(_convert(tmp_path, catalog=str(catalog))[0]) == 3
