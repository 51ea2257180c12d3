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


def test_the_worked_run_gives_the_figures_and_dialogue_the_page_shows(tmp_path: Path) -> None:
    import json

    text = DOC.read_text(encoding="utf-8")
    (tmp_path / "books.csv").write_text(_block(text, "A catalogue as CSV", "csv"), encoding="utf-8")
    (tmp_path / "books.yaml").write_text(_block(text, "Its domain file", "yaml"), encoding="utf-8")
    config = _block(text, "Run an experiment on it", "yaml").replace(
        "domain: books.yaml", f"domain: {tmp_path / 'books.yaml'}"
    )
    (tmp_path / "books-experiment.yaml").write_text(config, encoding="utf-8")
    run_dir = tmp_path / "runs" / "books"
    result = CliRunner().invoke(
        app, ["run", str(tmp_path / "books-experiment.yaml"), "--out", str(run_dir), "--json"]
    )
    assert result.exit_code == 0, result.output
    start = text.index("```\n$ crsim run books-experiment.yaml")
    table = text[start : text.index("```", start + 3)]
    for metric in ("Success", "SRRR", "Turns", "Recall@(t,10)"):
        row = next(line for line in table.splitlines() if line.startswith(f"│ {metric} "))
        shown = [cell.split()[0] for cell in row.strip("│").split("│")[1:]]
        means = [f"{group['metrics'][metric]['mean']:.3f}" for group in json.loads(result.output)]
        assert shown == means, metric
    excerpt = [line.split(":", 1)[1].strip() for line in _block(text, "One of the dialogues").splitlines()]
    dialogues = [
        json.loads(line) for line in (run_dir / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    dialogue = next(d for d in dialogues if d["id"] == "retrieval/abus/goal-1")
    assert [u["text"] for u in dialogue["utterances"]] == excerpt
