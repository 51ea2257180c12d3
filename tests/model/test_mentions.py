"""The rule that tells recommended from mentioned items in linked CRS text."""

from __future__ import annotations

from crsim.eval.metrics import SRRR
from crsim.model.dialogue import FORMAT_VERSION, Dialogue, Utterance
from crsim.model.mentions import named_items, split_linked, split_named


def test_new_items_are_recommended_and_items_named_before_are_mentioned() -> None:
    assert split_linked(["a", "b", "a", "c"], {"b"}) == (["a", "c"], ["b"])


def test_nothing_named_before_means_everything_is_recommended() -> None:
    assert split_linked(["x", "y"], set()) == (["x", "y"], [])
    assert split_linked([], {"x"}) == ([], [])


def test_records_of_format_1_1_are_read_with_everything_named_as_recommended() -> None:
    old = Dialogue.model_validate(
        {
            "format_version": "1.1",
            "id": "d",
            "utterances": [
                {"role": "crs", "text": "Try Heat.", "recommended_items": ["h"]},
                {"role": "user", "text": "what is it about?", "acts": [{"intent": "inquire"}]},
                {"role": "crs", "text": "No details about Heat.", "recommended_items": ["h"]},
                {"role": "user", "text": "ok, I'll watch it", "acts": [{"intent": "accept"}]},
            ],
        }
    )
    assert FORMAT_VERSION == "1.3" and old.format_version == "1.1"
    assert all(u.mentioned_items == [] for u in old.utterances)
    assert SRRR().score(old) == 0.5  # read as written: two rounds


def test_named_items_read_the_fields_and_an_older_conversions_annotation() -> None:
    new = Utterance(role="crs", text="...", recommended_items=["a"], mentioned_items=["b", "a"])
    # a file converted before `mentioned_items` was a field kept every named id in the annotation
    old = Utterance(
        role="crs", text="...", recommended_items=["a"], annotations={"mentioned_items": ["a", "c", 7]}
    )
    odd = Utterance(role="user", text="...", annotations={"mentioned_items": "c"})
    assert named_items(new) == ["a", "b"] and named_items(old) == ["a", "c"] and named_items(odd) == []
    assert split_named(["a", "b", "a", "c"], ["a"]) == ["b", "c"]
