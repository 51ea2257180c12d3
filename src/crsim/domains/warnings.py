"""What in a valid domain will quietly hurt a study: warnings of `crsim domain check`, each located.

A domain that loads can still make wrong numbers: a placeholder such as `?` is a value users state
and CRSs read back; a value two slots share is set on both; two items with one title cannot be told
apart by a user or by the linking of titles in text; a requestable slot that most items lack is a
question no CRS can answer. None of these stops a run, so they are warnings (`--strict` makes them
fail the check). Each names the file, the record (item id and record number) or slot, and the field.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from crsim.core.yaml_files import load_yaml
from crsim.domains.schema import DomainFile
from crsim.model.domain import Domain, SlotKind, per_domain
from crsim.model.text import normalize

#: Cell values that stand for "unknown" rather than being one (compared stripped and lower-cased).
PLACEHOLDERS = frozenset(
    {"", "?", "??", "-", "--", "—", "n/a", "na", "n.a.", "nan", "null", "unknown", "tbd"}
)

_YES_NO = frozenset({"yes", "no", "true", "false"})

#: Records named in one warning before "and N more".
_SHOWN = 5


def study_warnings(domain: Domain) -> list[str]:
    """Every warning about `domain`, naming its domain file and item file."""
    items_path = _items_path(domain.source)
    items_file = str(items_path) if items_path is not None else f"items of {domain.name}"
    domain_file = str(domain.source) if domain.source is not None else f"domain {domain.name}"
    return [
        *placeholder_warnings(domain, items_file),
        *shared_value_warnings(domain, domain_file),
        *title_warnings(domain, items_file),
        *requestable_warnings(domain, domain_file),
    ]


def _items_path(domain_path: Path | None) -> Path | None:
    """The item file a (valid) domain file names, to locate warnings; None without a domain file."""
    if domain_path is None:
        return None
    spec = DomainFile.model_validate(load_yaml(domain_path.read_text(encoding="utf-8")))
    return domain_path.parent / spec.items.path


@per_domain
def _positions(domain: Domain) -> dict[str, int]:
    """Item id -> record number (file order from 1), made once: a catalogue with thousands of
    duplicate titles made it once per warning."""
    return {item_id: n for n, item_id in enumerate(domain.items.ids, start=1)}


def _records(domain: Domain, ids: Iterable[str]) -> str:
    """'records 3 (id 'a'), 7 (id 'b') and 2 more': record numbers count items in file order from 1."""
    position = _positions(domain)
    listed = list(ids)
    shown = ", ".join(f"{position.get(i, '?')} (id {i!r})" for i in listed[:_SHOWN])
    more = f" and {len(listed) - _SHOWN} more" if len(listed) > _SHOWN else ""
    return f"record{'s' if len(listed) > 1 else ''} {shown}{more}"


def _few(values: list[str]) -> str:
    head = ", ".join(repr(v) for v in values[:_SHOWN])
    return head + (f" and {len(values) - _SHOWN} more" if len(values) > _SHOWN else "")


def _fields(domain: Domain) -> dict[str, list[str]]:
    """Item attribute -> the slots that read it."""
    out: dict[str, list[str]] = defaultdict(list)
    for slot in domain.slots.values():
        out[slot.attribute].append(slot.name)
    return out


def placeholder_warnings(domain: Domain, items_file: str) -> list[str]:
    """Values such as `?`, `-`, `n/a` or blank text in a slot's field: users would state them and CRSs
    read them back as if they were values."""
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    attributes = [a for a in _fields(domain) if _may_hold_placeholders(domain, a)]
    ids = domain.items.ids
    columns = [domain.items.values_of(attribute) for attribute in attributes]
    for p, row in enumerate(zip(*columns, strict=True)) if attributes else ():
        for attribute, values in zip(attributes, row, strict=True):
            for value in values:
                if value.strip().lower() in PLACEHOLDERS:
                    found[(attribute, value)].append(ids[p])
    return [
        f"{items_file}: {_records(domain, ids)}, field {attribute!r}: placeholder value {value!r}; "
        "expected a value: leave the field out (empty CSV cell) to declare it missing, or replace it"
        for (attribute, value), ids in found.items()
    ]


def _text_attributes(domain: Domain) -> set[str]:
    """Attributes only text slots read: their values are never indexed (one per item, never looked up)."""
    kinds = defaultdict(set)
    for slot in domain.slots.values():
        kinds[slot.attribute].add(slot.kind)
    return {attribute for attribute, found in kinds.items() if found == {SlotKind.TEXT}}


def _may_hold_placeholders(domain: Domain, attribute: str) -> bool:
    """False when the attribute's value index (lower-cased values) shows no placeholder, so its items
    need not be read one by one; text attributes are always read."""
    if attribute in _text_attributes(domain):
        return True
    return any(value.strip() in PLACEHOLDERS for value in domain.items.vocabulary(attribute))


def shared_value_warnings(domain: Domain, domain_file: str) -> list[str]:
    """Values two informable single-valued slots share ('free': entrance fee and price range): said by
    a user, such a value may be set on both. One warning per pair of slots. Multi-valued slots (people,
    keywords) are left out, sharing is their nature; so are yes/no values, which the understanding
    reads only through a slot's synonyms ("free parking")."""
    single = [s for s in domain.informable if s.kind in (SlotKind.CATEGORICAL, SlotKind.ORDINAL)]
    vocab = {s.name: {v.lower() for v in domain.values(s.name)} - PLACEHOLDERS - _YES_NO for s in single}
    out = []
    for n, first in enumerate(single):
        for second in single[n + 1 :]:
            if first.attribute == second.attribute:
                continue
            shared = sorted(vocab[first.name] & vocab[second.name])
            if shared:
                out.append(
                    f"{domain_file}: fields 'slots.{first.name}', 'slots.{second.name}': "
                    f"{len(shared)} value{'s' if len(shared) > 1 else ''} in both ({_few(shared)}); a user "
                    "who says one may be understood to set both slots (give the values distinct wordings)"
                )
    return out


