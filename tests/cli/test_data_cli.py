"""`crsim data convert` (with a small reader defined here, and the registered readers on their
fixtures) plus the shared command-line helpers: atomic writes, one-line errors, `--arg` parsing."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from importlib import import_module
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from crsim.cli._support import parse_args
from crsim.cli.data import data_app
from crsim.core.atomic_files import atomic_output
from crsim.core.errors import CrsimError
from crsim.core.plugins import Params as ComponentParams
from crsim.datasets.base import DatasetReader, RawRecord, dataset
from crsim.model import Dialogue, Item, ItemCollection, Utterance

runner = CliRunner()
FIXTURES = Path(__file__).parents[1] / "fixtures"


class ChatReader(DatasetReader):
    """`chat.jsonl`: {"id": ..., "turns": [{"role": "user"|"crs", "text": ..., "items": [...]}]}.

    Lines are parsed in `convert`, so a bad line is one skippable record (a generator that
    raises cannot go on to the next line)."""

    class Params(ComponentParams):
        split: str = "test"

    def records(self, src: Path) -> Iterator[RawRecord]:
        path = src / "chat.jsonl" if src.is_dir() else src
        with open(path, "rb") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    yield RawRecord(path, number, line)

    def convert(self, record: RawRecord) -> Dialogue:
        try:
            data = json.loads(record.data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise record.error(f"not a JSON line ({exc})") from None
        record = RawRecord(record.path, record.number, data)
        split = self.params.split  # type: ignore[attr-defined]
        turns = record.get("turns", list)
        utterances = []
        for n, turn in enumerate(turns):
            role = record.get("role", str, turn, where=f"turns[{n}]")
            text = record.get("text", str, turn, where=f"turns[{n}]")
            if role not in ("user", "crs"):
                raise record.error(f"expected user or crs, got {role!r}", f"turns[{n}].role")
            items = turn.get("items", []) if role == "crs" else []
            utterances.append(Utterance(role=role, text=text, recommended_items=items))
        if not utterances:
            raise record.error("a dialogue needs at least one turn", "turns")
        return Dialogue(id=f"chat/{split}/{record.get('id', str)}", utterances=utterances)

    def items(self, src: Path) -> ItemCollection:
        return ItemCollection([Item(id="m1", title="Heat", year=1995)], name="chat")


@pytest.fixture(autouse=True)
def _test_components() -> None:
    """This module's test reader, registered for each test (the conftest fixture unregisters it)."""
    dataset("test_chat")(ChatReader)


def _chat(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


GOOD = json.dumps({"id": "1", "turns": [{"role": "user", "text": "hi"}, {"role": "crs", "text": "Heat?"}]})
MISSING_TEXT = json.dumps({"id": "2", "turns": [{"role": "user"}]})


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".part") or p.name.startswith("."))


def test_convert_writes_dialogues_and_items(tmp_path: Path) -> None:
    src = _chat(tmp_path, [GOOD, GOOD.replace('"1"', '"3"')])
    out, items = tmp_path / "out" / "d.jsonl", tmp_path / "out" / "items.jsonl.gz"
    args = ["convert", "test_chat", str(src), "-o", str(out), "--items", str(items), "--arg", "split=dev"]
    result = runner.invoke(data_app, args)
    assert result.exit_code == 0, result.output
    assert "2 dialogues written" in result.output and "0 skipped" in result.output
    dialogues = [Dialogue.model_validate_json(line) for line in out.read_text().splitlines()]
    assert [d.id for d in dialogues] == ["chat/dev/1", "chat/dev/3"]
    assert dialogues[0].utterances[1].text == "Heat?"
    with gzip.open(items, "rt", encoding="utf-8") as handle:
        assert json.loads(handle.readline())["title"] == "Heat"
    assert _leftovers(out.parent) == []


def test_bad_record_stops_with_a_located_error_and_no_output(tmp_path: Path) -> None:
    src = _chat(tmp_path, [GOOD, MISSING_TEXT])
    out = tmp_path / "d.jsonl"
    result = runner.invoke(data_app, ["convert", "test_chat", str(src), "-o", str(out)])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert f"{src}, record 2, field 'turns[0].text': missing" in result.output
    assert not out.exists() and _leftovers(tmp_path) == []


