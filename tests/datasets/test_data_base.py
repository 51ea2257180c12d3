"""The converter driver: located errors, skipping bad records without losing the rest."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from crsim.core.errors import DataError
from crsim.datasets.base import ConversionReport, DatasetReader, RawRecord, convert_dataset
from crsim.datasets.files import iter_json_lines, read_json
from crsim.model import Dialogue, DialogueAct, Utterance


class LinesReader(DatasetReader):
    def records(self, src: Path) -> Iterator[RawRecord]:
        return iter_json_lines(src)

    def convert(self, record: RawRecord) -> Dialogue:
        text = record.get("text", str)
        intent = record.get("intent", str) if "intent" in record.data else "other"
        act = DialogueAct(intent=intent)  # an empty intent fails pydantic validation here
        return Dialogue(id=str(record.number), utterances=[Utterance(role="user", text=text, acts=[act])])


def _write(tmp_path: Path, *lines: bytes) -> Path:
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_bad_lines_are_skipped_and_the_rest_of_the_file_is_kept(tmp_path: Path) -> None:
    path = _write(
        tmp_path, b'{"text": "a"}', b'{"text": ', b'{"text": "\xff"}', b'{"text": 3}', b'{"text": "b"}'
    )
    report = ConversionReport()
    dialogues = list(
        convert_dataset(LinesReader(LinesReader.Params()), path, skip_invalid=True, report=report)
    )
    assert [d.id for d in dialogues] == ["1", "5"]
    assert (report.written, report.skipped) == (2, 3)
    assert "record 2" in report.errors[0] and "not valid JSON" in report.errors[0]
    assert "record 3" in report.errors[1] and "UTF-8" in report.errors[1]
    assert "record 4, field 'text': expected str" in report.errors[2]


def test_without_skip_the_first_bad_record_stops_with_its_location(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"text": "a"}', b'{"text": "b", "intent": ""}')
    with pytest.raises(DataError, match=r"d.jsonl, record 2, field 'intent': String should have at least 1"):
        list(convert_dataset(LinesReader(LinesReader.Params()), path))
    with pytest.raises(DataError, match="not found"):
        list(convert_dataset(LinesReader(LinesReader.Params()), tmp_path / "missing.jsonl"))


def test_json_that_parses_to_nothing_python_can_hold_is_a_data_error(tmp_path: Path) -> None:
    """An integer over Python's digit limit or nesting past the recursion limit are bad records too."""
    huge, deep = b'{"text": ' + b"1" * 5000 + b"}", b"[" * 100_000 + b"]" * 100_000
    path = _write(tmp_path, b'{"text": "a"}', huge, deep, b'{"text": "b"}')
    report = ConversionReport()
    dialogues = list(
        convert_dataset(LinesReader(LinesReader.Params()), path, skip_invalid=True, report=report)
    )
    assert [d.id for d in dialogues] == ["1", "4"] and report.skipped == 2
    assert "record 2" in report.errors[0] and "not readable JSON" in report.errors[0]
    assert "record 3" in report.errors[1] and "nested too deeply" in report.errors[1]
    whole = tmp_path / "whole.json"
    whole.write_bytes(huge)
    with pytest.raises(DataError, match=r"whole\.json: not readable JSON"):
        read_json(whole)
