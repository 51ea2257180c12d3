"""The examples of README.md and docs/*.md that are marked runnable run.

A fenced code block whose info string is `python run` or `console run` is executed here, each in its
own empty folder (with the repository's `configs/` beside it): a Python block as one script, a console
block line by line as `crsim` commands (`#` starts a comment), each of which must exit with 0. A
`crsim run` without `--users` gets `--users 3`, so the examples run in seconds while the docs show the
command as a reader types it.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from textwrap import dedent

import pytest

import crsim
from support import needs_pandas

ROOT = Path(__file__).parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^\s*```(\S*)[ \t]*(.*)$")
SMALL_USERS = "3"


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language and its text."""

    page: Path
    line: int
    language: str
    text: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a Markdown page marked runnable (`run` after the language)."""
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    start: int | None = None
    language = ""
    runnable = False
    for number, text in enumerate(lines, 1):
        match = FENCE.match(text)
        if match is None:
            continue
        if start is None:
            start, language, runnable = number, match.group(1), "run" in match.group(2).split()
        else:
            if runnable:
                found.append(
                    Block(page, start, language, dedent("\n".join(lines[start : number - 1]) + "\n"))
                )
            start = None
    return found


RUNNABLE = [block for page in PAGES for block in blocks(page)]


def commands(block: Block) -> list[list[str]]:
    """The `crsim` commands of a console block, with a small `--users` added to `crsim run`."""
    found = []
    for line in block.text.splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        assert words[0] == "crsim", f"{block.name}: a runnable console line must be a crsim command: {line}"
        if words[1:2] == ["run"] and "--users" not in words:
            words += ["--users", SMALL_USERS]
        found.append(words)
    return found


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "configs").symlink_to(ROOT / "configs", target_is_directory=True)
    return tmp_path


def _env() -> dict[str, str]:
    """This checkout's crsim first on the path, whatever the working folder."""
    source = str(Path(crsim.__file__).parents[1])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))}


def test_the_readme_marks_its_quickstarts_runnable() -> None:
    readme = {block.language for block in RUNNABLE if block.page.name == "README.md"}
    assert {"python", "console"} <= readme


def test_a_block_marked_run_is_found_and_others_are_not(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```python run\nx = 1\n```\n\n```python\ny = 2\n```\n```console run\ncrsim list\n```\n")
    assert [(b.line, b.language, b.text) for b in blocks(page)] == [
        (1, "python", "x = 1\n"),
        (8, "console", "crsim list\n"),
    ]
    assert commands(blocks(page)[1]) == [["crsim", "list"]]


@needs_pandas
@pytest.mark.slow
@pytest.mark.parametrize("block", [b for b in RUNNABLE if b.language == "python"], ids=lambda b: b.name)
def test_python_example_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(_folder(tmp_path))
    exec(compile(block.text, block.name, "exec"), {"__name__": "__example__"})


@needs_pandas
@pytest.mark.slow
@pytest.mark.parametrize("block", [b for b in RUNNABLE if b.language == "console"], ids=lambda b: b.name)
def test_console_example_runs(block: Block, tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    for words in commands(block):
        done = subprocess.run(
            [sys.executable, "-m", "crsim", *words[1:]],
            cwd=folder,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, (
            f"{block.name}: {shlex.join(words)} exited {done.returncode}:\n{done.stderr}"
        )
