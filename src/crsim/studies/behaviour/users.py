"""Per-simulator measures of one dialogue: how the simulated user behaved (docs/behaviour.md)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from crsim.language.message_rules import (
    USER_REPEAT_RUN_WORDS,
    end_marker,
    ends_cut,
    first_cue,
    indifferent,
    parrots,
    repeated,
    role_flip_patterns,
    title_in,
)
from crsim.language.message_rules import (
    meta_text as meta_cue,
)
from crsim.model.acts import Intent
from crsim.model.dialogue import Role
from crsim.model.domain import SlotKind
from crsim.model.items import Item
from crsim.model.text import near_duplicate, normalize, split_title_year, unarticle
from crsim.studies.behaviour.facts import Facts
from crsim.studies.behaviour.observation import Kind, Observation

#: Intents by which a closing message turns the last recommendation down (no satisfied ending).
_TURNED_DOWN = frozenset({Intent.REJECT, Intent.DENY, Intent.REQUEST_RECOMMENDATION, Intent.SEEN})


def _obs(
    facts: Facts, measure: str, hit: bool | None, note: str = "", message: int | None = None
) -> Observation:
    return Observation(Kind.SIMULATOR, facts.simulator, measure, facts.dialogue.id, hit, note, message)


def first_turn_end(facts: Facts) -> Iterator[Observation]:
    """The user ended on turn 1, or wrote an end marker into its first message."""
    users = facts.user_indices()
    if not users:
        yield _obs(facts, "first_turn_end", None, "no user message")
        return
    first = facts.utterances[users[0]].text
    marker = end_marker(first)
    if marker is not None:
        yield _obs(facts, "first_turn_end", True, f"end marker {marker!r} in the first message")
    elif facts.dialogue.termination is None:
        yield _obs(facts, "first_turn_end", None, "no termination recorded")
    else:
        ended = facts.user_ended and len(users) == 1
        yield _obs(facts, "first_turn_end", ended, "the user ended after one message" if ended else "")


def _constraints(facts: Facts) -> list[tuple[str, str]]:
    need = facts.dialogue.information_need
    if need is None:
        return []
    return [(slot, value.lower()) for slot in need.constraints for value in need.constraint_values(slot)]


def constraints_stated(facts: Facts) -> Iterator[Observation]:
    """Each constraint of the need, and all of them, stated in some user message."""
    need = facts.dialogue.information_need
    if need is None:
        yield _obs(facts, "all_constraints_stated", None, "no information need recorded")
        return
    wanted = _constraints(facts)
    if not wanted or facts.broken:
        yield _obs(facts, "all_constraints_stated", None, facts.broken or "the need has no constraints")
        return
    stated = set().union(*(facts.stated(i) for i in facts.user_indices()))
    missing = [f"{slot}={value}" for slot, value in wanted if (slot, value) not in stated]
    for slot, value in wanted:
        yield _obs(facts, "constraints_stated", (slot, value) in stated, f"{slot}={value}")
    yield _obs(
        facts, "all_constraints_stated", not missing, "missing " + ", ".join(missing) if missing else ""
    )


def requests_asked(facts: Facts) -> Iterator[Observation]:
    """Each requested slot of the need, and all of them, asked about in some user message."""
    need = facts.dialogue.information_need
    if need is None or not need.requests:
        yield _obs(
            facts,
            "all_requests_asked",
            None,
            "no information need recorded" if need is None else "the need has no requests",
        )
        return
    if facts.broken:
        yield _obs(facts, "all_requests_asked", None, facts.broken)
        return
    asked = set().union(*(facts.asked(i) for i in facts.user_indices()))
    for slot in need.requests:
        yield _obs(facts, "requests_asked", slot in asked, slot)
    missing = [slot for slot in need.requests if slot not in asked]
    yield _obs(
        facts, "all_requests_asked", not missing, "not asked: " + ", ".join(missing) if missing else ""
    )


def _title_named_by_crs(facts: Facts, index: int, item: Item) -> bool:
    """Whether the CRS named the item before `index`: listed it, or wrote its title."""
    if item.id in facts.named_before(index):
        return True
    return any(u.role is Role.CRS and title_in(u.text, item) for u in facts.utterances[:index])


def target_leaked(facts: Facts) -> Iterator[Observation]:
    """A user message names a target before the CRS named it."""
    need = facts.dialogue.information_need
    targets = [t for t in (need.targets if need else []) if facts.item(t) is not None]
    if not targets or not facts.user_indices():
        why = "no target in the catalogue" if facts.user_indices() else "no user message"
        yield _obs(facts, "target_leaked", None, why)
        return
    for index in facts.user_indices():
        text = facts.utterances[index].text
        for target in targets:
            item = facts.item(target)
            if item is not None and title_in(text, item) and not _title_named_by_crs(facts, index, item):
                yield _obs(facts, "target_leaked", True, item.display_title)
                return
    yield _obs(facts, "target_leaked", False)


def role_flips(facts: Facts, patterns: list[re.Pattern[str]]) -> Iterator[Observation]:
    """User messages in the recommender's voice, and dialogues with one."""
    users = facts.user_indices()
    if not users:
        yield _obs(facts, "role_flip_dialogue", None, "no user message")
        return
    earliest = ""
    for index in users:
        cue = first_cue(facts.utterances[index].text, patterns)
        yield _obs(facts, "role_flip", cue is not None, cue or "", index)
        earliest = earliest or (cue or "")
    yield _obs(facts, "role_flip_dialogue", bool(earliest), earliest)


