"""Reference pages state definitions, commands and numbers, not history: no page under docs/ names
one of crsim's own commits or an issue of its tracker (history goes to CHANGELOG.md). Commits of
other projects (a reference implementation at a given commit) may be cited."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
PAGES = sorted((ROOT / "docs").rglob("*.md"))
ISSUE = re.compile(r"\bissues? \d+", re.IGNORECASE)
HEX = re.compile(r"(?<![\w/@.-])[0-9a-f]{7,40}(?![\w-])")


def crsim_commits(words: set[str]) -> set[str]:
    """The words that name a commit of this repository (empty outside a git checkout)."""
    if not words or shutil.which("git") is None or not (ROOT / ".git").exists():
        return set()
    asked = sorted(words)
    done = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "--batch-check"],
        input="".join(f"{word}^{{commit}}\n" for word in asked),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    answers = done.stdout.splitlines()
    return {word for word, answer in zip(asked, answers, strict=True) if not answer.endswith("missing")}


def history(text: str) -> list[str]:
    """`line N: issue 17` and `line N: commit 054264f` for each mention in `text`."""
    found = [f"line {text.count(chr(10), 0, m.start()) + 1}: {m.group()}" for m in ISSUE.finditer(text)]
    hexes = {
        m.group()
        for m in HEX.finditer(text)
        if re.search(r"[a-f]", m.group()) and re.search(r"\d", m.group())
    }
    for word in sorted(crsim_commits(hexes)):
        line = text.count("\n", 0, text.index(word)) + 1
        found.append(f"line {line}: commit {word}")
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_reference_pages_carry_no_history(page: Path) -> None:
    assert history(page.read_text(encoding="utf-8")) == [], f"{page.name}: move history to CHANGELOG.md"


def test_the_check_finds_issues_and_this_repositorys_commits() -> None:
    first = subprocess.run(
        ["git", "-C", str(ROOT), "rev-list", "--max-parents=0", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    if not first:
        pytest.skip("not a git checkout: only issue numbers can be checked")
    text = f"Fixed in issue 17 item 1.\nBefore: commit {first[0][:7]}; the reference at deadbee1 differs.\n"
    assert history(text) == ["line 1: issue 17", f"line 2: commit {first[0][:7]}"]
