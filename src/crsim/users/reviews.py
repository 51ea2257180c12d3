"""A generic reviews table: one row per (user, item) with a rating and, optionally, the review text.

PEPPER builds its users from per-user reviews (IMDb in the paper). Any such table can be read
here: CSV with a header row (`user_id,item_id,rating,review`), or JSON Lines with those keys,
either of them plain or gzip-compressed (`.gz`). `review` may be empty or missing (ratings only).
Bad input is a `DataError` naming the file, the record (the line number) and the field.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crsim.core.errors import DataError
from crsim.datasets.base import BadLine
from crsim.datasets.files import iter_lines

FIELDS = ("user_id", "item_id", "rating", "review")
REQUIRED = ("user_id", "item_id", "rating")


@dataclass(frozen=True)
class Review:
    """One user's rating of (and, when given, review text about) one item."""

    user_id: str
    item_id: str
    rating: float
    text: str = ""


def read_reviews(path: str | Path) -> list[Review]:
    """All rows of a reviews table, in file order. A (user, item) pair given twice is an error."""
    path = Path(path)
    if not path.is_file():
        raise DataError("file not found; expected a reviews table (CSV or JSON Lines)", path=str(path))
    name = path.name.removesuffix(".gz")
    rows = _jsonl_rows(path) if name.endswith((".jsonl", ".json")) else _csv_rows(path)
    reviews: list[Review] = []
    seen: dict[tuple[str, str], int] = {}
    for number, row in rows:
        review = _review(row, str(path), number)
        key = (review.user_id, review.item_id)
        if key in seen:
            raise DataError(
                f"user {review.user_id!r} reviews item {review.item_id!r} twice (first in record "
                f"{seen[key]}); expected one row per user and item",
                path=str(path),
                record=number,
            )
        seen[key] = number
        reviews.append(review)
    if not reviews:
        raise DataError("no rows; expected a reviews table with at least one row", path=str(path))
    return reviews


def _jsonl_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    for number, line in iter_lines(path):
        if isinstance(line, BadLine):
            raise DataError(line.message, path=str(path), record=number)
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(
                f"not JSON ({exc.msg}); expected one JSON object per line", path=str(path), record=number
            ) from None
        if not isinstance(data, dict):
            raise DataError(
                f"expected a JSON object with {', '.join(FIELDS)}, got {type(data).__name__}",
                path=str(path),
                record=number,
            )
        rows.append((number, data))
    return rows


def _csv_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    lines: list[str] = []
    for number, line in iter_lines(path):
        if isinstance(line, BadLine):
            raise DataError(line.message, path=str(path), record=number)
        lines.append(line)
    reader = csv.DictReader(io.StringIO("".join(lines)))
    header = reader.fieldnames or []
    missing = [f for f in REQUIRED if f not in header]
    if missing:
        raise DataError(
            f"the header lacks column(s) {', '.join(missing)}; expected columns {', '.join(FIELDS)}",
            path=str(path),
            record=1,
        )
    rows = []
    for row in reader:
        number = reader.line_num
        if None in row:
            raise DataError(
                f"more cells than the {len(header)} header columns", path=str(path), record=number
            )
        rows.append((number, dict(row)))
    return rows


def _review(row: dict[str, Any], path: str, number: int) -> Review:
    values: dict[str, str] = {}
    for field in ("user_id", "item_id"):
        value = row.get(field)
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str) or not value.strip():
            raise DataError(f"expected a non-empty id, got {value!r}", path=path, record=number, field=field)
        values[field] = value.strip()
    raw = row.get("rating")
    try:
        rating = float(raw) if not isinstance(raw, bool) and raw not in (None, "") else math.nan
    except (TypeError, ValueError):
        rating = math.nan
    if not math.isfinite(rating):
        raise DataError(f"expected a number, got {raw!r}", path=path, record=number, field="rating")
    text = row.get("review")
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise DataError(f"expected text, got {type(text).__name__}", path=path, record=number, field="review")
    return Review(values["user_id"], values["item_id"], rating, " ".join(text.split()))
