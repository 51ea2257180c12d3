"""Every run-folder file name is defined once, in `crsim.model.run_folder.files`.

The test reads every module under `src/crsim` and fails on a string literal (outside docstrings)
that spells one of those names, so a new reader or writer cannot quietly define its own copy.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import crsim
from crsim.model.run_folder import files

SRC = Path(crsim.__file__).parent
HOME = SRC / "model" / "run_folder" / "files.py"
NAMES = (
    files.MANIFEST,
    files.DIALOGUES,
    files.SCORES,
    files.SUMMARY,
    files.LLM_CACHE,
    files.REPORT,
    files.LOCK_FILE,
    files.LOCK_INFO,
)
#: A name as a word of its own: `runs/x/dialogues.jsonl` and "no manifest.json" count, `my_scores.jsonl` not.
PATTERN = re.compile(r"(?<![\w.-])(" + "|".join(re.escape(n) for n in NAMES) + r")(?![\w-]|\.\w)")
#: The temporary-file suffix of the run folder's atomic writes (`files.part_path`).
PART = re.compile(r"^\.?part$|\}\.part$")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (module, class, function)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def literals(path: Path) -> list[tuple[int, str]]:
    """(line, text) of the string literals of a module that spell a run-folder file name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    hits = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in skip:
            continue
        if PATTERN.search(node.value) or PART.search(node.value):
            hits.append((node.lineno, node.value))
    return hits


def test_no_run_folder_file_name_outside_its_module() -> None:
    found = [
        f"{path.relative_to(SRC)}:{line}: {text!r}"
        for path in sorted(SRC.rglob("*.py"))
        if path not in (HOME, SRC / "atomic_files.py")
        for line, text in literals(path)
    ]
    assert found == [], "run-folder file names spelled outside crsim.model.run_folder.files:\n" + "\n".join(
        found
    )


def test_the_check_finds_a_spelled_name(tmp_path: Path) -> None:
    """The scan itself works: a module that spells names (in code, an f-string, a temp name) is caught;
    the same words in a docstring are not."""
    module = tmp_path / "m.py"
    module.write_text(
        '"""Reads dialogues.jsonl."""\n'
        'A = "manifest.json"\n'
        'B = f"{run}/scores.jsonl"\n'
        'C = path.with_name(f".{path.name}.part")\n'
        'D = "my_scores.jsonl"\n',
        encoding="utf-8",
    )
    assert [line for line, _ in literals(module)] == [2, 3, 4]
