"""Build the per-user MovieLens tags of the shipped movies (`src/crsim/domains/movielens/tags.csv.gz`).

    python scripts/build_movie_tags.py --shared ../shared/datasets

Keeps the tags of MovieLens latest-small (`ml-latest-small/tags.csv`) given to movies of the shipped
domain, as `user_id,item_id,tag` (timestamps dropped; the shipped item ids are MovieLens movie ids).
PEPPER users built from MovieLens use a user's own tags as their feedback on a seen movie. Output is
byte-for-byte reproducible.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "crsim" / "domains" / "movielens"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, required=True, help="the shared datasets folder")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with gzip.open(args.out / "items.jsonl.gz", "rt", encoding="utf-8") as handle:
        shipped = {json.loads(line)["extra"]["movielens_id"]: json.loads(line)["id"] for line in handle}
    rows: list[tuple[int, int, str, str]] = []
    with open(args.shared / "movielens" / "ml-latest-small" / "tags.csv", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            item = shipped.get(row["movieId"])
            tag = " ".join(row["tag"].split())
            if item is not None and tag:
                rows.append((int(row["userId"]), int(item), row["userId"], tag))
    rows.sort(key=lambda r: (r[0], r[1], r[3].lower(), r[3]))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["user_id", "item_id", "tag"])
    seen: set[tuple[str, int, str]] = set()
    for _, item, user, tag in rows:
        if (user, item, tag.lower()) not in seen:
            seen.add((user, item, tag.lower()))
            writer.writerow([user, item, tag])
    with open(args.out / "tags.csv.gz", "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        out.write(buffer.getvalue().encode("utf-8"))
    print(f"{len(seen)} tags of {len({u for u, _, _ in seen})} users -> {args.out / 'tags.csv.gz'}")


if __name__ == "__main__":
    main()
