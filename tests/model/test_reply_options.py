"""Buttons on the record: a CRS utterance's options and a user utterance's chosen option (format 1.3),
old records read and written back byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from crsim.model.dialogue import Dialogue, ReplyOption, Role, Termination, TerminationReason, Utterance

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "dialogue_format_1_2.jsonl"


def test_a_record_of_format_1_2_round_trips_byte_identically() -> None:
    """Written by crsim before options existed (the quickstart's shortest dialogue)."""
    line = FIXTURE.read_text(encoding="utf-8").strip()
    dialogue = Dialogue.model_validate_json(line)
    assert dialogue.format_version == "1.2"
    assert all(not u.options and u.chosen_option is None for u in dialogue.utterances)
    assert dialogue.termination is not None and dialogue.termination.detail is None
    assert dialogue.model_dump_json() == line


def test_options_and_the_chosen_option_round_trip() -> None:
    seen = ReplyOption(label="Seen it", payload="I have already watched it.")
    other = ReplyOption(label="Something else")
    dialogue = Dialogue(
        id="d1",
        utterances=[
            Utterance(role=Role.CRS, text="How about Heat (1995)?", options=[seen, other]),
            Utterance(role=Role.USER, text="Seen it", chosen_option=seen),
        ],
        termination=Termination(reason=TerminationReason.USER_ENDED, detail="no_progress"),
    )
    raw = dialogue.model_dump_json()
    data = json.loads(raw)
    assert data["utterances"][0]["options"] == [
        {"label": "Seen it", "payload": "I have already watched it."},
        {"label": "Something else", "payload": None},
    ]
    assert "chosen_option" not in data["utterances"][0] and "options" not in data["utterances"][1]
    assert data["termination"]["detail"] == "no_progress"
    again = Dialogue.model_validate_json(raw)
    assert again == dialogue and again.model_dump_json() == raw


@pytest.mark.parametrize("bad", [{"payload": "x"}, {"label": 3}, {"label": "a", "colour": "red"}])
def test_a_malformed_option_names_its_field(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match=r"utterances\.0\.options\.0"):
        Dialogue.model_validate({"id": "d", "utterances": [{"role": "crs", "text": "hi", "options": [bad]}]})
