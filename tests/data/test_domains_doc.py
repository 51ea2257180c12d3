"""docs/domains.md's worked example is true: its CSV and domain file give the output the page shows."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from crsim.cli import app

DOC = Path(__file__).resolve().parents[2] / "docs" / "domains.md"


def _block(text: str, after: str, language: str = "") -> str:
    """The first fenced block (of `language`) after the line `after`."""
    start = text.index(after)
    match = re.compile(rf"```{language}\n(.*?)```", re.S).search(text, start)
    assert match is not None, f"no ```{language} block after {after!r}"
    return match.group(1)


def test_the_worked_example_prints_what_the_page_says(tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    (tmp_path / "books.csv").write_text(_block(text, "A catalogue as CSV", "csv"), encoding="utf-8")
    (tmp_path / "books.yaml").write_text(_block(text, "Its domain file", "yaml"), encoding="utf-8")
    shown = _block(text, "Check it:").splitlines()
    assert shown[0] == "$ crsim domain check books.yaml"
    result = CliRunner().invoke(app, ["domain", "check", str(tmp_path / "books.yaml")])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == shown[1:]