def meta_text(facts: Facts) -> Iterator[Observation]:
    """User messages holding text about the message (preambles, speaker labels, the model's role)."""
    for index in facts.user_indices():
        cue = meta_cue(facts.utterances[index].text)
        yield _obs(facts, "meta_text", cue is not None, cue or "", index)


def user_truncated(facts: Facts) -> Iterator[Observation]:
    """User messages that stop without a complete ending."""
    for index in facts.user_indices():
        text = facts.utterances[index].text
        if not text.strip():
            yield _obs(facts, "user_truncated", None, "empty message", index)
            continue
        cut = ends_cut(text)
        yield _obs(facts, "user_truncated", cut, f"ends {text.rstrip()[-20:]!r}" if cut else "", index)


def _answers_anew(facts: Facts, users: list[int], position: int) -> bool:
    """Whether the user message at 1-based `position` among `users` states no preference again in
    answer to a different CRS question: the same words fit each question, nothing is said twice."""
    later, earlier = users[position - 1], users[position - 2]
    if not indifferent(facts.utterances[later].text):
        return False
    asked = [facts.utterances[i - 1] for i in (earlier, later) if i > 0]
    return (
        len(asked) == 2
        and all(u.role is Role.CRS for u in asked)
        and not near_duplicate(asked[0].text, asked[1].text)
    )


def _titles(facts: Facts, index: int) -> tuple[str, ...]:
    """Titles of the items a CRS message recommended or mentioned (a user quoting one copies no text)."""
    message = facts.utterances[index]
    found = (facts.item(i) for i in (*message.recommended_items, *message.mentioned_items))
    return tuple(t for item in found if item is not None for t in (item.title, item.display_title))


def repetition(facts: Facts) -> Iterator[Observation]:
    """Consecutive near-duplicate user messages; a user message repeating the CRS message before it."""
    users = facts.user_indices()
    if len(users) < 2:
        yield _obs(facts, "user_repeats", None, "fewer than 2 user messages")
    else:
        texts = [facts.utterances[i].text for i in users]
        pairs = [n for n in repeated(texts, USER_REPEAT_RUN_WORDS) if not _answers_anew(facts, users, n)]
        yield _obs(facts, "user_repeats", bool(pairs), f"user message {pairs[0]}" if pairs else "")
    answering = [i for i in users if i > 0 and facts.utterances[i - 1].role is Role.CRS]
    if not answering:
        yield _obs(facts, "parroting", None, "no user message follows a CRS message")
        return
    parroted = [
        users.index(i) + 1
        for i in answering
        if parrots(facts.utterances[i].text, facts.utterances[i - 1].text, _titles(facts, i - 1))
    ]
    yield _obs(facts, "parroting", bool(parroted), f"user message {parroted[0]}" if parroted else "")


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
    constraints = _constraints(facts)
    if not constraints:
        yield _obs(facts, "contradicting_acceptance", None, "the need has no constraints")
        return
    checked_any = False
    for index in facts.user_indices():
        for item_id in _accepted_after(facts, index):
            item = facts.domain.items[item_id]
            broken, checked = _violations(item, constraints, facts)
            checked_any = checked_any or checked > 0
            if broken:
                note = f"{item.display_title}: {'; '.join(broken)}"
                yield _obs(facts, "contradicting_acceptance", True, note)
                return
    note = "" if checked_any else "no acceptance of a checkable item"
    yield _obs(facts, "contradicting_acceptance", False if checked_any else None, note)


