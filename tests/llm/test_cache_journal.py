"""Moving answers between response caches (what a Ray worker on another node sends to the driver):
`journal` notes what a cache stores, `put_rows` adds it to another file without replacing answers
already there."""

from __future__ import annotations

from pathlib import Path

from crsim.llm.cache import ResponseCache
from crsim.llm.types import Completion


def test_journaled_answers_reach_another_cache(tmp_path: Path) -> None:
    node = ResponseCache(tmp_path / "node.sqlite")
    node.put("before", Completion(text="not journaled", model="m"))
    node.journal = []
    node.put("a", Completion(text="answer a", model="m"))
    node.put("b", Completion(text="answer b", model="m"))
    assert [row[0] for row in node.journal] == ["a", "b"]

    driver = ResponseCache(tmp_path / "run" / "llm_cache.sqlite")
    driver.put("b", Completion(text="the driver's own b", model="m"))
    assert driver.put_rows(node.journal) == 1  # `a` is new, `b` was already there and stays
    answer_a, answer_b = driver.get("a"), driver.get("b")
    assert answer_a is not None and (answer_a.text, answer_a.cached) == ("answer a", True)
    assert answer_b is not None and answer_b.text == "the driver's own b"
    assert driver.get("before") is None


def test_a_read_only_cache_takes_no_rows(tmp_path: Path) -> None:
    ResponseCache(tmp_path / "c.sqlite").put("x", Completion(text="x"))
    read_only = ResponseCache(tmp_path / "c.sqlite", mode="read-only")
    assert read_only.put_rows([("y", "m", 0.0, Completion(text="y").model_dump_json())]) == 0
    assert read_only.get("y") is None
