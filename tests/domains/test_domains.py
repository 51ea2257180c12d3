"""Domains as data: the domain file, its loader and checker, the shipped domains, `crsim domain`."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.core.errors import ConfigError
from crsim.domains import check_domain_file, domain_named, known_domains, read_domain_file
from crsim.domains.movielens import MOVIE_INFORMABLE_SLOTS, MOVIE_REQUESTABLE_SLOTS
from crsim.model.domain import SlotKind
from crsim.runner.config import ExperimentConfig

runner = CliRunner()

SHOPS = """\
sku,label,colour,size,price,tags
s1,Red Shirt,red,m,20,cotton|summer
s2,Blue Shirt,blue,l,25,cotton
s3,Green Coat,green,xl,90,wool|winter
s4,Red Coat,red,m,120,wool|winter
"""

GOOD = """\
name: shop
item_noun: garment
items: {path: shop.csv, id: sku, title: label}
slots:
  colour:
    synonyms: {red: [crimson, scarlet]}
  size:
    kind: ordinal
    order: [s, m, l, xl]
  tags: {kind: multi, cues: [material, season]}
  price: {kind: numeric, requestable: true}
"""


def _write(tmp_path: Path, domain: str, items: str = SHOPS) -> Path:
    (tmp_path / "shop.csv").write_text(items, encoding="utf-8")
    path = tmp_path / "shop.yaml"
    path.write_text(domain, encoding="utf-8")
    return path


def test_a_csv_domain_is_read_with_its_slots_values_and_synonyms(tmp_path: Path) -> None:
    domain = read_domain_file(_write(tmp_path, GOOD))
    assert (domain.name, domain.item_noun, domain.item_noun_plural, len(domain.items)) == (
        "shop",
        "garment",
        "garments",
        4,
    )
    assert domain.items["s3"].title == "Green Coat" and domain.items["s3"].values("tags") == [
        "wool",
        "winter",
    ]
    assert domain.informable_slots == {"colour": "colour", "size": "size", "tags": "tags", "price": "price"}
    assert domain.requestable_slots == {"price": "price"}
    assert domain.slot("size").kind is SlotKind.ORDINAL and domain.slot("size").order == ("s", "m", "l", "xl")
    assert domain.values("tags") == ["cotton", "summer", "winter", "wool"]
    assert domain.items.with_value("colour", "RED") == {"s1", "s4"}  # extra attributes are indexed
    lexicon = domain.lexicon()
    assert lexicon["crimson"] == (("colour", "red"),) and lexicon["xl"] == (("size", "xl"),)
    assert "20" not in lexicon  # numeric values are not phrases


def test_the_movie_domain_file_gives_the_slots_movies_always_had() -> None:
    movies = domain_named("movies")
    assert list(movies.informable_slots.items()) == list(MOVIE_INFORMABLE_SLOTS.items())
    assert list(movies.requestable_slots.items()) == list(MOVIE_REQUESTABLE_SLOTS.items())
    assert movies.ratings is not None and (movies.ratings.label, movies.ratings.name) == ("ml", "MovieLens")
    assert movies.item_noun == "movie" and len(movies.items) == 4041


@pytest.mark.parametrize(
    ("name", "items", "informable"),
    [
        ("restaurants", 110, {"food", "area", "pricerange"}),
        ("hotels", 33, {"type", "area", "pricerange", "stars", "parking", "internet"}),
    ],
)
def test_the_multiwoz_domains_are_shipped(name: str, items: int, informable: set[str]) -> None:
    assert name in known_domains()
    domain = domain_named(name)
    assert len(domain.items) == items and set(domain.informable_slots) == informable
    assert {"address", "phone", "postcode"} <= set(domain.requestable_slots)
    assert domain.lexicon()["inexpensive"] == (("pricerange", "cheap"),)


BROKEN = """\
name: shop
items: {path: shop.csv, id: sku, title: label}
slots:
  colour: {kind: colourful}
  size:
    kind: ordinal
  tags: {kind: multi, cues: [material]}
  notes: {kind: text, informable: true}
