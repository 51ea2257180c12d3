"""Per-simulator measures of how the simulated user reacts to recommendations (docs/behaviour.md):
accepting an item that contradicts its need, ending before any recommendation, and not hearing a
recommendation that fits."""

from __future__ import annotations

from collections.abc import Iterator

from crsim.language.message_rules import title_in
from crsim.model.acts import Intent
from crsim.model.dialogue import Role
from crsim.model.items import Item
from crsim.model.text import normalize, split_title_year, unarticle
from crsim.studies.behaviour.facts import Facts
from crsim.studies.behaviour.observation import Observation
from crsim.studies.behaviour.user_facts import need_constraints, observe

#: Intents by which a closing message turns the last recommendation down (no satisfied ending).
_TURNED_DOWN = frozenset({Intent.REJECT, Intent.DENY, Intent.REQUEST_RECOMMENDATION, Intent.SEEN})


def _violations(item: Item, constraints: list[tuple[str, str]], facts: Facts) -> tuple[list[str], int]:
    """The constraints the item's metadata contradicts, and how many could be checked at all (an
    item without values for a constraint's attribute cannot contradict it)."""
    broken, checked = [], 0
    for slot, value in constraints:
        values = [v.lower() for v in item.values(facts.domain.attribute(slot))]
        if not values:
            continue
        checked += 1
        if value not in values:
            broken.append(f"{slot}={value} (has {', '.join(values[:4])})")
    return broken, checked


def _accepted_after(facts: Facts, index: int) -> list[str]:
    """Catalogue items the user message at `index` accepts out of the CRS message just before it:
    what it accepts (`Facts.accepted`), or, when it is the user's closing message of a dialogue it
    ended right after a one-item recommendation and does not turn it down, that item (it ended
    satisfied); not an item the same message states a wish against (`_wishes_otherwise`)."""
    before = facts.utterances[index - 1] if index > 0 else None
    if before is None or before.role is not Role.CRS or not before.recommended_items:
        return []
    accepted = [i for i in facts.accepted(index) if i in before.recommended_items]
    closing = facts.user_ended and index == facts.user_indices()[-1] and len(before.recommended_items) == 1
    if not accepted and closing and not facts.understood[index].intents & _TURNED_DOWN:
        accepted = list(before.recommended_items)
    return [i for i in accepted if facts.item(i) is not None and not _wishes_otherwise(facts, index, i)]


def _wishes_otherwise(facts: Facts, index: int, item_id: str) -> bool:
    """Whether the user message at `index` states a value the item contradicts ("I'm in the mood for
    something from the 2000s" right after a 1990s film): it asks for something else, it does not
    accept the item."""
    item = facts.item(item_id)
    if item is None:
        return False
    return bool(_violations(item, sorted(facts.stated(index)), facts)[0])


def contradicting_acceptance(facts: Facts) -> Iterator[Observation]:
    """The user accepts (or ends satisfied on) an item that contradicts a constraint of its need."""
    constraints = need_constraints(facts)
    if not constraints:
        yield observe(facts, "contradicting_acceptance", None, "the need has no constraints")
        return
    checked_any = False
    for index in facts.user_indices():
        for item_id in _accepted_after(facts, index):
            item = facts.domain.items[item_id]
            broken, checked = _violations(item, constraints, facts)
            checked_any = checked_any or checked > 0
            if broken:
                note = f"{item.display_title}: {'; '.join(broken)}"
                yield observe(facts, "contradicting_acceptance", True, note)
                return
    note = "" if checked_any else "no acceptance of a checkable item"
    yield observe(facts, "contradicting_acceptance", False if checked_any else None, note)


def stop_before_recommendation(facts: Facts) -> Iterator[Observation]:
    """The user ended the dialogue before any CRS message recommended an item."""
    if not facts.user_ended:
        yield observe(facts, "stop_before_recommendation", None, "the user did not end the dialogue")
        return
    recommended = any(u.role is Role.CRS and u.recommended_items for u in facts.utterances)
    yield observe(facts, "stop_before_recommendation", not recommended)


#: Intents by which a user message reacts to a recommendation (took it in, whatever it then decided).
_REACTIONS = frozenset({Intent.ACCEPT, Intent.REJECT, Intent.SEEN, Intent.INQUIRE, Intent.DENY})


def _wanted(facts: Facts, item: Item, constraints: list[tuple[str, str]]) -> bool:
    """A target of the need, or an item that meets every constraint its metadata can be checked on
    (at least one)."""
    need = facts.dialogue.information_need
    if need is not None and item.id in need.targets:
        return True
    broken, checked = _violations(item, constraints, facts)
    return checked > 0 and not broken


def _names(text: str, item: Item) -> bool:
    """Whether a CRS text names the item: its title (`title_in`), or every word of a title of two or
    more words in any order (a reader still recognises "Binh. Thanh" as Thanh Binh)."""
    if title_in(text, item):
        return True
    wanted = normalize(unarticle(split_title_year(item.title)[0])).split()
    return len(wanted) >= 2 and set(wanted) <= set(normalize(text).split())


def _reacted(facts: Facts, index: int) -> bool:
    """Whether a user message reacts to a recommendation: a recorded or understood accept, reject,
    seen, deny or inquiry, or an item it accepts or says it has seen."""
    recorded = {a.intent for a in facts.utterances[index].acts}
    understood = facts.understood[index]
    heard = recorded | understood.intents
    return bool(
        heard & _REACTIONS or understood.inquiries or understood.accepted_items or understood.seen_items
    )


def missed_recommendation(facts: Facts) -> Iterator[Observation]:
    """The CRS's text named an item it recommended that is a target or meets the need, and the user's
    next message did not react to any recommendation (it did not hear it: asked again, restated). A
    message by which the user ends the dialogue takes the recommendation as it stands (ending on a
    fitting item is no miss)."""
    if facts.broken:
        yield observe(facts, "missed_recommendation", None, facts.broken)
        return
    constraints = need_constraints(facts)
    users = set(facts.user_indices())
    checked = False
    for index in facts.crs_indices():
        if index + 1 not in users:
            continue
        message = facts.utterances[index]
        named = [
            item
            for item in (facts.item(i) for i in message.recommended_items)
            if item is not None and _names(message.text, item) and _wanted(facts, item, constraints)
        ]
        if not named:
            continue
        checked = True
        closing = facts.user_ended and index + 1 == max(users)
        if not closing and not _reacted(facts, index + 1):
            yield observe(facts, "missed_recommendation", True, named[0].display_title)
            return
    note = "" if checked else "no named target or acceptable item followed by a user message"
    yield observe(facts, "missed_recommendation", False if checked else None, note)
