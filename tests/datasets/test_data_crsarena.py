"""CRSArena-Dial and CRSArena-Eval converters, checked label by label against the raw files."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from crsim.core.errors import DataError
from crsim.datasets.base import ConversionReport, convert_dataset
from crsim.datasets.crsarena import CrsArenaDialReader, CrsArenaEvalReader, CrsArenaParams
from crsim.domains.movielens import movie_items
from crsim.model import Dialogue, Role

FIXTURES = Path(__file__).parents[1] / "fixtures"
DIAL = FIXTURES / "crsarena_dial"
EVAL = FIXTURES / "crsarena_eval" / "crs_arena_eval.json.gz"
EVAL_OLD = FIXTURES / "crsarena_eval" / "hideaki-j" / "crs_arena_eval.json.gz"


def raw(path: Path) -> Any:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


@pytest.fixture(scope="module")
def dial() -> list[Dialogue]:
    return list(convert_dataset(CrsArenaDialReader(CrsArenaParams()), DIAL))


@pytest.fixture(scope="module")
def evaluated() -> list[Dialogue]:
    return list(convert_dataset(CrsArenaEvalReader(CrsArenaParams()), EVAL))


def test_dial_counts_per_setting(dial: list[Dialogue]) -> None:
    for setting in ("closed", "open"):
        data = raw(DIAL / f"crs_arena_dial_{setting}.json.gz")
        ours = [d for d in dial if d.metadata["split"] == setting]
        assert len(ours) == len(data)
        assert sum(len(d.utterances) for d in ours) == sum(len(d["conversation"]) for d in data)
        assert Counter(d.metadata["human"]["sentiment"] for d in ours) == Counter(
            d["metadata"]["sentiment"] for d in data
        )
        assert Counter(d.crs_id for d in ours) == Counter(d["agent"]["id"] for d in data)
    assert len(dial) == 474


def test_dial_spot_checks(dial: list[Dialogue]) -> None:
    first = next(d for d in dial if d.id.endswith("barcor_redial_03368a16-93bd-4b21-885d-b9a21e3498ba"))
    assert first.id.startswith("crsarena_dial/open/")
    assert first.metadata["crs"] == "barcor_redial" and first.metadata["crs_dataset"] == "redial"
    assert first.metadata["human"] == {"sentiment": "frustrated"}
    opening, offer = first.utterances[0], first.utterances[1]
    assert (opening.role, opening.text) == (Role.USER, "Recommend me r movi in the science fiction genre ")
    assert opening.annotations["dialoguekit"]["utterance ID"].endswith("_0")
    assert [movie_items()[i].display_title for i in offer.recommended_items] == ["Blade Runner 2049 (2017)"]


def test_eval_counts_and_labels_match_the_file(evaluated: list[Dialogue]) -> None:
    data = raw(EVAL)
    assert len(evaluated) == len(data) == 467
    assert Counter(d.metadata["split"] for d in evaluated) == {"redial": 267, "opendialkg": 200}
    assert sum(len(d.utterances) for d in evaluated) == sum(len(d["dialogue"]) for d in data) == 4473
    turns = [t for d in data for t in d["dialogue"]]
    ours = [u for d in evaluated for u in d.utterances]
    for label in ("relevance", "interestingness"):
        in_file = [
            t["turn_level_aggregated"][label] for t in turns if label in t.get("turn_level_aggregated", {})
        ]
        kept = [u.annotations["human"][label] for u in ours if label in u.annotations.get("human", {})]
        assert kept == in_file
    # the README counts 2,235 relevance labels; five rated turns carry only interestingness
    assert sum("relevance" in u.annotations.get("human", {}) for u in ours) == 2230
    assert sum("interestingness" in u.annotations.get("human", {}) for u in ours) == 2235
    assert all(u.role == Role.CRS for u in ours if "human" in u.annotations)
    assert [d.metadata["human"] for d in evaluated] == [d["dial_level_aggregated"] for d in data]
    assert Counter(d.metadata["crs"] for d in evaluated)["crbcrs_redial"] == 60


def test_eval_older_copy_gives_the_same_labels(evaluated: list[Dialogue]) -> None:
    older = list(convert_dataset(CrsArenaEvalReader(CrsArenaParams(link_items=False)), EVAL_OLD))
    assert [d.id for d in older] == [d.id for d in evaluated]
    assert [d.metadata["human"] for d in older] == [d.metadata["human"] for d in evaluated]
    assert [[u.annotations.get("human") for u in d.utterances] for d in older] == [
        [u.annotations.get("human") for u in d.utterances] for d in evaluated
    ]
    assert all("dialogue_overall" in d.metadata["human"] for d in older)


def test_eval_spot_checks_and_json_round_trip(evaluated: list[Dialogue]) -> None:
    first = evaluated[0]
    assert first.id == "crsarena_eval/redial/barcor_redial_03368a16-93bd-4b21-885d-b9a21e3498ba"
    assert (
        first.crs_id == "barcor_redial" and first.metadata["user"] == "03368a16-93bd-4b21-885d-b9a21e3498ba"
    )
    assert first.utterances[1].annotations["human"] == {"relevance": 2, "interestingness": 2}
    assert first.metadata["human"]["dialogue_overall"] == 1
    # a list of three films; "Star Wars: Episode VIII – The Last Jedi" is catalogued without the
    # episode number and is not found by the linker
    titles = [movie_items()[i].title for i in first.utterances[3].recommended_items]
    assert titles == ["Blade Runner 2049", "Arrival"]
    for dialogue in evaluated[:50]:
        assert Dialogue.model_validate_json(dialogue.model_dump_json()) == dialogue


def test_named_items_are_recommended_or_mentioned_never_both(evaluated: list[Dialogue]) -> None:
    """Titles the user named before are mentioned by the CRS, not recommended; all in the fields."""
    crs_mentions = 0
    for dialogue in evaluated:
        for u in dialogue.utterances:
            assert not set(u.recommended_items) & set(u.mentioned_items)
            assert "mentioned_items" not in u.annotations
            if u.role == Role.USER:
                assert not u.recommended_items
            else:
                crs_mentions += len(u.mentioned_items)
    assert crs_mentions > 0


def test_linking_can_be_turned_off() -> None:
    reader = CrsArenaEvalReader(CrsArenaParams(link_items=False))
    dialogues = list(convert_dataset(reader, EVAL))
    assert not any(u.recommended_items or u.mentioned_items for d in dialogues for u in d.utterances)


# --- bad input ----------------------------------------------------------------------------------


def sample() -> list[dict[str, Any]]:
    return list(raw(EVAL)[:3])


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d.pop("conv_id"), "conv_id"),
        (lambda d: d.update(conv_id="mystery_crs_1234"), "conv_id"),
        (lambda d: d["dialogue"].clear(), "dialogue"),
        (
            lambda d: d["dialogue"][1]["turn_level_aggregated"].update(relevance=7),
            "dialogue[1].turn_level_aggregated.relevance",
        ),
        (lambda d: d["dialogue"][0].update(turn_level_aggregated={"relevance": 1}), "dialogue[0]"),
        (lambda d: d["dialogue"][2].update(turn_ind=5), "dialogue[2].turn_ind"),
        (lambda d: d["dialogue"][2].update(role="SYSTEM"), "dialogue[2].role"),
        (lambda d: d["dial_level_aggregated"].pop("efficiency"), "dial_level_aggregated.efficiency"),
        (
            lambda d: d["dial_level_aggregated"].update(understanding="good"),
            "dial_level_aggregated.understanding",
        ),
    ],
)
def test_bad_eval_record(tmp_path: Path, change: Any, field: str) -> None:
    data = sample()
    change(data[2])
    path = tmp_path / "crs_arena_eval.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    reader = CrsArenaEvalReader(CrsArenaParams(link_items=False))
    with pytest.raises(DataError) as info:
        list(convert_dataset(reader, path))
    assert (info.value.path, info.value.record, info.value.field) == (str(path), 3, field)
    report = ConversionReport()
    assert len(list(convert_dataset(reader, path, skip_invalid=True, report=report))) == 2
    assert report.skipped == 1


def test_bad_dial_record_and_files(tmp_path: Path) -> None:
    data = raw(DIAL / "crs_arena_dial_open.json.gz")[:4]
    data[0]["metadata"] = {}
    path = tmp_path / "crs_arena_dial_open.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    reader = CrsArenaDialReader(CrsArenaParams(link_items=False))
    with pytest.raises(DataError) as info:
        list(convert_dataset(reader, path))
    assert (info.value.record, info.value.field) == (1, "metadata.sentiment")
    path.write_text(json.dumps(data)[:-100], encoding="utf-8")
    with pytest.raises(DataError, match="not valid JSON"):
        list(convert_dataset(reader, path))
    gz = tmp_path / "crs_arena_dial_closed.json.gz"
    gz.write_bytes(gzip.compress(b'[{"conversation ID": "\xff"}]'))
    with pytest.raises(DataError, match="not UTF-8"):
        list(convert_dataset(reader, gz))
    gz.write_bytes(gzip.compress(json.dumps(data).encode())[:-30])
    with pytest.raises(DataError, match="damaged or truncated archive"):
        list(convert_dataset(reader, gz))
