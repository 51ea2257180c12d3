"""A domain a user brings: a books catalogue written as CSV plus its domain file, run end to end
(`crsim run` with abus against popular and retrieval, `crsim evaluate`, `crsim report`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli import app

runner = CliRunner()

BOOKS = """\
id,title,author,genre,year,pages
b1,The Hobbit,J. R. R. Tolkien,fantasy|adventure,1937,310
b2,The Fellowship of the Ring,J. R. R. Tolkien,fantasy|adventure,1954,423
b3,A Wizard of Earthsea,Ursula K. Le Guin,fantasy,1968,183
b4,The Left Hand of Darkness,Ursula K. Le Guin,science fiction,1969,304
b5,The Dispossessed,Ursula K. Le Guin,science fiction,1974,387
b6,Dune,Frank Herbert,science fiction|adventure,1965,412
b7,Foundation,Isaac Asimov,science fiction,1951,255
b8,I Robot,Isaac Asimov,science fiction,1950,253
b9,Murder on the Orient Express,Agatha Christie,mystery,1934,256
b10,And Then There Were None,Agatha Christie,mystery|thriller,1939,272
b11,The Murder of Roger Ackroyd,Agatha Christie,mystery,1926,312
b12,The Big Sleep,Raymond Chandler,mystery|crime,1939,231
b13,The Long Goodbye,Raymond Chandler,mystery|crime,1953,379
b14,Pride and Prejudice,Jane Austen,romance|classic,1813,432
b15,Emma,Jane Austen,romance|classic,1815,474
b16,Persuasion,Jane Austen,romance|classic,1817,249
b17,Jane Eyre,Charlotte Bronte,romance|classic,1847,532
b18,Dracula,Bram Stoker,horror|classic,1897,418
b19,Frankenstein,Mary Shelley,horror|science fiction|classic,1818,280
b20,The Shining,Stephen King,horror,1977,447
b21,Carrie,Stephen King,horror,1974,199
b22,Misery,Stephen King,horror|thriller,1987,320
b23,The Talented Mr Ripley,Patricia Highsmith,thriller|crime,1955,273
b24,Strangers on a Train,Patricia Highsmith,thriller|crime,1950,256
"""

DOMAIN = """\
name: books
item_noun: book
items: {path: books.csv, id: id, title: title}
slots:
  genre:
    kind: multi
    requestable: true
    cues: [genre, kind of book, sort of book]
    synonyms: {science fiction: [sci-fi, scifi], mystery: [whodunit, detective story], horror: [scary]}
  author:
    kind: categorical
    requestable: true
    cues: [author, writer, written by, who wrote]
  year: {kind: numeric, informable: false, requestable: true, cues: [year, published, came out]}
  pages: {kind: numeric, informable: false, requestable: true, cues: [pages, how long, length]}
"""


@pytest.fixture
def books(tmp_path: Path) -> Path:
    (tmp_path / "books.csv").write_text(BOOKS, encoding="utf-8")
    (tmp_path / "books.yaml").write_text(DOMAIN, encoding="utf-8")
    return tmp_path / "books.yaml"


def _run_books(tmp_path: Path, books: Path) -> Path:
    config = tmp_path / "books-experiment.yaml"
    config.write_text(
        f"name: books\ndomain: {json.dumps(str(books))}\nusers: {{size: 8}}\nseed: 3\nmax_turns: 12\n",
        encoding="utf-8",
    )
    run_dir = tmp_path / "run"
    result = runner.invoke(app, ["run", str(config), "--out", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    return run_dir


def _dialogues(run_dir: Path) -> list[dict]:  # type: ignore[type-arg]
    lines = (run_dir / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_a_books_csv_runs_evaluates_and_reports_end_to_end(tmp_path: Path, books: Path) -> None:
    checked = runner.invoke(app, ["domain", "check", str(books)])
    assert checked.exit_code == 0, checked.output
    assert "domain books: 24 items (book), 4 slots" in checked.output
    assert "genre          genre          multi        IR        9     100%" in checked.output

    run_dir = _run_books(tmp_path, books)
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["config"]["users"]["source"] == "goals"  # no ratings file: goals from the books
    dialogues = _dialogues(run_dir)
    assert len(dialogues) == 16 and not [d["id"] for d in dialogues if d.get("error")]
    assert {d["id"].split("/")[0] for d in dialogues} == {"popular", "retrieval"}
    book_ids = {f"b{i}" for i in range(1, 25)}
    recommended = {i for d in dialogues for u in d["utterances"] for i in u["recommended_items"]}
    assert recommended and recommended <= book_ids

    evaluated = runner.invoke(app, ["evaluate", str(run_dir), "--json"])
    assert evaluated.exit_code == 0, evaluated.output
    groups = json.loads(evaluated.output)
    assert {g["n_dialogues"] for g in groups} == {8}
    reported = runner.invoke(app, ["report", str(run_dir), "--out", str(tmp_path / "report.html")])
    assert reported.exit_code == 0, reported.output
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    shown = {t for t in ("Dune", "Dracula", "The Hobbit", "Emma", "Carrie", "Misery") if t in html}
    assert shown, "the report's dialogue browser names the books by title"


def test_the_books_dialogues_speak_of_books_and_succeed(tmp_path: Path, books: Path) -> None:
    run_dir = _run_books(tmp_path, books)
    dialogues = _dialogues(run_dir)
    text = " ".join(u["text"].lower() for d in dialogues for u in d["utterances"])
    assert "movie" not in text and "film" not in text
    assert "book" in text
    evaluated = runner.invoke(app, ["evaluate", str(run_dir), "--json"])
    success = {g["crs_id"]: g["metrics"]["Success"]["mean"] for g in json.loads(evaluated.output)}
    assert all(value > 0 for value in success.values()), success