def title_warnings(domain: Domain, items_file: str) -> list[str]:
    """Items whose titles are the same once normalised (case, accents, punctuation, a year told apart):
    a user or the linking of titles in text cannot tell which one is meant."""
    by_title: dict[str, list[str]] = defaultdict(list)
    for item_id, title in zip(domain.items.ids, domain.items.display_titles(), strict=True):
        key = normalize(title)
        if key:
            by_title[key].append(item_id)
    return [
        f"{items_file}: {_records(domain, ids)}, field 'title': {len(ids)} items share the title "
        f"{domain.items[ids[0]].display_title!r} once case, accents and punctuation are ignored; "
        "expected distinct titles (add what tells them apart, e.g. a place or a year)"
        for ids in by_title.values()
        if len(ids) > 1
    ]


def requestable_warnings(domain: Domain, domain_file: str) -> list[str]:
    """A requestable slot that items lack (or hold only placeholders for): users ask, no CRS can answer."""
    out = []
    total = len(domain.items)
    text = _text_attributes(domain)
    for slot in domain.requestable:
        if slot.attribute in text:
            lacking = sum(
                1
                for values in domain.items.values_of(slot.attribute)
                if not [v for v in values if v.strip().lower() not in PLACEHOLDERS]
            )
        else:  # from the value index: the items holding a value that is not a placeholder
            index = domain.items.value_index(slot.attribute)
            holding = np.zeros(total, dtype=bool)
            for value, positions in index.items():
                if value.strip() not in PLACEHOLDERS:
                    holding[positions] = True
            lacking = total - int(holding.sum())
        if not lacking:
            continue
        if lacking == total:
            out.append(
                f"{domain_file}: field 'slots.{slot.name}': requestable slot with no values (field "
                f"{slot.attribute!r} is empty or a placeholder in every item); expected values, or "
                "`requestable: false`"
            )
        elif lacking * 2 >= total:
            out.append(
                f"{domain_file}: field 'slots.{slot.name}': requestable slot without a value in "
                f"{lacking} of {total} items; questions about them cannot be answered from the "
                "catalogue"
            )
    return out
