"""The fast indented JSON writer of `crsim gcdf1 score -o` writes exactly what `json.dumps` writes."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from crsim.studies.gcdf1.json_out import dumps_indented

EDGES: list[Any] = [
    {},
    [],
    {"a": {}, "b": [], "c": [{}], "d": [[]]},
    {"z": 1, "a": 2, "m": {"y": None, "b": True, "c": False}},
    {"text": 'caf\u00e9 \u2603 \ud83c\udfac "quoted" back\\slash\nline\ttab\x00\x1f'},
    {"f": [0.1, 1e300, -2.5e-308, 1.0, -0.0, float("nan"), float("inf"), float("-inf")]},
    {"i": [0, -1, 10**30, True, False]},
    "just a string",
    3.5,
    None,
]


@pytest.mark.parametrize("value", EDGES)
@pytest.mark.parametrize("indent", [1, 2])
def test_edge_values_match_the_standard_encoder(value: Any, indent: int) -> None:
    assert dumps_indented(value, indent) == json.dumps(value, indent=indent, sort_keys=True)


@pytest.mark.parametrize("value", [{1: "int key"}, {"t": (1, 2)}, {None: 1, "a": 2}, {"s": {1, 2}}])
def test_values_outside_plain_json_fall_back_to_the_standard_encoder(value: Any) -> None:
    """Non-string keys, tuples: the standard encoder's text (or its error, for a set)."""
    try:
        expected = json.dumps(value, indent=1, sort_keys=True)
    except TypeError:
        with pytest.raises(TypeError):
            dumps_indented(value)
        return
    assert dumps_indented(value) == expected


def _random_value(rng: random.Random, depth: int) -> Any:
    kinds = ["str", "int", "float", "none", "bool"] + (["dict", "list"] * 2 if depth < 4 else [])
    kind = rng.choice(kinds)
    if kind == "dict":
        return {
            rng.choice(["a", "b", "\u00e9", "x y", ""]) + str(i): _random_value(rng, depth + 1)
            for i in range(rng.randrange(4))
        }
    if kind == "list":
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {
        "str": lambda: "".join(rng.choice('ab"\\\n\u00e9\u2603') for _ in range(rng.randrange(6))),
        "int": lambda: rng.randrange(-(10**6), 10**6),
        "float": lambda: rng.uniform(-1e6, 1e6),
        "none": lambda: None,
        "bool": lambda: rng.random() < 0.5,
    }[kind]()


def test_random_nested_values_match_the_standard_encoder() -> None:
    rng = random.Random(21)
    for _ in range(500):
        value = {"root": _random_value(rng, 0)}
        assert dumps_indented(value) == json.dumps(value, indent=1, sort_keys=True)
