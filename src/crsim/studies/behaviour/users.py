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
from crsim.model.dialogue import Role
from crsim.model.domain import SlotKind
from crsim.model.items import Item
from crsim.model.text import near_duplicate
from crsim.studies.behaviour.facts import Facts
from crsim.studies.behaviour.observation import Observation
from crsim.studies.behaviour.user_facts import need_constraints, observe
from crsim.studies.behaviour.user_reactions import (
    contradicting_acceptance,
    missed_recommendation,
    stop_before_recommendation,
)


def first_turn_end(facts: Facts) -> Iterator[Observation]:
    """The user ended on turn 1, or wrote an end marker into its first message."""
    users = facts.user_indices()
    if not users:
        yield observe(facts, "first_turn_end", None, "no user message")
        return
    first = facts.utterances[users[0]].text
    marker = end_marker(first)
    if marker is not None:
        yield observe(facts, "first_turn_end", True, f"end marker {marker!r} in the first message")
    elif facts.dialogue.termination is None:
        yield observe(facts, "first_turn_end", None, "no termination recorded")
    else:
        ended = facts.user_ended and len(users) == 1
        yield observe(facts, "first_turn_end", ended, "the user ended after one message" if ended else "")


def constraints_stated(facts: Facts) -> Iterator[Observation]:
    """Each constraint of the need, and all of them, stated in some user message."""
    need = facts.dialogue.information_need
    if need is None:
        yield observe(facts, "all_constraints_stated", None, "no information need recorded")
        return
    wanted = need_constraints(facts)
    if not wanted or facts.broken:
        yield observe(facts, "all_constraints_stated", None, facts.broken or "the need has no constraints")
        return
    stated = set().union(*(facts.stated(i) for i in facts.user_indices()))
    missing = [f"{slot}={value}" for slot, value in wanted if (slot, value) not in stated]
    for slot, value in wanted:
        yield observe(facts, "constraints_stated", (slot, value) in stated, f"{slot}={value}")
    yield observe(
        facts, "all_constraints_stated", not missing, "missing " + ", ".join(missing) if missing else ""
    )


def requests_asked(facts: Facts) -> Iterator[Observation]:
    """Each requested slot of the need, and all of them, asked about in some user message."""
    need = facts.dialogue.information_need
    if need is None or not need.requests:
        yield observe(
            facts,
            "all_requests_asked",
            None,
            "no information need recorded" if need is None else "the need has no requests",
        )
        return
    if facts.broken:
        yield observe(facts, "all_requests_asked", None, facts.broken)
        return
    asked = set().union(*(facts.asked(i) for i in facts.user_indices()))
    for slot in need.requests:
        yield observe(facts, "requests_asked", slot in asked, slot)
    missing = [slot for slot in need.requests if slot not in asked]
    yield observe(
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
        yield observe(facts, "target_leaked", None, why)
        return
    for index in facts.user_indices():
        text = facts.utterances[index].text
        for target in targets:
            item = facts.item(target)
            if item is not None and title_in(text, item) and not _title_named_by_crs(facts, index, item):
                yield observe(facts, "target_leaked", True, item.display_title)
                return
    yield observe(facts, "target_leaked", False)


def role_flips(facts: Facts, patterns: list[re.Pattern[str]]) -> Iterator[Observation]:
    """User messages in the recommender's voice, and dialogues with one."""
    users = facts.user_indices()
    if not users:
        yield observe(facts, "role_flip_dialogue", None, "no user message")
        return
    earliest = ""
    for index in users:
        cue = first_cue(facts.utterances[index].text, patterns)
        yield observe(facts, "role_flip", cue is not None, cue or "", index)
        earliest = earliest or (cue or "")
    yield observe(facts, "role_flip_dialogue", bool(earliest), earliest)


def meta_text(facts: Facts) -> Iterator[Observation]:
    """User messages holding text about the message (preambles, speaker labels, the model's role)."""
    for index in facts.user_indices():
        cue = meta_cue(facts.utterances[index].text)
        yield observe(facts, "meta_text", cue is not None, cue or "", index)


def user_truncated(facts: Facts) -> Iterator[Observation]:
    """User messages that stop without a complete ending."""
    for index in facts.user_indices():
        text = facts.utterances[index].text
        if not text.strip():
            yield observe(facts, "user_truncated", None, "empty message", index)
            continue
        cut = ends_cut(text)
        yield observe(facts, "user_truncated", cut, f"ends {text.rstrip()[-20:]!r}" if cut else "", index)


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
        yield observe(facts, "user_repeats", None, "fewer than 2 user messages")
    else:
        texts = [facts.utterances[i].text for i in users]
        pairs = [n for n in repeated(texts, USER_REPEAT_RUN_WORDS) if not _answers_anew(facts, users, n)]
        yield observe(facts, "user_repeats", bool(pairs), f"user message {pairs[0]}" if pairs else "")
    answering = [i for i in users if i > 0 and facts.utterances[i - 1].role is Role.CRS]
    if not answering:
        yield observe(facts, "parroting", None, "no user message follows a CRS message")
        return
    parroted = [
        users.index(i) + 1
        for i in answering
        if parrots(facts.utterances[i].text, facts.utterances[i - 1].text, _titles(facts, i - 1))
    ]
    yield observe(facts, "parroting", bool(parroted), f"user message {parroted[0]}" if parroted else "")


def _takes(facts: Facts, item_id: str, slot: str, value: str) -> bool:
    item = facts.item(item_id)
    return item is not None and value in (v.lower() for v in item.values(facts.domain.attribute(slot)))


def restated_constraint(facts: Facts) -> Iterator[Observation]:
    """A constraint of the need stated in three or more user messages (restated twice or more) while no
    item the CRS recommended after its first statement has it: the CRS did not take it (often it did
    not read the words; the note says in how many statements the CRSs' rules read it)."""
    constraints = need_constraints(facts)
    if not constraints or facts.broken:
        yield observe(facts, "restated_constraint", None, facts.broken or "the need has no constraints")
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
        yield observe(facts, "restated_constraint", True, note)
        return
    yield observe(facts, "restated_constraint", False)


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
        yield observe(facts, "asked_stated_slot", None, facts.broken)
        return
    voice = role_flip_patterns(facts.domain) if patterns is None else patterns
    stated: set[str] = set()
    for index in facts.user_indices():
        stated |= _single_stated(facts, index)
        if first_cue(facts.utterances[index].text, voice) is not None:
            continue
        both = sorted(facts.asked(index) & stated)
        if both:
            yield observe(facts, "asked_stated_slot", True, both[0])
            return
    yield observe(facts, "asked_stated_slot", False)


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