"""


def test_check_lists_every_schema_problem_with_its_line_and_field(tmp_path: Path) -> None:
    check = check_domain_file(_write(tmp_path, BROKEN))
    path = tmp_path / "shop.yaml"
    assert not check.ok and len(check.problems) == 3
    assert check.problems[0].startswith(f"{path}:4: field 'slots.colour.kind': Input should be 'categorical'")
    assert check.problems[1].startswith(
        f"{path}:5: field 'slots.size': Value error, an ordinal slot needs `order`"
    )
    assert check.problems[2].startswith(
        f"{path}:8: field 'slots.notes': Value error, a text slot cannot be informable"
    )


def test_check_finds_problems_of_the_items_against_the_slots(tmp_path: Path) -> None:
    items = SHOPS.replace("s2,Blue Shirt,blue,l,25", "s2,Blue Shirt,blue,xxl,cheap")
    domain = GOOD.replace("  colour:\n", "  colour:\n    attribute: color\n")
    check = check_domain_file(_write(tmp_path, domain, items))
    where = f"{tmp_path / 'shop.yaml'}: field 'slots."
    assert check.problems == [
        f"{where}colour': no item has attribute 'color'; expected it in the item file",
        f"{where}size': values 'xxl' are missing from `order`",
        f"{where}price': numeric slot has non-numeric values 'cheap'",
    ]
    with pytest.raises(ConfigError, match=r"no item has attribute 'color'.*\(and 2 more problems"):
        read_domain_file(tmp_path / "shop.yaml")


def test_an_item_without_a_title_is_named_by_file_record_and_field(tmp_path: Path) -> None:
    check = check_domain_file(_write(tmp_path, GOOD, SHOPS.replace("s3,Green Coat", "s3,")))
    assert check.problems == [
        f"items.path: {tmp_path / 'shop.csv'}, record 3 (line 4, id 's3'), field 'label': missing; "
        "expected the item's title"
    ]


def test_domain_check_prints_the_slots_or_the_located_problems(tmp_path: Path) -> None:
    good = runner.invoke(app, ["domain", "check", str(_write(tmp_path, GOOD))])
    assert good.exit_code == 0, good.output
    assert "domain shop: 4 items (garment), 4 slots" in good.output
    assert "size           size           ordinal      I-        3     100%  m, l, xl" in good.output
    bad = runner.invoke(app, ["domain", "check", str(_write(tmp_path, BROKEN))])
    assert bad.exit_code == 2
    assert f"error: {tmp_path / 'shop.yaml'}:4: field 'slots.colour.kind'" in bad.output
    assert "3 problems" in bad.output
    assert runner.invoke(app, ["domain", "check", "nowhere"]).exit_code == 2


def test_a_config_names_a_domain_file_and_gets_goal_users_without_ratings(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD)
    config = ExperimentConfig.model_validate({"domain": str(path)})
    assert config.users.source == "goals"
    assert ExperimentConfig.model_validate({}).users.source == "movielens"
    with pytest.raises(ConfigError, match="unknown domain 'shoes'"):
        ExperimentConfig.model_validate({"domain": "shoes"})


def test_phrasing_sections_are_kept_as_written_and_named_files_must_exist(tmp_path: Path) -> None:
    (tmp_path / "nlu.yaml").write_text("cues: {}\n", encoding="utf-8")
    good = GOOD + "phrasings:\n  nlu: nlu.yaml\n  crs: {greeting: 'Hello, reader!'}\n"
    domain = read_domain_file(_write(tmp_path, good))
    assert domain.phrasings == {"nlu": "nlu.yaml", "crs": {"greeting": "Hello, reader!"}}
    check = check_domain_file(_write(tmp_path, GOOD + "phrasings:\n  understanding: words.yaml\n"))
    missing = tmp_path / "words.yaml"
    assert check.problems == [
        f"{tmp_path / 'shop.yaml'}: field 'phrasings.understanding': file not found: {missing}"
    ]


def test_installed_packages_add_domains_through_entry_points(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from crsim.domains import ENTRY_POINT_GROUP, domain_catalogue

    path = _write(tmp_path, GOOD)
    (tmp_path / "shop_plugin.py").write_text(f"SHOP = {str(path)!r}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    entries = {
        "shop": EntryPoint(name="shop", value="shop_plugin:SHOP", group=ENTRY_POINT_GROUP),
        "gone": EntryPoint(name="gone", value="no_such_module:X", group=ENTRY_POINT_GROUP),
    }
    installed = {name: entry.value for name, entry in entries.items()}  # as if a distribution declared both
    monkeypatch.setattr(domain_catalogue, "_installed", installed)
    assert {"shop", "gone", "movies", "restaurants", "hotels"} <= set(known_domains())
    assert domain_named("shop").items["s2"].title == "Blue Shirt"
    with pytest.raises(ConfigError, match=r"domain 'gone' .*cannot be loaded"):
        domain_named("gone")


def test_a_csv_saved_by_a_spreadsheet_with_a_byte_order_mark_reads_the_same(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD)
    (tmp_path / "shop.csv").write_bytes(b"\xef\xbb\xbf" + SHOPS.encode("utf-8"))
    assert read_domain_file(path).items["s1"].title == "Red Shirt"
