"""Build crsim's shipped movie domain from MovieLens latest-small and the ReDial movie metadata.

    python scripts/build_movies.py --shared ../shared/datasets

Joins MovieLens movies to the ReDial/iEvaLM metadata (plot, directors, actors, genres) through
IMDb ids, keeps the movies found in both, adds MovieLens tags as keywords and rating counts as
popularity, and writes `src/crsim/domains/movielens/items.jsonl.gz` and `ratings.csv.gz` (the MovieLens
ratings of those movies). Output is byte-for-byte reproducible.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
from collections import Counter, defaultdict
from pathlib import Path

from rapidfuzz import fuzz

from crsim.model.items import Item
from crsim.model.text import STOPWORDS, normalize, split_title_year, unarticle

OUT = Path(__file__).resolve().parents[1] / "src" / "crsim" / "domains" / "movielens"
MAX_KEYWORDS = 10


def clean_movielens_title(raw: str) -> tuple[str, int | None, list[str]]:
    """'City of Lost Children, The (Cité des enfants perdus, La) (1995)' -> title, year, aliases."""
    name, year = split_title_year(raw)
    aliases: list[str] = []
    while name.endswith(")") and "(" in name:
        head, _, aka = name[:-1].rpartition("(")
        if not head.strip():
            break
        aliases.append(unarticle(aka.removeprefix("a.k.a. ").strip()))
        name = head.strip()
    return unarticle(name), year, aliases


def _same_film_name(redial_name: str, title: str) -> bool:
    """ReDial names joined by IMDb id are sometimes another film's ("Heat" for Poison Ivy II):
    keep one as an alias only when it is a close variant of the MovieLens title."""
    a, b = normalize(redial_name), normalize(title)
    return bool(a) and a != b and fuzz.ratio(a, b) >= 90


def _distinctive(alias: str) -> bool:
    """An alternative title worth linking: not a lone short or common word ("It", "S", "Ils")."""
    words = normalize(alias).split()
    return len(words) > 1 or (len(words) == 1 and len(words[0]) >= 4 and words[0] not in STOPWORDS)


def build(shared: Path) -> tuple[list[Item], list[tuple[str, str, str]]]:
    ml = shared / "movielens" / "ml-latest-small"
    with open(shared / "redial" / "ievalm_id2info.json", encoding="utf-8") as handle:
        redial = json.load(handle)
    by_imdb = {info["imdb_id"]: (rid, info) for rid, info in redial.items() if info.get("imdb_id")}

    with open(ml / "links.csv", encoding="utf-8") as handle:
        imdb_of = {row["movieId"]: f"tt{row['imdbId']}" for row in csv.DictReader(handle)}
    with open(ml / "ratings.csv", encoding="utf-8") as handle:
        ratings = [(r["userId"], r["movieId"], r["rating"]) for r in csv.DictReader(handle)]
    tags: dict[str, Counter[str]] = defaultdict(Counter)
    with open(ml / "tags.csv", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            tags[row["movieId"]][row["tag"].strip().lower()] += 1
    counts = Counter(movie for _, movie, _ in ratings)
    sums: Counter[str] = Counter()
    for _, movie, rating in ratings:
        sums[movie] += float(rating)  # type: ignore[assignment]

    items: list[Item] = []
    with open(ml / "movies.csv", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            movie_id = row["movieId"]
            joined = by_imdb.get(imdb_of.get(movie_id, ""))
            if joined is None:
                continue
            redial_id, info = joined
            title, year, aliases = clean_movielens_title(row["title"])
            redial_name, _ = split_title_year(info.get("name", ""))
            if _same_film_name(redial_name, title):
                aliases.append(redial_name)
            genres = [g.lower() for g in row["genres"].split("|") if g != "(no genres listed)"]
            genres += [g.lower() for g in info.get("genre", []) if g.lower() not in genres]
            n = counts.get(movie_id, 0)
            extra: dict[str, object] = {
                "movielens_id": movie_id,
                "redial_id": redial_id,
                "imdb_id": info["imdb_id"],
                "num_ratings": n,
                "mean_rating": round(sums[movie_id] / n, 3) if n else None,
            }
            aliases = [a for a in aliases if _distinctive(a)]
            if aliases:
                extra["aliases"] = sorted(set(aliases))
            items.append(
                Item(
                    id=movie_id,
                    title=title,
                    year=year,
                    genres=genres,
                    directors=list(info.get("director", [])),
                    actors=list(info.get("star", [])),
                    plot=info.get("plot") or None,
                    keywords=[t for t, _ in tags[movie_id].most_common(MAX_KEYWORDS)],
                    extra=extra,
                )
            )
    kept = {item.id for item in items}
    return items, [r for r in ratings if r[1] in kept]


def write_gzip(path: Path, text: str) -> None:
    """gzip without a timestamp, so rebuilding gives identical bytes."""
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as handle:
        handle.write(text.encode("utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shared", type=Path, default=Path("../shared/datasets"))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    items, ratings = build(args.shared)
    args.out.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(i.model_dump(exclude_defaults=True), ensure_ascii=False) for i in items]
    write_gzip(args.out / "items.jsonl.gz", "\n".join(lines) + "\n")
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["user_id", "item_id", "rating"])
    writer.writerows(ratings)
    write_gzip(args.out / "ratings.csv.gz", buffer.getvalue())
    users = len({u for u, _, _ in ratings})
    print(f"{len(items)} items, {len(ratings)} ratings from {users} users -> {args.out}")


if __name__ == "__main__":
    main()
