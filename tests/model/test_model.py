"""The unified data format: acts, dialogue records, the documented example, validation errors."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from crsim.core.errors import DataError
from crsim.model import Dialogue, DialogueAct, Item, format_acts, parse_acts
from crsim.model.io import iter_dialogues, validate_file

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_acts_round_trip_through_the_string_form() -> None:
    acts = [
        DialogueAct(intent="elicit", slots=[("genre", None)]),
        DialogueAct(intent="recommend", slots=[("title", "Heat"), ("year", "1995")]),
        DialogueAct(intent="goodbye"),
    ]
    text = format_acts(acts)
    assert text == 'elicit(genre)|recommend(title="Heat",year="1995")|goodbye()'
    assert parse_acts(text) == acts


@pytest.mark.parametrize("bad", ["elicit(genre", "recommend(title=Heat)", "(x)"])
def test_unreadable_act_strings_raise_a_clear_error(bad: str) -> None:
    with pytest.raises(ValueError, match="cannot read"):
        parse_acts(bad)


def test_the_documented_example_is_a_valid_dialogue() -> None:
    text = (DOCS / "data-format.md").read_text(encoding="utf-8")
    block = re.search(r"```json\n(.*?)```", text, re.S)
    assert block is not None
    dialogue = Dialogue.model_validate_json(block.group(1))
    assert dialogue.num_turns == 3
    assert dialogue.utterances[2].recommended_items == ["2"]
    again = Dialogue.model_validate_json(dialogue.model_dump_json())
    assert again == dialogue


def test_validation_names_file_record_and_field(tmp_path: Path) -> None:
    good = {"id": "a", "utterances": [{"role": "user", "text": "hi"}]}
    bad = {"id": "b", "utterances": [{"role": "robot", "text": "hi"}]}
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in (good, bad, good)) + "\n")
    count, problems = validate_file(path)
    assert count == 3
    assert len(problems) == 1
    assert (problems[0].record, problems[0].field) == (2, "utterances.0.role")
    assert str(problems[0]).startswith(f"{path}, record 2, field 'utterances.0.role'")
    with pytest.raises(DataError, match=r"d.jsonl, record 2, field 'utterances.0.role'"):
        list(iter_dialogues(path))


def test_unknown_fields_are_rejected_not_dropped() -> None:
    with pytest.raises(ValueError, match="utterance"):
        Dialogue.model_validate({"id": "x", "utterance": []})


def test_validation_splits_lines_on_newlines_only_and_reports_bad_bytes(tmp_path: Path) -> None:
    # U+0085 and U+2028 may stand unescaped inside JSON strings; str.splitlines() splits on them.
    odd = {"id": "a", "utterances": [{"role": "user", "text": "wait\u0085what\u2028now"}]}
    path = tmp_path / "d.jsonl"
    path.write_bytes(json.dumps(odd, ensure_ascii=False).encode("utf-8") + b'\n{"id": "\xff"}\n{"id": ""}\n')
    count, problems = validate_file(path)
    assert count == 3
    assert [(p.record, p.field) for p in problems] == [(2, ""), (3, "id")]
    assert "not UTF-8" in problems[0].message
    assert next(iter_dialogues(path)).utterances[0].text == "wait\u0085what\u2028now"


def test_a_newer_major_format_version_is_refused() -> None:
    assert Dialogue.model_validate({"id": "a", "format_version": "1.3"}).format_version == "1.3"
    with pytest.raises(ValueError, match=r"format version '2\.0' is not readable"):
        Dialogue.model_validate({"id": "a", "format_version": "2.0"})


def test_validation_reads_gzipped_files(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"id": "1", "title": "Heat"}\n{"id": "2"}\n'))
    count, problems = validate_file(path, Item)
    assert count == 2 and [(p.record, p.field) for p in problems] == [(2, "title")]
    array = tmp_path / "dialogues.json.gz"
    array.write_bytes(gzip.compress(b'[{"id": "a"}, {"id": "b", "utterances": 3}]'))
    assert [(p.record, p.field) for p in validate_file(array)[1]] == [(2, "utterances")]
    path.write_bytes(b"not gzip")
    with pytest.raises(DataError, match=r"items\.jsonl\.gz: cannot read the file"):
        validate_file(path)