def test_skip_invalid_reports_count_and_errors(tmp_path: Path) -> None:
    src = _chat(tmp_path, [GOOD, MISSING_TEXT, "{not json", json.dumps({"id": "4", "turns": []})])
    out = tmp_path / "d.jsonl"
    result = runner.invoke(data_app, ["convert", "test_chat", str(src), "-o", str(out), "--skip-invalid"])
    assert result.exit_code == 0, result.output
    assert "1 dialogues written" in result.output and "3 skipped" in result.output
    assert "record 2, field 'turns[0].text'" in result.output
    assert "record 4, field 'turns': a dialogue needs at least one turn" in result.output
    assert len(out.read_text().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["convert", "nosuch", ".", "-o", "x.jsonl"], "unknown dataset 'nosuch'; expected one of"),
        (["convert", "test_chat", ".", "-o", "x.jsonl", "--arg", "splti=dev"], "--arg.args.splti"),
        (["convert", "test_chat", ".", "-o", "x.jsonl", "--arg", "nokey"], "expected KEY=VALUE"),
        (["convert", "test_chat", "nowhere/", "-o", "x.jsonl"], "nowhere: not found"),
    ],
)
def test_convert_input_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = runner.invoke(data_app, [a.replace("x.jsonl", str(tmp_path / "x.jsonl")) for a in args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "x.jsonl").exists()


def test_items_for_a_reader_without_a_collection(tmp_path: Path) -> None:
    @dataset("test_chat_noitems")
    class NoItems(ChatReader):
        def items(self, src: Path) -> ItemCollection | None:
            return None

    src = _chat(tmp_path, [GOOD])
    args = ["convert", "test_chat_noitems", str(src), "-o", str(tmp_path / "d.jsonl")]
    result = runner.invoke(data_app, [*args, "--items", str(tmp_path / "i.jsonl")])
    assert result.exit_code == 2 and "has no item collection" in result.output


def test_atomic_output_removes_the_temp_file_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_output(target) as handle:
        handle.write("new, half")
        raise RuntimeError("interrupted")
    assert target.read_text() == "old" and _leftovers(tmp_path) == []


def test_parse_args_reads_yaml_scalars() -> None:
    assert parse_args(["n=3", "flag=true", "name=dev", "files=[a, b]"]) == {
        "n": 3,
        "flag": True,
        "name": "dev",
        "files": ["a", "b"],
    }
    assert parse_args(["x=1"], '{"x": 0, "y": 2}') == {"x": 1, "y": 2}
    with pytest.raises(CrsimError, match="expected a JSON object"):
        parse_args([], "[1]")


def test_convert_redial_fixture_then_stats(tmp_path: Path) -> None:
    """The real ReDial test split: as many dialogues as lines in the file, valid records."""
    pytest.importorskip("crsim.datasets.redial")
    import_module("crsim.datasets.redial")
    src = tmp_path / "redial"
    src.mkdir()
    for name in ("test_data.jsonl.gz", "movies_with_mentions.csv.gz"):
        (src / name).write_bytes((FIXTURES / "redial" / name).read_bytes())
    with gzip.open(src / "test_data.jsonl.gz", "rt", encoding="utf-8") as handle:
        expected = sum(1 for line in handle if line.strip())
    out = tmp_path / "redial.jsonl"
    result = runner.invoke(data_app, ["convert", "redial", str(src), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert f"{expected} dialogues written" in result.output
    stats = runner.invoke(data_app, ["stats", str(out), "--json"])
    assert stats.exit_code == 0, stats.output
    figures = json.loads(stats.output)
    assert figures["dialogues"] == expected
    assert figures["by_role"]["user"]["utterances"] > 0 and figures["items_mentioned"] > 100


def test_data_app_is_a_typer_app() -> None:
    assert isinstance(data_app, typer.Typer)
    names = {c.name or c.callback.__name__ for c in data_app.registered_commands if c.callback}
    assert {"convert", "stats", "download"} <= names


def test_convert_renames_repeated_ids_and_says_how_many(tmp_path: Path) -> None:
    """A UserSimCRS export gave 93 of 100 dialogues one id: all 100 are kept, under 100 ids."""
    records = [
        {
            "conversation_id": "sim" if n < 93 else f"own-{n}",
            "conversation": [{"participant": "USER", "utterance": "hi"}],
        }
        for n in range(100)
    ]
    src = tmp_path / "export.json"
    src.write_text(json.dumps(records), encoding="utf-8")
    out = tmp_path / "d.jsonl"
    result = runner.invoke(data_app, ["convert", "dialoguekit", str(src), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "100 dialogues written" in result.output and "92 renamed (duplicate ids)" in result.output
    assert "dialoguekit/export/sim -> dialoguekit/export/sim-2" in result.output
    assert "... and 72 more" in result.output
    ids = [Dialogue.model_validate_json(line).id for line in out.read_text().splitlines()]
    assert len(set(ids)) == 100 and ids[:3] == [
        "dialoguekit/export/sim",
        "dialoguekit/export/sim-2",
        "dialoguekit/export/sim-3",
    ]


def test_convert_redial_renames_a_repeat_in_a_file_and_counts_copies(tmp_path: Path) -> None:
    """A conversation id repeated inside one ReDial file is a different record: renamed, never dropped
    silently. A copy of a conversation an earlier file held is left out, and the count is printed."""
    import_module("crsim.datasets.redial")
    src = tmp_path / "redial"
    src.mkdir()
    catalog = "movies_with_mentions.csv.gz"
    (src / catalog).write_bytes((FIXTURES / "redial" / catalog).read_bytes())
    with gzip.open(FIXTURES / "redial" / "test_data.jsonl.gz", "rt", encoding="utf-8") as handle:
        first, second = [json.loads(line) for line, _ in zip(handle, range(2), strict=False)]
    opening = {**first["messages"][0], "text": "a different first message"}
    changed = {**first, "messages": [opening, *first["messages"][1:]]}
    lines = [json.dumps(r) for r in (first, second, changed)]
    (src / "test_data.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (src / "train_subset_kgsf_valid_data.jsonl").write_text(lines[1] + "\n", encoding="utf-8")
    out = tmp_path / "d.jsonl"
    files = 'files=["test_data.jsonl", "train_subset_kgsf_valid_data.jsonl"]'
    args = ["convert", "redial", str(src), "-o", str(out), "--arg", files]
    result = runner.invoke(data_app, args)
    assert result.exit_code == 0, result.output
    assert "3 dialogues written" in result.output and "1 renamed (duplicate ids)" in result.output
    assert "1 left out as already read from an earlier file" in result.output
    dialogues = [Dialogue.model_validate_json(line) for line in out.read_text().splitlines()]
    assert [d.utterances[0].text for d in dialogues][2] == "a different first message"
    assert len({d.id for d in dialogues}) == 3
