"""Recommended or only mentioned: reading the items a CRS names in text against the dialogue so far.

A CRS that returns only text (an HTTP adapter, a third-party CRS) gives crsim titles, which the item
linker turns into ids. Not every title it names is a recommendation: it answers questions about an
earlier recommendation, repeats a movie the user liked ("if you liked Heat, ..."). The rule
(docs/metrics.md, measured on ReDial's own labels by `scripts/redial_recommended.py`): an item named
for the first time in the dialogue is recommended; an item either participant named before is
being discussed, so it is mentioned, not recommended again.
"""

from __future__ import annotations

from collections.abc import Iterable


def split_linked(
    linked: Iterable[str], named_before: set[str] | frozenset[str]
) -> tuple[list[str], list[str]]:
    """`linked` ids (deduplicated, in order) as (recommended, mentioned) given the ids named earlier."""
    recommended: list[str] = []
    mentioned: list[str] = []
    for item_id in dict.fromkeys(linked):
        (mentioned if item_id in named_before else recommended).append(item_id)
    return recommended, mentioned