def stop_before_recommendation(facts: Facts) -> Iterator[Observation]:
    """The user ended the dialogue before any CRS message recommended an item."""
    if not facts.user_ended:
        yield _obs(facts, "stop_before_recommendation", None, "the user did not end the dialogue")
        return
    recommended = any(u.role is Role.CRS and u.recommended_items for u in facts.utterances)
    yield _obs(facts, "stop_before_recommendation", not recommended)


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
        yield _obs(facts, "missed_recommendation", None, facts.broken)
        return
    constraints = _constraints(facts)
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
            yield _obs(facts, "missed_recommendation", True, named[0].display_title)
            return
    note = "" if checked else "no named target or acceptable item followed by a user message"
    yield _obs(facts, "missed_recommendation", False if checked else None, note)


def _takes(facts: Facts, item_id: str, slot: str, value: str) -> bool:
    item = facts.item(item_id)
    return item is not None and value in (v.lower() for v in item.values(facts.domain.attribute(slot)))


def restated_constraint(facts: Facts) -> Iterator[Observation]:
    """A constraint of the need stated in three or more user messages (restated twice or more) while no
    item the CRS recommended after its first statement has it: the CRS did not take it (often it did
    not read the words; the note says in how many statements the CRSs' rules read it)."""
    constraints = _constraints(facts)
    if not constraints or facts.broken:
        yield _obs(facts, "restated_constraint", None, facts.broken or "the need has no constraints")
        return
    users = facts.user_indices()
    for slot, value in constraints:
        said = [i for i in users if (slot, value) in facts.stated(i)]
        if len(said) < 3:
            continue
        later = [
            item_id
            for u in facts.utterances[said[0] + 1 :]
            if u.role is Role.CRS
            for item_id in u.recommended_items
        ]
        if any(_takes(facts, item_id, slot, value) for item_id in later):
            continue
        read = sum(
            1
            for i in said
            if any(
                s == slot and (v or "").lower() == value for a in facts.understood[i].acts for s, v in a.slots
            )
        )
        note = f"{slot}={value} stated {len(said)} times; the CRSs' rules read it in {read}"
        yield _obs(facts, "restated_constraint", True, note)
        return
    yield _obs(facts, "restated_constraint", False)


def _single_stated(facts: Facts, index: int) -> set[str]:
    """Slots a user message states a value of that answers the slot's question: single-valued slots
    (naming one actor leaves "which actors?" open), and not the domain's item noun ("a hotel" names
    the kind of thing wanted, not a choice of its type)."""
    nouns = {facts.domain.item_noun.lower(), facts.domain.item_noun_plural.lower()}
    found = set()
    for slot, value in facts.stated(index):
        known = facts.domain.slots.get(slot)
        if (known is None or known.kind is not SlotKind.MULTI) and value not in nouns:
            found.add(slot)
    return found


def asked_stated_slot(facts: Facts, patterns: list[re.Pattern[str]] | None = None) -> Iterator[Observation]:
    """A user message asked about a single-valued slot the user had stated a value of (in it or
    before it). A message in the recommender's voice (`patterns`, default the domain's
    `role_flip_patterns`: "What kind of food do you want?") asks the other side's wish, not about an
    item, and is left out."""
    if facts.broken:
        yield _obs(facts, "asked_stated_slot", None, facts.broken)
        return
    voice = role_flip_patterns(facts.domain) if patterns is None else patterns
    stated: set[str] = set()
    for index in facts.user_indices():
        stated |= _single_stated(facts, index)
        if first_cue(facts.utterances[index].text, voice) is not None:
            continue
        both = sorted(facts.asked(index) & stated)
        if both:
            yield _obs(facts, "asked_stated_slot", True, both[0])
            return
    yield _obs(facts, "asked_stated_slot", False)


def simulator_observations(facts: Facts, patterns: list[re.Pattern[str]]) -> Iterator[Observation]:
    """Every simulator measure of one dialogue."""
    yield from first_turn_end(facts)
    yield from constraints_stated(facts)
    yield from requests_asked(facts)
    yield from target_leaked(facts)
    yield from role_flips(facts, patterns)
    yield from meta_text(facts)
    yield from user_truncated(facts)
    yield from repetition(facts)
    yield from contradicting_acceptance(facts)
    yield from stop_before_recommendation(facts)
    yield from missed_recommendation(facts)
    yield from restated_constraint(facts)
    yield from asked_stated_slot(facts, patterns)
