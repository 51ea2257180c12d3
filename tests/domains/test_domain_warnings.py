"""`crsim domain check` warns about what loads but will hurt a study: placeholder values, values two
slots share, titles that collide, requestable slots without values; located, failing only with --strict."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.domains import domain_named, read_domain_file
from crsim.domains.warnings import study_warnings

runner = CliRunner()

# Cambridge-attraction-like rows: a `?` fee, "free" both a fee and a price range, two venues whose
# titles differ only in case and punctuation, and a phone column that holds only placeholders.
VENUES = """\
id,name,type,fee,pricerange,phone
a1,ballare,nightclub,5 pounds,moderate,-
a2,The Junction,theatre,?,moderate,n/a
a3,the junction!,theatre,free,free,-
a4,tenpin,entertainment,?,expensive,?
"""

DOMAIN = """\
name: venues
item_noun: attraction
items: {path: venues.csv}
slots:
  type: {}
  fee: {requestable: true}
  pricerange: {}
  phone: {kind: text, requestable: true}
"""

CLEAN = VENUES.replace("the junction!", "Junction Two").replace(",?,", ",10 pounds,")
CLEAN = CLEAN.replace("free,free", "12 pounds,cheap").replace("-\n", "01223 1\n").replace("n/a", "01223 2")
CLEAN = CLEAN.replace(",?\n", ",01223 3\n")


def write(tmp_path: Path, items: str) -> Path:
    (tmp_path / "venues.csv").write_text(items, encoding="utf-8")
    path = tmp_path / "venues.yaml"
    path.write_text(DOMAIN.replace("items: {path: venues.csv}", "items: {path: venues.csv, title: name}"))
    return path


def test_each_kind_of_warning_is_located(tmp_path: Path) -> None:
    path = write(tmp_path, VENUES)
    warnings = study_warnings(read_domain_file(path))
    items = tmp_path / "venues.csv"
    assert (
        f"{items}: records 2 (id 'a2'), 4 (id 'a4'), field 'fee': placeholder value '?'; expected a value: "
        "leave the field out (empty CSV cell) to declare it missing, or replace it"
    ) in warnings
    assert any(
        w.startswith(f"{items}: records 1 (id 'a1'), 3 (id 'a3'), field 'phone': placeholder value '-'")
        for w in warnings
    )
    assert (
        f"{path}: fields 'slots.fee', 'slots.pricerange': 1 value in both ('free'); a user who says one "
        "may be understood to set both slots (give the values distinct wordings)"
    ) in warnings
    assert any(
        w.startswith(f"{items}: records 2 (id 'a2'), 3 (id 'a3'), field 'title': 2 items share the title")
        for w in warnings
    )
    assert any(
        w.startswith(f"{path}: field 'slots.phone': requestable slot with no values") for w in warnings
    )
    assert (
        sum("field 'slots.fee': requestable slot without a value in 2 of 4 items" in w for w in warnings) == 1
    )


def test_a_clean_catalogue_and_the_shipped_domains_have_no_warnings(tmp_path: Path) -> None:
    assert study_warnings(read_domain_file(write(tmp_path, CLEAN))) == []
    for name in ("movies", "restaurants", "hotels"):
        assert study_warnings(domain_named(name)) == [], name


@pytest.mark.parametrize(("strict", "code"), [(False, 0), (True, 1)])
def test_domain_check_prints_warnings_and_fails_only_when_strict(
    tmp_path: Path, strict: bool, code: int
) -> None:
    path = write(tmp_path, VENUES)
    result = runner.invoke(app, ["domain", "check", str(path), *(["--strict"] if strict else [])])
    assert result.exit_code == code, result.output
    assert "warning: " in result.output and "placeholder value '?'" in result.output
    assert "domain venues: 4 items (attraction)" in result.output
    clean = runner.invoke(app, ["domain", "check", str(write(tmp_path, CLEAN)), "--strict"])
    assert clean.exit_code == 0 and "warning" not in clean.output, clean.output
