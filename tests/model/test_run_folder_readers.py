"""`crsim.model.run_folder` is the only reader of a run folder's files and the only place their names
are joined to a folder.

The rule, checked on the syntax tree of every module under `src/crsim`:

1. Outside `crsim/model/run_folder/`, no path is built as `folder / NAME` from one of the file-name
   constants of `run_folder/files.py` (`MANIFEST`, `DIALOGUES`, `SCORES`, ...): code asks `RunFolder`
   or `RunPaths(folder)` for the path. The constants may still be named in messages and help texts.
2. Only `crsim/model/run_folder/scores.py` turns text into a `ScoreRecord`
   (`ScoreRecord.model_validate_json` / `model_validate`), and no other module opens a scores file
   (a call to `open` on, or with, an expression that names `scores_path` / `.scores`): every reader
   goes through `iter_scores` / `read_scores` / `RunFolder.scores`.

`tests/model/test_run_folder_names.py` checks the other half: no module spells a file name itself.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import crsim
from crsim.core.errors import DataError
from crsim.core.jsonl import Unreadable
from crsim.model.run_folder import RunPaths, ScoreRecord, iter_scores, read_scores

SRC = Path(crsim.__file__).parent
HOME = SRC / "model" / "run_folder"
CONSTANTS = {"MANIFEST", "DIALOGUES", "RETRIED", "SCORES", "SUMMARY", "LLM_CACHE", "REPORT", "EXPORT_DIR"}
CONSTANTS |= {"LOCK_FILE", "LOCK_INFO"}


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def offences(path: Path, *, home: bool, scores_home: bool) -> list[tuple[int, str]]:
    """(line, what) of the rule's breaches in one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        joined = (
            isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and _name(node.right) in CONSTANTS
        )
        if not home and joined:
            found.append((node.lineno, f"joins {ast.unparse(node)}"))
        parsed = isinstance(node, ast.Attribute) and node.attr.startswith("model_validate")
        if not scores_home and parsed and _name(node.value) == "ScoreRecord":
            found.append((node.lineno, f"parses {ast.unparse(node)}"))
        if not scores_home and isinstance(node, ast.Call):
            func = node.func
            opened = (isinstance(func, ast.Attribute) and func.attr == "open" and func.value) or (
                isinstance(func, ast.Name) and func.id == "open" and node.args and node.args[0]
            )
            if isinstance(opened, ast.expr) and (
                "scores_path" in ast.unparse(opened) or _name(opened) == "scores"
            ):
                found.append((node.lineno, f"opens {ast.unparse(node)}"))
    return sorted(found)


def test_only_the_run_folder_package_reads_and_joins_its_files() -> None:
    found = [
        f"{path.relative_to(SRC)}:{line}: {what}"
        for path in sorted(SRC.rglob("*.py"))
        for line, what in offences(path, home=HOME in path.parents, scores_home=path == HOME / "scores.py")
    ]
    assert found == [], "run-folder files read or joined outside crsim.model.run_folder:\n" + "\n".join(found)


def test_the_check_finds_a_second_reader(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from crsim.model.run_folder.files import SCORES, files\n"
        "a = run / SCORES\n"
        "b = folder / files.DIALOGUES\n"
        "c = ScoreRecord.model_validate_json(line)\n"
        "d = folder.scores_path.open('rb')\n"
        "e = open(paths.scores)\n"
        "f = f'no {SCORES} here'\n",
        encoding="utf-8",
    )
    assert [line for line, _ in offences(module, home=False, scores_home=False)] == [2, 3, 4, 5, 6]


def _record(dialogue: str, value: float | None) -> str:
    return ScoreRecord(
        dialogue_id=dialogue, crs_id="c", simulator_id="s", metric="m", value=value
    ).model_dump_json()


def test_scores_are_read_strictly_or_leniently(tmp_path: Path) -> None:
    """Strict: the first bad line is a DataError naming file, record and field. Lenient: bad lines
    (not UTF-8, a field of the wrong type, not JSON) are located and skipped, the rest read."""
    path = RunPaths(tmp_path).scores
    lines = [_record("d1", 1.0).encode(), b"\xff\xfe", json.dumps({"dialogue_id": 3}).encode(), b"{", b""]
    lines.append(_record("d2", None).encode())
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(DataError, match=r"record 2") as caught:
        read_scores(path)
    assert caught.value.path == str(path)
    bad: list[Unreadable] = []
    kept = list(iter_scores(path, bad))
    assert [r.dialogue_id for r in kept] == ["d1", "d2"]
    assert [(b.line, b.field) for b in bad] == [(2, None), (3, "dialogue_id"), (4, None)]
    assert "not UTF-8" in bad[0].problem


def test_a_missing_scores_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="crsim evaluate"):
        read_scores(RunPaths(tmp_path).scores)
