"""`crsim data stats`: exact figures on small dialogues, the JSON and table outputs, bad files."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from crsim.cli.data import data_app
from crsim.datasets.stats import dataset_stats, file_stats, mentioned_items
from crsim.model import Dialogue, DialogueAct, Utterance

runner = CliRunner()


def _dialogues() -> list[Dialogue]:
    first = Dialogue(
        id="a",
        utterances=[
            Utterance(role="user", text="hi there", acts=[DialogueAct(intent="greeting")]),
            Utterance(
                role="crs",
                text="how about Heat (1995) or Ronin?",
                acts=[DialogueAct(intent="recommend"), DialogueAct(intent="recommend")],
                recommended_items=["1", "2"],
            ),
            Utterance(
                role="user",
                text="seen Heat, loved Alien",
                annotations={"mentioned_items": ["1", "3", 7]},
            ),
        ],
    )
    return [first, Dialogue(id="empty")]


def test_figures_are_exact() -> None:
    stats = dataset_stats(_dialogues())
    summary = stats.summary()
    assert (summary["dialogues"], summary["empty_dialogues"], summary["utterances"]) == (2, 1, 3)
    assert summary["by_role"]["user"] == {
        "utterances": 2,
        "words_per_utterance": 3.0,  # (2 + 4) / 2
        "acts_per_utterance": 0.5,
        "utterances_with_acts": 1,
    }
    assert summary["by_role"]["crs"]["words_per_utterance"] == 6.0
    assert summary["words_per_utterance"] == 4.0  # 12 words / 3 utterances
    assert summary["acts_per_utterance"] == 1.0
    assert summary["intents"] == {"recommend": 2, "greeting": 1}
    # 1 and 2 recommended, 1 and 3 mentioned; the non-string 7 is ignored
    assert (summary["items_mentioned"], summary["items_recommended"]) == (3, 2)
    assert summary["utterances_per_dialogue"] == 1.5


def test_mentioned_items_tolerates_odd_annotations() -> None:
    assert mentioned_items(Utterance(role="user", text="x", annotations={"mentioned_items": "1"})) == []
    assert mentioned_items(Utterance(role="crs", text="x", recommended_items=["4"])) == ["4"]


def test_empty_file_has_zero_ratios(tmp_path: Path) -> None:
    path = tmp_path / "none.jsonl"
    path.write_text("\n")
    summary = file_stats(path).summary()
    assert summary["dialogues"] == 0 and summary["words_per_utterance"] == 0.0


def _write(tmp_path: Path, dialogues: list[Dialogue]) -> Path:
    path = tmp_path / "d.jsonl"
    path.write_text("".join(d.model_dump_json() + "\n" for d in dialogues), encoding="utf-8")
    return path


def test_cli_json_and_table(tmp_path: Path) -> None:
    path = _write(tmp_path, _dialogues())
    result = runner.invoke(data_app, ["stats", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == dataset_stats(_dialogues()).summary()
    table = runner.invoke(data_app, ["stats", str(path)])
    assert table.exit_code == 0, table.output
    assert "2 dialogues (1 empty)" in table.output and "items mentioned: 3 (recommended: 2)" in table.output


def test_cli_errors_name_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, _dialogues())
    with open(path, "ab") as handle:
        handle.write(b'{"id": "x\xff"}\n')
    result = runner.invoke(data_app, ["stats", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{path}, record 3: not UTF-8 text" in result.output
    path.write_text('{"id": "a", "utterances": [{"role": "bot", "text": "x"}]}\n')
    result = runner.invoke(data_app, ["stats", str(path)])
    assert result.exit_code == 2 and "record 1, field 'utterances.0.role'" in result.output
    result = runner.invoke(data_app, ["stats", str(tmp_path / "missing.jsonl")])
    assert result.exit_code == 2 and "missing.jsonl: file not found" in result.output
