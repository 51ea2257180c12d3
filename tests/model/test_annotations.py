"""Declared annotation, metadata and persona keys (model/annotations.py): values checked on write,
located errors on read, no other module spelling a declared key, every key documented."""

from __future__ import annotations

import ast
import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from crsim.core.errors import DataError
from crsim.eval.metrics.user_ratings import UserRatings
from crsim.eval.scoring import evaluate_dialogue
from crsim.model import annotations as keys
from crsim.model.dialogue import Dialogue

SRC = Path(__file__).resolve().parents[2] / "src" / "crsim"
SCHEMA = SRC / "model" / "annotations.py"
DOC = Path(__file__).resolve().parents[2] / "docs" / "data-format.md"

#: Names of the open dictionaries: a string used as a key of something so named is a record key.
_CONTAINERS = re.compile(r"annotations|metadata|meta\b|persona|notes")


def _dialogue(**fields: Any) -> Dialogue:
    return Dialogue.model_validate({"id": "d1", **fields})


def test_a_checked_write_stores_the_value_as_given_and_refuses_a_wrong_type() -> None:
    notes: dict[str, Any] = {}
    value = {"turn": 1, "language": {"score": 4, "justification": "clear"}}
    keys.RATINGS.put(notes, value)
    assert notes == {"ratings": value} and notes["ratings"] is value  # no coercion: bytes unchanged
    with pytest.raises(DataError, match=r"writing annotations key 'ratings'.*turn"):
        keys.RATINGS.put(notes, {"turn": "first"})
    with pytest.raises(DataError, match="recommended_items_source"):
        keys.RECOMMENDED_ITEMS_SOURCE.entry("guessed")


def test_a_typed_read_names_dialogue_utterance_and_key() -> None:
    dialogue = _dialogue(
        utterances=[
            {"role": "crs", "text": "hi"},
            {"role": "user", "text": "ok", "annotations": {"ratings": [3]}},
        ]
    )
    with pytest.raises(DataError) as caught:
        keys.annotation(keys.RATINGS, dialogue, 1)
    message = str(caught.value)
    assert "dialogue 'd1', utterance 1" in message and "utterances[1].annotations.ratings" in message
    assert keys.annotation(keys.RATINGS, dialogue, 0) is None  # absent is not an error


def test_metadata_and_persona_reads_parse_and_locate() -> None:
    split = {"selected": ["a"], "residual": ["b"]}
    dialogue = _dialogue(
        metadata={"target_split": split, "seed": "x"}, user_profile={"persona": {"tags": {"a": 1}}}
    )
    parsed = keys.metadata(keys.TARGET_SPLIT, dialogue)
    assert parsed is not None and parsed.selected == ["a"] and parsed.residual == ["b"]
    with pytest.raises(DataError, match=r"dialogue 'd1'.*metadata\.seed"):
        keys.metadata(keys.SEED, dialogue)
    with pytest.raises(DataError, match=r"user_profile\.persona\.tags"):
        keys.persona(keys.TAGS, dialogue)


def test_unknown_keys_stay_allowed() -> None:
    dialogue = _dialogue(
        metadata={"some_tool": {"x": 1}},
        utterances=[{"role": "user", "text": "a", "annotations": {"mine": 1}}],
    )
    assert dialogue.metadata["some_tool"] == {"x": 1} and dialogue.utterances[0].annotations["mine"] == 1


def _rated(dialogue_id: str, ratings: Any) -> Dialogue:
    return Dialogue.model_validate(
        {
            "id": dialogue_id,
            "utterances": [
                {"role": "crs", "text": "hi"},
                {"role": "user", "text": "ok", "annotations": {"ratings": ratings}},
            ],
        }
    )


