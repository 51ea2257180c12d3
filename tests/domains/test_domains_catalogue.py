"""Defects of a catalogue (the item file of a domain): each one located, all of them listed, exit 2.

`crsim domain check` lists every problem of the item file (file, record with its line and id, field,
what was expected), and `crsim run` on the same domain ends in one line and exit 2, never a traceback.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.domains import check_domain_file
from crsim.domains.findings import MAX_LISTED_PROBLEMS
from crsim.domains.item_records import MAX_CELL_CHARS

runner = CliRunner()

DOMAIN = """\
name: shop
items: {path: shop.csv, id: sku, title: label}
slots:
  colour: {}
  size: {kind: ordinal, order: [s, m, l]}
"""

HEADER = "sku,label,colour,size\n"


def _write(tmp_path: Path, rows: str, domain: str = DOMAIN, items: str = "shop.csv") -> Path:
    (tmp_path / items).write_text(rows, encoding="utf-8")
    path = tmp_path / "shop.yaml"
    path.write_text(domain, encoding="utf-8")
    return path


def _check(path: Path) -> list[str]:
    result = runner.invoke(app, ["domain", "check", str(path)])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit) and "Traceback" not in result.output
    return [line for line in result.output.splitlines() if line.startswith("error: ")]


def test_a_cell_over_the_limit_is_a_located_problem_and_the_rows_after_it_are_still_read(
    tmp_path: Path,
) -> None:
    big = "x" * (MAX_CELL_CHARS + 1)
    rows = HEADER + f"s1,Red Shirt,red,m\ns2,Blue Shirt,{big},l\ns3,Coat,green,xl\ns4,Hat,blue,s\n"
    errors = _check(_write(tmp_path, rows))
    csv_path = tmp_path / "shop.csv"
    assert errors == [
        f"error: items.path: {csv_path}, record 2 (line 3, id 's2'), field 'colour': a cell over "
        f"{MAX_CELL_CHARS:,} characters; expected at most {MAX_CELL_CHARS:,} characters per cell",
        # the rows after the long one were read: 'xl' is a value of the items that did read
        f"error: {tmp_path / 'shop.yaml'}: field 'slots.size': values 'xl' are missing from `order`",
    ]


def test_a_cell_at_the_limit_is_read(tmp_path: Path) -> None:
    rows = HEADER + f"s1,{'y' * MAX_CELL_CHARS},red,m\n"
    check = check_domain_file(_write(tmp_path, rows))
    assert check.ok and check.domain is not None
    assert len(check.domain.items["s1"].title) == MAX_CELL_CHARS


def test_ragged_rows_are_problems_naming_line_id_and_the_cells_expected(tmp_path: Path) -> None:
    rows = HEADER + "s1,Red Shirt,red,m\ns2,Blue, Shirt,blue,l\ns3,Coat,green\n\ns4,Hat,blue,s\n"
    errors = _check(_write(tmp_path, rows))
    csv_path = tmp_path / "shop.csv"
    assert errors == [
        f"error: items.path: {csv_path}, record 2 (line 3, id 's2'): 5 cells; expected 4, one per column "
        "of the header (a stray separator or quote?)",
        f"error: items.path: {csv_path}, record 3 (line 4, id 's3'): 3 cells; expected 4, one per column "
        "of the header (a stray separator or quote?)",
    ]


def test_duplicate_ids_name_both_records_in_csv_and_jsonl(tmp_path: Path) -> None:
    rows = HEADER + "s1,Red Shirt,red,m\ns2,Blue Shirt,blue,l\ns1,Red Coat,red,s\ns2,Hat,blue,s\n"
    csv_path = tmp_path / "shop.csv"
    assert _check(_write(tmp_path, rows)) == [
        f"error: items.path: {csv_path}, record 3 (line 4, id 's1'): duplicate item id; expected each id "
        "once (first at record 1 (line 2))",
        f"error: items.path: {csv_path}, record 4 (line 5, id 's2'): duplicate item id; expected each id "
        "once (first at record 2 (line 3))",
    ]
    jsonl = "".join(
        f'{{"id": "{i}", "title": "T{n}", "colour": "red", "size": "m"}}\n'
        for n, i in enumerate(["a", "b", "a"])
    )
    domain = DOMAIN.replace("{path: shop.csv, id: sku, title: label}", "{path: shop.jsonl}")
    jsonl_path = tmp_path / "shop.jsonl"
    assert _check(_write(tmp_path, jsonl, domain, "shop.jsonl")) == [
        f"error: items.path: {jsonl_path}, record 3 (id 'a'): duplicate item id; expected each id once "
        "(first at record 1)"
    ]


def test_every_bad_record_is_listed_up_to_the_cap_then_counted(tmp_path: Path) -> None:
    bad = MAX_LISTED_PROBLEMS + 7
    rows = HEADER + "".join(f"s{n},,red,m\n" for n in range(1, bad + 1)) + "ok,Fine,red,m\n"
    result = runner.invoke(app, ["domain", "check", str(_write(tmp_path, rows))])
    assert result.exit_code == 2
    errors = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert len(errors) == MAX_LISTED_PROBLEMS + 1
    assert errors[1].endswith("record 2 (line 3, id 's2'), field 'label': missing; expected the item's title")
    assert errors[-1] == (
        f"error: items.path: {tmp_path / 'shop.csv'}: 7 more problems not listed "
        f"(the first {MAX_LISTED_PROBLEMS} are above)"
    )
    assert result.output.splitlines()[-1] == f"{tmp_path / 'shop.yaml'}: {bad} problems"


def test_problems_of_several_records_and_kinds_are_all_listed(tmp_path: Path) -> None:
    rows = HEADER + "s1,Red Shirt,red,m\n,No Id,red,m\ns3,Coat,green\ns1,Again,red,m\n"
    errors = _check(_write(tmp_path, rows))
    assert [e.split(": ", 3)[-1] for e in errors] == [
        "missing; expected the item's id",
        "3 cells; expected 4, one per column of the header (a stray separator or quote?)",
        "duplicate item id; expected each id once (first at record 1 (line 2))",
    ]
    assert "record 2 (line 3), field 'sku'" in errors[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    "rows",
    [
        pytest.param(HEADER + f"s1,A,red,m\ns2,B,{'z' * (MAX_CELL_CHARS + 10)},m\n", id="long-cell"),
        pytest.param(HEADER + "s1,A,red,m\ns2,B,red\n", id="ragged"),
        pytest.param(HEADER + "s1,A,red,m\ns1,B,red,m\n", id="duplicate"),
    ],
)
def test_run_on_a_defective_catalogue_is_one_line_and_exit_2(tmp_path: Path, rows: str) -> None:
    domain = _write(tmp_path, rows)
    config = tmp_path / "exp.yaml"
    config.write_text(
        f"domain: {domain}\ncrss: [{{name: retrieval}}]\nsimulators: [{{name: abus}}]\nusers: {{size: 2}}\n",
        encoding="utf-8",
    )
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "crsim", "run", str(config), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.strip().count("\n") == 0, done.stderr
    assert f"{tmp_path / 'shop.csv'}, record 2 (line 3" in done.stderr
    assert not out.exists()


def test_a_ratings_table_with_a_ragged_row_or_a_long_cell_is_a_located_error(tmp_path: Path) -> None:
    from crsim.core.errors import DataError
    from crsim.domains import read_ratings
    from crsim.model.domain import RatingsSource

    path = tmp_path / "ratings.csv"
    source = RatingsSource(path=path, user="user_id", item="item_id", rating="rating", name="r", label="r")
    path.write_text("user_id,item_id,rating\nu1,s1,4\nu1,s2,5,extra\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"ratings.csv, record 2: more cells than the header's 3 columns"):
        read_ratings(source)
    path.write_text(f"user_id,item_id,rating\nu1,s1,4\nu2,{'s' * (MAX_CELL_CHARS + 1)},3\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"ratings.csv, record 2: not readable as CSV \(field larger"):
        read_ratings(source)
