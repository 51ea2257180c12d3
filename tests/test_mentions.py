"""The rule that tells recommended from mentioned items in linked CRS text."""

from __future__ import annotations

from crsim.model.mentions import split_linked


def test_new_items_are_recommended_and_items_named_before_are_mentioned() -> None:
    assert split_linked(["a", "b", "a", "c"], {"b"}) == (["a", "c"], ["b"])


def test_nothing_named_before_means_everything_is_recommended() -> None:
    assert split_linked(["x", "y"], set()) == (["x", "y"], [])
    assert split_linked([], {"x"}) == ([], [])
