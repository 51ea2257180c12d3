"""UserSimCRS's published case-study dialogues (iai-group/UserSimCRS-ECIR-2026) imported as they are.

The fixtures are whole dialogues of three published files (tests/fixtures/usersimcrs_ecir2026/README.md):
agenda-based users whose acts carry a `null` intent (KBRD × ABUS ReDial) or an empty one (IAI
MovieBot × ABUS INSPIRED), and LLM users without acts (KBRD × dual-prompt LLM). DialogueKit's reader
(iai-group/DialogueKit `dialoguekit/utils/dialogue_reader.py`, `json_to_annotated_utterance`, at
ba5062235c7a553d7ce1b11bb2f0ceda24b638e1 and in the newer stored version that reads `dialogue_acts`)
keeps such acts: the intent is read with `.get("intent")` and made an `Intent` only when truthy.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.data.datasets.base import ConversionReport, build_reader, convert_dataset
from crsim.data.datasets.dialoguekit import ACTS_WITHOUT_INTENT, NO_INTENT
from crsim.data.datasets.sniff import looks_like, other_format_hint
from crsim.errors import DataError
from crsim.model import Dialogue, Role, TerminationReason

FIXTURES = Path(__file__).parents[1] / "fixtures" / "usersimcrs_ecir2026"
NULL_INTENTS = FIXTURES / "KBRD_ReDial_ABUS_ReDial.json"
EMPTY_INTENTS = FIXTURES / "IAIMovieBot_ABUS_INSPIRED.json"
LLM_USERS = FIXTURES / "KBRD_ReDial_Dual_LLM_nemo_ReDial.json"
FILES = [NULL_INTENTS, EMPTY_INTENTS, LLM_USERS]

runner = CliRunner()


def _convert(path: Path) -> tuple[list[Dialogue], ConversionReport]:
    report = ConversionReport()
    dialogues = list(convert_dataset(build_reader("dialoguekit", {}), path, report=report))
    return dialogues, report


def _acts_without_intent(path: Path) -> list[tuple[int, int, int]]:
    """(record, utterance, act) of every act whose intent is null, empty or absent in the file."""
    records = json.loads(path.read_text(encoding="utf-8"))
    return [
        (r, u, a)
        for r, record in enumerate(records)
        for u, utterance in enumerate(record["conversation"])
        for a, act in enumerate(utterance.get("dialogue_acts") or [])
        if not act.get("intent")
    ]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_published_dialogue_converts_with_its_crs_simulator_and_error(path: Path) -> None:
    raw = json.loads(path.read_text(encoding="utf-8"))
    dialogues, report = _convert(path)
    assert (report.written, report.skipped) == (len(raw), 0)
    for record, dialogue in zip(raw, dialogues, strict=True):
        assert dialogue.crs_id == record["agent"]["id"]
        assert dialogue.simulator_id == record["user"]["id"]
        assert dialogue.user_id is None
        assert len(dialogue.utterances) == len(record["conversation"])
        error = (record.get("metadata") or {}).get("error")
        if error is None:
            assert dialogue.termination is None
        else:
            assert dialogue.termination is not None and dialogue.termination.error is not None
            assert dialogue.termination.reason is TerminationReason.ERROR
            info = dialogue.termination.error
            assert (info.source, info.type, info.message) == ("loop", error["error_type"], error["trace"])
            assert not dialogue.termination.evaluable  # not charged to the CRS: UserSimCRS does not say who


@pytest.mark.parametrize("path", [NULL_INTENTS, EMPTY_INTENTS], ids=lambda p: p.stem)
def test_acts_without_an_intent_are_kept_as_other_and_counted(path: Path) -> None:
    missing = _acts_without_intent(path)
    assert missing
    raw = json.loads(path.read_text(encoding="utf-8"))
    dialogues, report = _convert(path)
    assert report.warnings == {ACTS_WITHOUT_INTENT: len(missing)}
    r, u, a = missing[0]
    where = report.warning_examples[ACTS_WITHOUT_INTENT]
    assert f"{path}, record {r + 1}, dialogue {raw[r]['conversation ID']!r}" in where
    assert f"conversation[{u}].dialogue_acts[{a}].intent" in where
    for r, u, a in missing:
        utterance = dialogues[r].utterances[u]
        original = raw[r]["conversation"][u]["dialogue_acts"][a]
        assert utterance.acts[a].intent == NO_INTENT
        assert [s for s, _ in utterance.acts[a].slots] == [s[0].lower() for s in original["slot_values"]]
        assert utterance.annotations["labels"]["dialogue_acts"][a] == original  # kept verbatim


def test_llm_users_without_acts_convert_without_warnings() -> None:
    dialogues, report = _convert(LLM_USERS)
    assert report.warnings == {}
    assert all(not u.acts for d in dialogues for u in d.utterances if u.role is Role.USER)


def test_a_problem_names_the_file_dialogue_and_utterance(tmp_path: Path) -> None:
    records = json.loads(EMPTY_INTENTS.read_text(encoding="utf-8"))[:2]
    records[1]["conversation"][3]["dialogue_acts"] = [{"intent": 7, "slot_values": []}]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    with pytest.raises(DataError) as caught:
        list(convert_dataset(build_reader("dialoguekit", {}), path))
    message = str(caught.value)
    assert f"{path}, record 2, field 'conversation[3].dialogue_acts[0].intent'" in message
    assert repr(records[1]["conversation ID"]) in message
    assert "looks like" not in message


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_the_files_are_recognised_as_dialoguekit_not_crsarena_dial(path: Path) -> None:
    assert looks_like(path) == ("dialoguekit", "UserSimCRS's DialogueKit JSON")
    assert other_format_hint("dialoguekit", path) == ""
    assert "UserSimCRS's DialogueKit JSON" in other_format_hint("redial", path)


def test_convert_then_evaluate_reports_per_crs_and_simulator(tmp_path: Path) -> None:
    converted, outputs = [], []
    for path in FILES:
        out = tmp_path / f"{path.stem}.jsonl"
        result = runner.invoke(app, ["data", "convert", "dialoguekit", str(path), "-o", str(out)])
        assert result.exit_code == 0, result.output
        converted.append(out.read_text(encoding="utf-8"))
        outputs.append(" ".join(result.output.split()))
    assert f"warning: {len(_acts_without_intent(NULL_INTENTS))} {ACTS_WITHOUT_INTENT}" in outputs[0]
    assert f"warning: {len(_acts_without_intent(EMPTY_INTENTS))} {ACTS_WITHOUT_INTENT}" in outputs[1]
    assert "warning" not in outputs[2]
    merged = tmp_path / "all.jsonl"
    merged.write_text("".join(converted), encoding="utf-8")
    result = runner.invoke(app, ["evaluate", str(merged), "--annotator", "none", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "all-eval" / "summary.json").read_text(encoding="utf-8"))
    groups = {(g["crs_id"], g["simulator_id"]): g for g in summary["groups"]}
    assert set(groups) == {
        ("KBRD_ReDial", "ABUS_ReDial"),
        ("IAIMovieBot", "ABUS_INSPIRED"),
        ("KBRD_ReDial", "Dual_LLM_nemo_ReDial"),
    }
    for path in FILES:
        raw = json.loads(path.read_text(encoding="utf-8"))
        group = groups[(raw[0]["agent"]["id"], raw[0]["user"]["id"])]
        errors = [r["metadata"]["error"]["error_type"] for r in raw if (r.get("metadata") or {}).get("error")]
        assert group["n_dialogues"] == len(raw)
        assert group["n_evaluable"] == len(raw) - len(errors)
        assert sum(group["errors"].values()) == len(errors)
        assert all(kind.startswith("loop: ") for kind in group["errors"])
