"""The rule-based understanding has no file circle: the parser and the intent rules both import the
result types (`crsim.language.results`) instead of each other."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from crsim.language import results, understanding

ROOT = Path(__file__).resolve().parents[2]


def test_no_module_of_language_is_in_a_file_circle() -> None:
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" / "import_graph.py")
    assert spec is not None and spec.loader is not None
    graph = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(graph)
    circles = [c for c in graph.file_circles(ROOT / "src") if any(m.startswith("crsim.language.") for m in c)]
    assert circles == []


def test_the_parser_and_the_intent_rules_share_one_set_of_result_types() -> None:
    assert understanding.Understanding is results.Understanding
    assert understanding.Context is results.Context and understanding.Period is results.Period
