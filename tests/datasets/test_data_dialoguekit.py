"""DialogueKit JSON import and export, round-tripped on the real IARD, MovieBot and CRS Arena files."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from crsim.core.errors import DataError
from crsim.core.plugins import Params
from crsim.datasets.base import ConversionReport, DatasetReader, convert_dataset
from crsim.datasets.crsarena import CrsArenaDialReader, CrsArenaEvalReader, CrsArenaParams
from crsim.datasets.dialoguekit import DialogueKitParams, DialogueKitReader, write_dialoguekit
from crsim.datasets.iard import IardParams, IardReader
from crsim.datasets.moviebot import MovieBotReader
from crsim.model import Dialogue, DialogueAct, InformationNeed, Role, Utterance

FIXTURES = Path(__file__).parents[1] / "fixtures"
GOLD = FIXTURES / "iard" / "formatted_IARD_annotated_gold.json.gz"
PARTIAL = FIXTURES / "iard" / "formatted_IARD_annotated_partially.json.gz"
ORIGINAL = FIXTURES / "iard" / "umap2020_IARD_Cai.json.gz"
MOVIEBOT = FIXTURES / "moviebot" / "annotated_dialogues.json"
DIAL_OPEN = FIXTURES / "crsarena_dial" / "crs_arena_dial_open.json.gz"
EVAL = FIXTURES / "crsarena_eval" / "crs_arena_eval.json.gz"


def text_of(path: Path) -> str:
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return data.decode("utf-8")


def generic(path: Path, **params: Any) -> list[Dialogue]:
    return list(convert_dataset(DialogueKitReader(DialogueKitParams(**params)), path))


@pytest.mark.parametrize(
    ("reader", "path"),
    [
        (IardReader(IardParams()), GOLD),
        (IardReader(IardParams()), PARTIAL),
        (MovieBotReader(Params()), MOVIEBOT),
    ],
)
def test_dialoguekit_unified_dialoguekit_reproduces_the_file_byte_for_byte(
    tmp_path: Path, reader: DatasetReader, path: Path
) -> None:
    dialogues = list(convert_dataset(reader, path))
    out = tmp_path / "out.json"
    assert write_dialoguekit(dialogues, out) == len(dialogues)
    assert out.read_text(encoding="utf-8") == text_of(path)


def test_crs_arena_dial_reproduces_the_json(tmp_path: Path) -> None:
    """Same JSON value; the file's key order and non-ASCII characters are written differently."""
    dialogues = list(convert_dataset(CrsArenaDialReader(CrsArenaParams()), DIAL_OPEN))
    write_dialoguekit(dialogues, tmp_path / "out.json")
    assert json.loads((tmp_path / "out.json").read_text(encoding="utf-8")) == json.loads(text_of(DIAL_OPEN))


def test_reannotated_acts_are_written_instead_of_the_originals(tmp_path: Path) -> None:
    dialogue = next(iter(convert_dataset(IardReader(IardParams()), GOLD)))
    first = dialogue.utterances[0]
    dialogue.utterances[0] = first.model_copy(update={"acts": [DialogueAct(intent="greeting")]})
    write_dialoguekit([dialogue], tmp_path / "out.json")
    written = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))[0]["conversation"]
    assert written[0]["dialogue_acts"] == [{"intent": "greeting", "slot_values": []}]
    assert written[1]["dialogue_acts"] == json.loads(text_of(GOLD))[0]["conversation"][1]["dialogue_acts"]


def crsim_dialogue() -> Dialogue:
    """A dialogue as crsim's own loop writes it, with fields DialogueKit has no place for."""
    return Dialogue(
        id="run/abus/7",
        user_id="u7",
        crs_id="popular",
        information_need=InformationNeed(constraints={"genre": "comedy"}, requests=["plot"]),
        metadata={"seed": 3},
        utterances=[
            Utterance(
                role=Role.USER,
                text="Any comedy?",
                acts=[DialogueAct(intent="disclose", slots=[("genre", "comedy")])],
            ),
            Utterance(
                role=Role.CRS,
                text="Try Airplane! (1980).",
                acts=[
                    DialogueAct(intent="recommend", slots=[("title", "Airplane!")]),
                    DialogueAct(intent="ask"),
                ],
                recommended_items=["2791"],
                annotations={"mentioned_items": ["2791"]},
            ),
            Utterance(
                role=Role.USER,
                text="What is it about?",
                acts=[DialogueAct(intent="inquire", slots=[("plot", None)])],
            ),
            Utterance(
                role=Role.CRS,
                text="I don't have details about Airplane! (1980).",
                acts=[DialogueAct(intent="other")],
                mentioned_items=["2791"],
            ),
        ],
    )


@pytest.fixture(scope="module")
def sources() -> list[Dialogue]:
    iard = list(convert_dataset(IardReader(IardParams()), ORIGINAL))[:30]
    gold = list(convert_dataset(IardReader(IardParams()), GOLD))[:10]
    arena = list(convert_dataset(CrsArenaEvalReader(CrsArenaParams()), EVAL))[:30]
    return [*iard, *gold, *arena, crsim_dialogue()]


