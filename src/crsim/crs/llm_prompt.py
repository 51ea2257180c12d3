"""What the `llm` CRS's prompt shows of an item: title, genres, directors and leading actors, the
description cut at a word, and the values of the domain's other slots."""

from __future__ import annotations

from typing import Any

from crsim.model.domain import Domain
from crsim.model.items import Item


def describe(
    item: Item, domain: Domain, *, cast: int, description_chars: int, people: bool = False
) -> dict[str, Any]:
    """What the prompt shows of an item (`people`: all its directors and three actors, for the items
    under discussion)."""
    return {
        "title": item.display_title,
        "genres": item.genres,
        "directors": item.directors if people or cast else [],
        "actors": item.actors[: 3 if people else cast],
        "plot": shorten(item.plot or "", description_chars),
        "details": details(item, domain, description_chars),
    }


def details(item: Item, domain: Domain, description_chars: int) -> str:
    """Every value the item has of the domain's slots that are not built-in item fields ("food:
    british; phone: 01223369299"), so a question about any requestable slot can be answered from
    them; only a value longer than `description_chars` (a description) is cut, as the plot is."""
    parts = []
    for slot in domain.slots.values():
        if slot.attribute not in item.extra:
            continue
        values = [v for v in (shorten(v, description_chars) for v in item.values(slot.attribute)) if v]
        if values:
            parts.append(f"{slot.name.replace('_', ' ')}: {', '.join(values)}")
    return "; ".join(dict.fromkeys(parts))


def shorten(text: str, limit: int) -> str:
    """`text` cut at the last word boundary within `limit` characters, marked with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(",;:.")
    return f"{cut}…" if cut else ""
