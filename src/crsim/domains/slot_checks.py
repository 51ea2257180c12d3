"""The slots of a domain file, built and checked against the items: attributes exist, numeric values
are numbers, ordinal values are ordered, synonyms name values items have; the requestable order."""

from __future__ import annotations

import math

from crsim.domains.findings import DomainCheck
from crsim.domains.schema import DomainFile, SlotSpec
from crsim.model.domain import Slot, SlotKind
from crsim.model.items import ItemCollection


def build_slots(spec: DomainFile, items: ItemCollection | None, check: DomainCheck) -> dict[str, Slot]:
    slots = {}
    for name, slot_spec in spec.slots.items():
        slot = _slot(name, slot_spec)
        slots[name] = slot
        if items is not None:
            _check_slot(slot, items, check)
    return slots


def _slot(name: str, spec: SlotSpec) -> Slot:
    informable = spec.informable if spec.informable is not None else spec.kind is not SlotKind.TEXT
    return Slot(
        name=name,
        attribute=spec.attribute or name,
        kind=spec.kind,
        informable=informable,
        requestable=spec.requestable,
        cues=tuple(spec.cues),
        synonyms={
            value.lower(): tuple(p.lower() for p in phrases) for value, phrases in spec.synonyms.items()
        },
        order=tuple(v.lower() for v in spec.order),
        question=spec.question,
        unit=spec.unit,
        comparisons={
            bound: tuple(p.lower() for p in phrases)
            for bound, phrases in (spec.comparisons.model_dump() if spec.comparisons else {}).items()
            if phrases
        },
    )


def check_popularity(field: str, items: ItemCollection, check: DomainCheck) -> None:
    """The declared popularity field exists and holds numbers."""
    values = items.vocabulary(field)
    where = f"{check.path}: field 'popularity'"
    if not values:
        check.problems.append(f"{where}: no item has field {field!r}; expected a number per item")
    elif bad := [v for v in values if not _is_number(v)]:
        check.problems.append(f"{where}: field {field!r} has non-numeric values {_few(bad)}")


def _check_slot(slot: Slot, items: ItemCollection, check: DomainCheck) -> None:
    """The slot's attribute exists, numeric values are numbers, ordinal values are in `order`."""
    where = f"{check.path}: field 'slots.{slot.name}'"
    if slot.kind is SlotKind.TEXT:  # free text is never looked up by value: no index of it is built
        if not any(items.values_of(slot.attribute)):
            check.problems.append(
                f"{where}: no item has attribute {slot.attribute!r}; expected it in the item file"
            )
        return
    values = items.vocabulary(slot.attribute)
    if not values:
        check.problems.append(
            f"{where}: no item has attribute {slot.attribute!r}; expected it in the item file"
        )
        return
    if slot.kind is SlotKind.NUMERIC:
        bad = [v for v in values if not _is_number(v)]
        if bad:
            check.problems.append(f"{where}: numeric slot has non-numeric values {_few(bad)}")
    if slot.kind is SlotKind.ORDINAL:
        unordered = [v for v in values if v not in slot.order]
        if unordered:
            check.problems.append(f"{where}: values {_few(unordered)} are missing from `order`")
    if slot.kind in (SlotKind.CATEGORICAL, SlotKind.MULTI, SlotKind.ORDINAL):
        unknown = [v for v in slot.synonyms if v not in values and v not in slot.order]
        if unknown:
            check.warnings.append(f"{where}.synonyms: no item has the value(s) {_few(unknown)}")


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _few(values: list[str], shown: int = 5) -> str:
    head = ", ".join(repr(v) for v in values[:shown])
    return head + (f" and {len(values) - shown} more" if len(values) > shown else "")


def requestable_order(spec: DomainFile, slots: dict[str, Slot], check: DomainCheck) -> list[str]:
    requestable = [name for name, slot in slots.items() if slot.requestable]
    if spec.requestable_order is None:
        return requestable
    if sorted(spec.requestable_order) != sorted(requestable):
        check.problems.append(
            f"{check.path}: field 'requestable_order': expected each requestable slot once "
            f"({', '.join(requestable)}), got {', '.join(spec.requestable_order)}"
        )
    return [name for name in spec.requestable_order if name in slots]
