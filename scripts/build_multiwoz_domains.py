"""Build the item files of crsim's shipped `restaurants` and `hotels` domains from the MultiWOZ databases.

    python scripts/build_multiwoz_domains.py --shared ../shared/datasets

Reads the Cambridge venue databases of MultiWOZ (budzianowski/multiwoz, `db/restaurant_db.json` and
`db/hotel_db.json`, MIT licence) and writes, for each domain, `items.jsonl` (one venue per line: id,
name with capitalised words, the attributes the domain file's slots name) and the MultiWOZ `LICENSE`
beside it, into `src/crsim/domains/<domain>/`. The domain files themselves (`domain.yaml`: slots,
cues, synonyms) are written by hand. Output is byte-for-byte reproducible.
"""

from __future__ import annotations

import argparse
import json
import shutil
import string
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "src" / "crsim" / "data" / "domains"

#: Venue fields kept per domain, in output order (`name` becomes the title, `introduction` the description).
FIELDS = {
    "restaurants": ("food", "area", "pricerange", "address", "phone", "postcode", "introduction"),
    "hotels": ("type", "area", "pricerange", "stars", "parking", "internet", "address", "phone", "postcode"),
}
SOURCES = {"restaurants": "restaurant_db.json", "hotels": "hotel_db.json"}
RENAMED = {"introduction": "description"}


def venue(record: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """One item record: the id, the name with its words capitalised, the kept fields (stripped text)."""
    item: dict[str, Any] = {"id": str(record["id"]), "name": string.capwords(str(record["name"]).strip())}
    for field in fields:
        value = record.get(field)
        if value not in (None, "", "?"):
            item[RENAMED.get(field, field)] = str(value).strip()
    return item


def build(shared: Path, domain: str) -> int:
    """Write one domain's items.jsonl and LICENSE; the number of items."""
    records = json.loads((shared / "multiwoz" / "db" / SOURCES[domain]).read_text(encoding="utf-8"))
    items = sorted((venue(r, FIELDS[domain]) for r in records), key=lambda i: (len(i["id"]), i["id"]))
    folder = OUT / domain
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(item, ensure_ascii=False, sort_keys=False) + "\n" for item in items]
    (folder / "items.jsonl").write_text("".join(lines), encoding="utf-8")
    shutil.copyfile(shared / "multiwoz" / "LICENSE", folder / "LICENSE")
    return len(items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--shared", type=Path, required=True, help="folder holding multiwoz/db, multiwoz/LICENSE"
    )
    args = parser.parse_args()
    for domain in SOURCES:
        print(f"{domain}: {build(args.shared, domain)} items -> {OUT / domain}")


if __name__ == "__main__":
    main()
