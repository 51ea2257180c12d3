"""IARD converter on the real files: the original release and UserSimCRS's annotated copies."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from crsim.core.errors import DataError
from crsim.datasets.base import ConversionReport, convert_dataset
from crsim.datasets.iard import IardParams, IardReader
from crsim.datasets.intents import IARD_INTENTS, map_intent
from crsim.model import Dialogue, Intent, Role
from crsim.model.mentions import named_items

FIXTURES = Path(__file__).parents[1] / "fixtures"
ORIGINAL = FIXTURES / "iard" / "umap2020_IARD_Cai.json.gz"
GOLD = FIXTURES / "iard" / "formatted_IARD_annotated_gold.json.gz"
PARTIAL = FIXTURES / "iard" / "formatted_IARD_annotated_partially.json.gz"
CATALOG = FIXTURES / "redial" / "movies_with_mentions.csv.gz"


def raw(path: Path) -> Any:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def convert(path: Path, catalog: Path | None = CATALOG, **kwargs: Any) -> list[Dialogue]:
    return list(convert_dataset(IardReader(IardParams(catalog=catalog)), path, **kwargs))


@pytest.fixture(scope="module")
def original() -> list[Dialogue]:
    return convert(ORIGINAL)


def test_original_counts_match_the_file(original: list[Dialogue]) -> None:
    data = raw(ORIGINAL)
    utterances = [u for d in data.values() for u in d["dialogue_info"].values()]
    assert len(original) == len(data) == 336
    assert sum(len(d.utterances) for d in original) == len(utterances) == 4583
    by_role = Counter(u.role for d in original for u in d.utterances)
    assert by_role[Role.USER] == sum(u["role"] == "seeker" for u in utterances)
    assert sum(len(u.acts) for d in original for u in d.utterances) == sum(
        len(u["sub-intent/action"]) for u in utterances
    )
    mentions = sum(len(re.findall(r"@\d+", u["utterance_text"])) for u in utterances)
    linked = sum(len(named_items(u)) for d in original for u in d.utterances)
    assert linked <= mentions and linked > 2000  # repeated mentions in one utterance count once


def test_first_dialogue_spot_checks(original: list[Dialogue]) -> None:
    first = original[0]
    assert first.id == "iard/original/474"
    assert first.metadata["worker_ids"] == {"seeker": 1, "recommender": 16}
    hello = first.utterances[0]
    assert (hello.role, hello.text) == (Role.USER, "Hi can you help me find a movie to watch")
    assert [a.intent for a in hello.acts] == [Intent.OTHER, Intent.REQUEST_RECOMMENDATION]
    assert hello.annotations["labels"] == {"intents": ["OTH", "IQU"], "top_level": ["OTH", "AskForRec"]}
    offer = first.utterances[1]
    assert offer.text == "Yes, how about It (2017)  ?"
    assert offer.recommended_items == ["187028"] and offer.annotations["labels"]["intents"] == ["REC-E"]
    items = IardReader(IardParams(catalog=CATALOG)).items(ORIGINAL)
    assert items["187028"].display_title == "It (2017)"
    # R6 only responds (RESP): it mentions films but recommends none
    reply = first.utterances[5]
    assert reply.mentioned_items == ["89770", "170119"] and reply.recommended_items == []
    assert offer.mentioned_items == [] and "mentioned_items" not in offer.annotations  # recommended only
    assert first.utterances[12].annotations["labels"]["accepted_recommendation"] is True
    assert first.metadata["accepted_recommendation"] == [13]


def test_recommended_items_skip_what_the_seeker_named(original: list[Dialogue]) -> None:
    for dialogue in original:
        seen: set[str] = set()
        for u in dialogue.utterances:
            if u.role == Role.USER:
                seen.update(u.mentioned_items)
            assert not seen & set(u.recommended_items)
            assert not set(u.mentioned_items) & set(u.recommended_items)
    assert sum(len(u.recommended_items) for d in original for u in d.utterances) > 1000


def test_items_without_catalog_come_from_the_mentions() -> None:
    data = raw(ORIGINAL)
    ids = {
        m
        for d in data.values()
        for u in d["dialogue_info"].values()
        for m in re.findall(r"@(\d+)", u["utterance_text"])
    }
    items = IardReader(IardParams()).items(ORIGINAL)
    assert set(items.ids) == ids and len(ids) == 1096
    assert items["203424"].title == "The Silence of the Lambs"


def test_augmented_gold_and_partial() -> None:
    gold, partial = convert(GOLD), convert(PARTIAL)
    gold_raw, partial_raw = raw(GOLD), raw(PARTIAL)
    assert (len(gold), len(partial)) == (len(gold_raw), len(partial_raw)) == (77, 259)
    assert sum(len(d.utterances) for d in gold) == sum(len(d["conversation"]) for d in gold_raw) == 1103
    acts = [a for d in gold for u in d.utterances for a in u.acts]
    assert len(acts) == sum(len(u["dialogue_acts"]) for d in gold_raw for u in d["conversation"]) == 1707
    first = gold[0]
    assert first.id == "iard/gold/474" and partial[0].id == "iard/partial/8502"
    assert first.metadata["accepted_recommendations"] == ["The Conjuring"]
    assert first.metadata["worker_ids"] == {"seeker": 1, "recommender": 16}
    critique = first.utterances[2]
    assert [(a.intent, a.slots) for a in critique.acts] == [
        ("reject", [("genre", "horror")]),
        ("disclose", [("genre", "thrillers")]),
    ]
    slots = Counter(s for a in acts for s, _ in a.slots)
    assert slots["keyword"] == 200 and slots["title"] == 635  # KEYWORDS -> keyword, TITLE -> title
    assert (
        first.utterances[1].text
        == gold_raw[0]["conversation"][1]["utterance"]
        == "Yes, how about It (2017) ?"
    )


def test_round_trip_through_json(original: list[Dialogue]) -> None:
    for dialogue in [*original[:20], *convert(GOLD)[:20]]:
        assert Dialogue.model_validate_json(dialogue.model_dump_json()) == dialogue


def test_intent_tables() -> None:
    assert map_intent("iard", "REC-S") == Intent.RECOMMEND
    assert map_intent("iard", "ACC", role="user") == Intent.ACCEPT
    assert set(IARD_INTENTS.values()) <= {i.value for i in Intent}
    with pytest.raises(KeyError, match="XYZ"):
        map_intent("iard", "XYZ")


# --- bad input ----------------------------------------------------------------------------------


def write(tmp_path: Path, data: Any, name: str = "umap2020_IARD_Cai.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def sample() -> dict[str, Any]:
    data = raw(ORIGINAL)
    return {key: data[key] for key in list(data)[:3]}


def test_truncated_file(tmp_path: Path) -> None:
    path = tmp_path / "iard.json"
    path.write_text(json.dumps(sample())[:-40], encoding="utf-8")
    with pytest.raises(DataError, match="not valid JSON") as info:
        convert(path)
    assert info.value.path == str(path)


def test_non_utf8(tmp_path: Path) -> None:
    path = tmp_path / "iard.json"
    path.write_bytes(json.dumps(sample()).encode().replace(b"Hi can", b"Hi \xff can"))
    with pytest.raises(DataError, match="not UTF-8"):
        convert(path)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d.pop("dialogue_info"), "dialogue_info"),
        (lambda d: d["dialogue_info"]["S1"].pop("role"), "dialogue_info.S1.role"),
        (lambda d: d["dialogue_info"]["S1"].update(role="narrator"), "dialogue_info.S1.role"),
        (
            lambda d: d["dialogue_info"]["S1"].update({"sub-intent/action": ["ZZZ"]}),
            "dialogue_info.S1.sub-intent/action",
        ),
        (lambda d: d["dialogue_info"]["S3"].update(worker_id=99), "dialogue_info.S3.worker_id"),
        (lambda d: d["dialogue_info"].clear(), "dialogue_info"),
        (lambda d: d.update(accepted_recommendation=[99]), "accepted_recommendation[0]"),
        (
            lambda d: d["dialogue_info"]["R2"].update(utterance_text="@999999999 <Nothing (2000)>"),
            "dialogue_info.R2.utterance_text",
        ),
    ],
)
def test_bad_record_names_file_record_and_field(tmp_path: Path, change: Any, field: str) -> None:
    data = sample()
    change(data["474"])
    path = write(tmp_path, data)
    with pytest.raises(DataError) as info:
        convert(path)
    assert (info.value.path, info.value.record, info.value.field) == (str(path), 1, field)
    report = ConversionReport()
    assert len(convert(path, skip_invalid=True, report=report)) == 2
    assert report.skipped == 1 and "record 1" in report.errors[0]


def test_missing_catalog_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="catalog not found"):
        convert(ORIGINAL, catalog=tmp_path / "none.csv")


def test_a_damaged_catalog_is_a_data_error(tmp_path: Path) -> None:
    data = CATALOG.read_bytes()
    cut = tmp_path / "movies_with_mentions.csv.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match="truncated archive") as info:
        convert(ORIGINAL, catalog=cut)
    assert info.value.path == str(cut)
