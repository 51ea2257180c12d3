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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crsim.model.dialogue import Utterance

#: Where dataset conversions before `Utterance.mentioned_items` kept every item an utterance named
#: (recommended ones included). Still read, for files converted then; never written.
LEGACY_MENTIONS_KEY = "mentioned_items"


def split_linked(
    linked: Iterable[str], named_before: set[str] | frozenset[str]
) -> tuple[list[str], list[str]]:
    """`linked` ids (deduplicated, in order) as (recommended, mentioned) given the ids named earlier."""
    recommended: list[str] = []
    mentioned: list[str] = []
    for item_id in dict.fromkeys(linked):
        (mentioned if item_id in named_before else recommended).append(item_id)
    return recommended, mentioned


def named_items(utterance: Utterance) -> list[str]:
    """Every item id `utterance` names, deduplicated in order: recommended, then mentioned, then the
    ids an older conversion kept in `annotations["mentioned_items"]` (values not strings ignored)."""
    legacy = utterance.annotations.get(LEGACY_MENTIONS_KEY)
    old = [i for i in legacy if isinstance(i, str)] if isinstance(legacy, list) else []
    return list(dict.fromkeys([*utterance.recommended_items, *utterance.mentioned_items, *old]))


def split_named(named: Iterable[str], recommended: Iterable[str]) -> list[str]:
    """The ids of `named` (deduplicated, in order) that are not in `recommended`: what goes into
    `Utterance.mentioned_items` when a dataset labels recommendations among the items named."""
    chosen = set(recommended)
    return [i for i in dict.fromkeys(named) if i not in chosen]