def test_a_malformed_rating_is_an_error_record_of_that_dialogue_only() -> None:
    """Before the schema, a rating of the wrong shape was skipped silently (the dialogue then looked
    unrated); now it is that dialogue's located error and the other dialogue is still scored."""
    good = _rated("good", {"turn": 1, "language": {"score": 4, "justification": "clear"}})
    bad = _rated("bad", {"turn": "one", "language": {"score": 4}})
    metric = UserRatings(UserRatings.Params(aspects=["language"]))
    records = {d.id: asyncio.run(evaluate_dialogue(d, metric)) for d in (good, bad)}
    assert [r.value for r in records["good"]] == [4.0]
    [failed] = records["bad"]
    assert failed.value is None and failed.error is not None
    assert "dialogue 'bad', utterance 1" in failed.error and "annotations.ratings" in failed.error


def test_declared_names_are_unique_per_scope() -> None:
    seen = [(k.scope, k.name) for k in keys.DECLARED]
    assert len(seen) == len(set(seen))


def _key_uses(tree: ast.AST, source: str) -> list[tuple[int, str]]:
    """(line, string) of every string used as a key of a dictionary named like an open record
    dictionary: `x.annotations["k"]`, `metadata.get("k")`, `notes.pop("k")`, `"k" in persona`,
    `metadata = {"k": ...}`, `f(annotations={"k": ...})`."""
    found: list[tuple[int, str]] = []

    def named(node: ast.AST | None) -> bool:
        return node is not None and bool(_CONTAINERS.search(ast.get_source_segment(source, node) or ""))

    def dict_keys(node: ast.AST) -> None:
        if isinstance(node, ast.Dict):
            found.extend((k.lineno, k.value) for k in node.keys if isinstance(k, ast.Constant))

    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and named(node.value):
            found.append((node.lineno, node.slice.value))
        elif isinstance(node, ast.Call):
            method = node.func.attr if isinstance(node.func, ast.Attribute) else None
            owner = node.func.value if isinstance(node.func, ast.Attribute) else None
            first = node.args[0] if node.args else None
            if method in ("get", "pop", "setdefault") and named(owner) and isinstance(first, ast.Constant):
                found.append((node.lineno, first.value))
            if method == "update" and named(owner):
                found.extend((node.lineno, k.arg) for k in node.keywords if k.arg)
                if node.args:
                    dict_keys(node.args[0])
            for keyword in node.keywords:
                if keyword.arg and _CONTAINERS.search(keyword.arg):
                    dict_keys(keyword.value)
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant):
            if any(isinstance(op, ast.In | ast.NotIn) for op in node.ops) and named(node.comparators[0]):
                found.append((node.lineno, node.left.value))
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(named(t) for t in targets) and node.value is not None:
                dict_keys(node.value)
    return found


def test_no_module_but_the_schema_spells_a_declared_key() -> None:
    declared = {k.name for k in keys.DECLARED}
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if path == SCHEMA:
            continue
        source = path.read_text(encoding="utf-8")
        for line, name in _key_uses(ast.parse(source), source):
            if name in declared:
                offenders.append(f"{path.relative_to(SRC)}:{line}: {name!r}")
    assert not offenders, "use the key of crsim.model.annotations instead:\n" + "\n".join(offenders)


def test_the_key_finder_sees_every_form_it_looks_for() -> None:
    source = (
        'u.annotations["a"]\nmetadata.get("b")\nnotes.pop("c")\n"d" in persona\nmetadata = {"e": 1}\n'
        'f(annotations={"g": 1})\nd.metadata.update(h=1)\nnotes.update({"i": 1})\nconfig.get("x")\n'
        'other = {"y": 1}\nprint("z" in text)\n'
    )
    assert sorted(name for _, name in _key_uses(ast.parse(source), source)) == list("abcdeghi")


def test_every_declared_key_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert keys.schema_table() in text, "regenerate the table of docs/data-format.md with schema_table()"
    rows = set(re.findall(r"^\| `([a-z_]+)` \| (annotations|metadata|persona) \|", text, re.MULTILINE))
    missing = [f"{k.scope.value}.{k.name}" for k in keys.DECLARED if (k.name, k.scope.value) not in rows]
    assert not missing, f"docs/data-format.md lacks rows for {missing}"