def test_unified_dialoguekit_unified_keeps_texts_roles_and_acts(
    tmp_path: Path, sources: list[Dialogue]
) -> None:
    dialogues = sources
    write_dialoguekit(dialogues, tmp_path / "out.json")
    back = generic(tmp_path / "out.json")
    assert len(back) == len(dialogues)
    for before, after in zip(dialogues, back, strict=True):
        assert [(u.role, u.text) for u in after.utterances] == [(u.role, u.text) for u in before.utterances]
        if before.metadata.get("label_scheme"):  # originals written back: read them with their scheme
            continue
        assert [u.acts for u in after.utterances] == [u.acts for u in before.utterances]
    gold = dialogues[30:40]
    write_dialoguekit(gold, tmp_path / "gold.json")
    gold_back = generic(tmp_path / "gold.json", scheme="iard")
    assert [[u.acts for u in d.utterances] for d in gold_back] == [
        [u.acts for u in d.utterances] for d in gold
    ]
    native = back[-1]
    assert native.utterances[2].acts == [DialogueAct(intent="inquire", slots=[("plot", None)])]
    assert native.metadata["dialoguekit"]["agent"] == {"id": "popular", "type": "AGENT"}


def test_lossless_export_restores_everything(tmp_path: Path, sources: list[Dialogue]) -> None:
    dialogues = sources
    write_dialoguekit(dialogues, tmp_path / "out.json", lossless=True)
    assert generic(tmp_path / "out.json") == dialogues
    record = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))[-1]
    assert record["conversation"][1]["crsim"]["recommended_items"] == ["2791"]
    assert record["conversation"][1]["dialogue_acts"][0] == {
        "intent": "recommend",
        "slot_values": [["TITLE", "Airplane!", None, None]],
    }


def test_empty_export_and_generic_ids(tmp_path: Path) -> None:
    assert write_dialoguekit([], tmp_path / "none.json") == 0
    assert json.loads((tmp_path / "none.json").read_text(encoding="utf-8")) == []
    dialogues = generic(GOLD, dataset="iard", scheme="iard")
    assert dialogues[0].id == "iard/formatted_IARD_annotated_gold/474"
    assert dialogues[0].utterances[0].acts[1].intent == "request_recommendation"
    assert generic(GOLD)[0].utterances[0].acts[1].intent == "IQU"  # no scheme: labels as they are
    with pytest.raises(ValidationError, match="unknown label scheme"):
        DialogueKitParams(scheme="nope")


def test_slots_key_variant(tmp_path: Path) -> None:
    record = {
        "conversation_id": "1",
        "conversation": [
            {
                "participant": "USER",
                "utterance": "horror",
                "dialogue_acts": [{"intent": "x", "slots": [["GENRE", "horror"]]}],
            }
        ],
    }
    (tmp_path / "a.json").write_text(json.dumps([record]), encoding="utf-8")
    assert generic(tmp_path / "a.json")[0].utterances[0].acts == [
        DialogueAct(intent="x", slots=[("genre", "horror")])
    ]


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"conversation_id": "1", "conversation": "hello"}, "conversation"),
        ({"conversation_id": "", "conversation": []}, "conversation_id"),
        ({"conversation_id": "1", "conversation": [{"participant": "USER"}]}, "conversation[0].utterance"),
        (
            {
                "conversation_id": "1",
                "conversation": [{"participant": "USER", "utterance": "x", "dialogue_acts": {}}],
            },
            "conversation[0].dialogue_acts",
        ),
        (
            {
                "conversation_id": "1",
                "conversation": [{"participant": "AGENT", "utterance": "x", "crsim": {"acts": 5}}],
            },
            "conversation[0].crsim",
        ),
    ],
)
def test_bad_records(tmp_path: Path, record: dict[str, Any], field: str) -> None:
    good = {"conversation_id": "2", "conversation": [{"participant": "USER", "utterance": "hi"}]}
    path = tmp_path / "d.json"
    path.write_text(json.dumps([good, record]), encoding="utf-8")
    with pytest.raises(DataError) as info:
        generic(path)
    assert (info.value.record, info.value.field) == (2, field)
    report = ConversionReport()
    reader = DialogueKitReader(DialogueKitParams())
    assert len(list(convert_dataset(reader, path, skip_invalid=True, report=report))) == 1
    assert report.skipped == 1


def test_folder_without_files(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"no \*\.json files"):
        generic(tmp_path)


def _record(conversation_id: str, text: str) -> dict[str, Any]:
    return {"conversation_id": conversation_id, "conversation": [{"participant": "USER", "utterance": text}]}


def test_repeated_conversation_ids_are_made_unique_in_file_order(tmp_path: Path) -> None:
    """The first record keeps its id; later ones get the first free -2, -3, ... (an original id that
    a renaming already took is renamed in turn); the export still writes the original ids."""
    ids = ["x", "x", "x-2", "y", "x"]
    path = tmp_path / "sim.json"
    path.write_text(json.dumps([_record(i, f"text {n}") for n, i in enumerate(ids)]), encoding="utf-8")
    report = ConversionReport()
    dialogues = list(convert_dataset(DialogueKitReader(DialogueKitParams()), path, report=report))
    assert [d.id.removeprefix("dialoguekit/sim/") for d in dialogues] == ["x", "x-2", "x-2-2", "y", "x-3"]
    assert [d.metadata.get("original_id") for d in dialogues] == [
        None,
        "dialoguekit/sim/x",
        "dialoguekit/sim/x-2",
        None,
        "dialoguekit/sim/x",
    ]
    assert [d.utterances[0].text for d in dialogues] == [f"text {n}" for n in range(5)]
    assert (report.written, report.renamed) == (5, 3)
    assert report.renamings[0] == f"{path}, record 2: dialoguekit/sim/x -> dialoguekit/sim/x-2"
    write_dialoguekit(dialogues, tmp_path / "back.json")
    back = json.loads((tmp_path / "back.json").read_text(encoding="utf-8"))
    assert [r["conversation_id"] for r in back] == ids
    # the same file converts to the same ids again
    again = list(convert_dataset(DialogueKitReader(DialogueKitParams()), path))
    assert [d.id for d in again] == [d.id for d in dialogues]
