"""A domain's ratings table: its columns checked when the domain is read, its ratings read when a
population is built from it (a bad row named by its number)."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

from crsim.core.errors import CrsimError, DataError
from crsim.domains.findings import DomainCheck
from crsim.domains.schema import DomainFile
from crsim.model.domain import RatingsSource
from crsim.model.items import ItemCollection


def ratings_source(
    path: Path, spec: DomainFile, items: ItemCollection | None, check: DomainCheck
) -> RatingsSource | None:
    """The ratings source, after checking that its file exists and has the named columns."""
    if spec.ratings is None:
        return None
    source = RatingsSource(
        path=path.parent / spec.ratings.path,
        user=spec.ratings.user,
        item=spec.ratings.item,
        rating=spec.ratings.rating,
        name=spec.ratings.name or f"{spec.name} ratings",
        label=spec.ratings.label or spec.name,
    )
    try:
        header = next(csv.reader(_first_line(source.path)), [])
    except (CrsimError, StopIteration) as exc:
        check.problems.append(f"ratings.path: {exc}")
        return source
    missing = [c for c in (source.user, source.item, source.rating) if c not in header]
    if missing:
        check.problems.append(
            f"ratings.path: {source.path}: column(s) {', '.join(missing)} missing; "
            f"the header has {', '.join(header)}"
        )
    return source


def _first_line(path: Path) -> list[str]:
    if not path.is_file():
        raise DataError("file not found; expected a ratings table (.csv or .csv.gz)", path=str(path))
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            return [handle.readline()]
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read the file ({exc})", path=str(path)) from None


def read_ratings(source: RatingsSource) -> dict[str, dict[str, float]]:
    """A domain's ratings: user id -> item id -> rating; DataError naming the row of a bad rating."""
    ratings: dict[str, dict[str, float]] = {}
    opener = gzip.open if source.path.suffix == ".gz" else open
    with opener(source.path, "rt", encoding="utf-8", newline="") as handle:
        rows = csv.DictReader(handle)
        number = 0
        while True:
            number += 1
            try:
                row = next(rows)
            except StopIteration:
                break
            except csv.Error as exc:  # a cell over the csv module's limit: no ratings table has one
                raise DataError(
                    f"not readable as CSV ({exc})", path=str(source.path), record=number
                ) from None
            if None in row or None in row.values():
                raise DataError(
                    f"{'more' if None in row else 'fewer'} cells than the header's "
                    f"{len(rows.fieldnames or [])} columns; expected one per column",
                    path=str(source.path),
                    record=number,
                )
            try:
                value = float(row[source.rating])
            except (TypeError, ValueError):
                raise DataError(
                    f"expected a number, got {row.get(source.rating)!r}",
                    path=str(source.path),
                    record=number,
                    field=source.rating,
                ) from None
            ratings.setdefault(row[source.user], {})[row[source.item]] = value
    return ratings
