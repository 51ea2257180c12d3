"""The shipped movie domain: MovieLens latest-small movies joined with ReDial metadata.

Built by `scripts/build_movies.py`; described by the `movies` domain file; loaded once per process
and shared read-only. The slot tables below are what the domain file says, for older callers.
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
from functools import cache
from importlib.resources import files
from pathlib import Path

from crsim.model.domain import Domain
from crsim.model.items import ItemCollection

#: Slot name -> item attribute a user may state preferences about.
MOVIE_INFORMABLE_SLOTS = {
    "genre": "genres",
    "actor": "actors",
    "director": "directors",
    "decade": "decade",
    "keyword": "keywords",
}
#: Slot name -> item attribute a user may ask about once an item is recommended.
MOVIE_REQUESTABLE_SLOTS = {"plot": "plot", "director": "directors", "actor": "actors", "year": "year"}


def _resource(name: str) -> Path:
    return Path(str(files("crsim.domains") / "movielens" / name))


def movie_items() -> ItemCollection:
    """The shipped movies (the items of the `movies` domain)."""
    return movie_domain().items


def movie_domain() -> Domain:
    """The shipped movie domain, read from its domain file (`crsim/domains/movies/domain.yaml`)."""
    from crsim.domains import domain_named

    return domain_named("movies")


def movie_domain_over(items: ItemCollection) -> Domain:
    """The movie domain (its slots and its vocabulary: phrasings, synonyms) over another collection of
    movies, e.g. a dataset's; named after the collection."""
    return dataclasses.replace(movie_domain(), name=items.name, items=items)


@cache
def movie_ratings() -> dict[str, dict[str, float]]:
    """MovieLens ratings of the shipped movies: user id -> item id -> rating (0.5-5)."""
    ratings: dict[str, dict[str, float]] = {}
    with gzip.open(_resource("ratings.csv.gz"), "rt", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            ratings.setdefault(row["user_id"], {})[row["item_id"]] = float(row["rating"])
    return ratings
