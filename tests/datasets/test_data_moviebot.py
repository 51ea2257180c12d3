"""MovieBot converter on UserSimCRS's annotated MovieBot dialogues."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from crsim.core.errors import DataError
from crsim.core.plugins import Params
from crsim.datasets.base import ConversionReport, convert_dataset
from crsim.datasets.intents import MOVIEBOT_CRS_INTENTS, MOVIEBOT_USER_INTENTS, map_intent
from crsim.datasets.moviebot import MovieBotReader
from crsim.model import Dialogue, Intent, Role

FILE = Path(__file__).parents[1] / "fixtures" / "moviebot" / "annotated_dialogues.json"


def convert(path: Path = FILE, **kwargs: Any) -> list[Dialogue]:
    return list(convert_dataset(MovieBotReader(Params()), path, **kwargs))


def test_counts_match_the_file() -> None:
    data = json.loads(FILE.read_text(encoding="utf-8"))
    dialogues = convert()
    assert len(dialogues) == len(data) == 8
    assert sum(len(d.utterances) for d in dialogues) == sum(len(d["conversation"]) for d in data) == 210
    raw_labels = Counter(
        (u["participant"], a["intent"]) for d in data for u in d["conversation"] for a in u["dialogue_acts"]
    )
    labels = Counter(
        ({"user": "USER", "crs": "AGENT"}[u.role], label)
        for d in dialogues
        for u in d.utterances
        for label in u.annotations["labels"]["intents"]
    )
    assert labels == raw_labels
    assert sum(
        1 for d in dialogues for u in d.utterances for a in u.acts if a.intent == Intent.RECOMMEND
    ) == (raw_labels[("AGENT", "REVEAL")] + raw_labels[("AGENT", "REVEAL.SIMILAR")])


def test_spot_checks() -> None:
    first = convert()[0]
    assert first.id == "moviebot/annotated/39GHHAVOMGCMCWD43ZNZ2ARD9RF4JH"
    assert first.metadata["conversation_id"] == "39GHHAVOMGCMCWD43ZNZ2ARD9RF4JH"
    opening = first.utterances[0]
    assert opening.role == Role.CRS and opening.text.startswith("Hi there. I am IAI MovieBot")
    assert [a.intent for a in opening.acts] == [Intent.GREETING]
    elicit, answer = first.utterances[2], first.utterances[3]
    assert [(a.intent, a.slots) for a in elicit.acts] == [("elicit", [("genre", "genres")])]
    assert [(a.intent, a.slots) for a in answer.acts] == [
        ("disclose", [("genre", "action"), ("genre", "fantasy")])
    ]
    offer = first.utterances[6]
    assert [(a.intent, a.slots) for a in offer.acts] == [("recommend", [("title", "Kung Fu Hustle")])]
    # the same label means different things on the two sides
    assert first.utterances[7].acts[0].intent == Intent.REQUEST_RECOMMENDATION  # user INQUIRE
    assert map_intent("moviebot", "INQUIRE", role="crs") == Intent.ELICIT
    with pytest.raises(ValueError, match="pass role"):
        map_intent("moviebot", "INQUIRE")


def test_tables_map_to_crsim_intents() -> None:
    intents = {i.value for i in Intent}
    assert set(MOVIEBOT_USER_INTENTS.values()) <= intents and set(MOVIEBOT_CRS_INTENTS.values()) <= intents


def test_round_trip_through_json() -> None:
    for dialogue in convert():
        assert Dialogue.model_validate_json(dialogue.model_dump_json()) == dialogue


# --- bad input ----------------------------------------------------------------------------------


def records() -> list[dict[str, Any]]:
    return list(json.loads(FILE.read_text(encoding="utf-8"))[:3])


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d.pop("conversation"), "conversation"),
        (lambda d: d.pop("conversation_id"), "conversation_id"),
        (lambda d: d["conversation"].clear(), "conversation"),
        (lambda d: d["conversation"][1].update(participant="BOT"), "conversation[1].participant"),
        (lambda d: d["conversation"][1].pop("utterance"), "conversation[1].utterance"),
        (
            lambda d: d["conversation"][1]["dialogue_acts"][0].update(intent="SHRUG"),
            "conversation[1].dialogue_acts[0].intent",
        ),
        (
            lambda d: d["conversation"][2]["dialogue_acts"][0].update(slot_values=[[None, "x"]]),
            "conversation[2].dialogue_acts[0].slot_values[0]",
        ),
    ],
)
def test_bad_record_names_file_record_and_field(tmp_path: Path, change: Any, field: str) -> None:
    data = records()
    change(data[1])
    path = tmp_path / "annotated_dialogues.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DataError) as info:
        convert(path)
    assert (info.value.path, info.value.record, info.value.field) == (str(path), 2, field)
    report = ConversionReport()
    assert len(convert(path, skip_invalid=True, report=report)) == 2 and report.skipped == 1


def test_truncated_and_non_utf8_files(tmp_path: Path) -> None:
    path = tmp_path / "annotated_dialogues.json"
    path.write_text(FILE.read_text(encoding="utf-8")[:5000], encoding="utf-8")
    with pytest.raises(DataError, match="not valid JSON"):
        convert(path)
    path.write_bytes(FILE.read_bytes().replace(b"hello", b"h\xe9llo", 1))
    with pytest.raises(DataError, match="not UTF-8"):
        convert(path)
