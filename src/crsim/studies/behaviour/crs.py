"""Per-CRS measures of one dialogue: cut messages, text that does not name the recommended item, claims
about a named item that its metadata contradicts, repeated messages (docs/behaviour.md)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from crsim.model.dialogue import Utterance
from crsim.model.domain import Domain, SlotKind
from crsim.model.items import Item
from crsim.model.text import normalize
from crsim.studies.behaviour.facts import Facts
from crsim.studies.behaviour.observation import Kind, Observation
from crsim.studies.behaviour.text import body, ends_cut, repeated, sentences, title_in

#: Years a claim may state: 1900-2039 as four digits, not followed by "s" (that is a decade).
_YEAR = re.compile(r"(?<![\d-])((?:19|20)\d\d)(?!\d|'?s\b)")
_DECADE = re.compile(r"(?<!\d)((?:19|20)\d0)'?s\b")
#: A sentence that goes on about the item named in the sentence before it.
_BACK_REFERENCE = re.compile(r"^(?:it|it's|it’s|this|that|the (?:film|movie|show|book|story))\b", re.I)
#: A year within this many years of the item's counts as the item's (release vs premiere years).
YEAR_TOLERANCE = 1
#: Slots whose cues include one of these words name what kind of item something is (genre, cuisine):
#: "a comedy", "a comedy movie" claims the kind.
_KIND_CUES = frozenset({"genre", "kind", "type", "category", "cuisine", "style"})
_CLAIM_WINDOW = 2


def _obs(
    facts: Facts, measure: str, hit: bool | None, note: str = "", message: int | None = None
) -> Observation:
    return Observation(Kind.CRS, facts.crs, measure, facts.dialogue.id, hit, note, message)


def _listed(facts: Facts, u: Utterance) -> list[Item]:
    return [item for i in u.recommended_items if (item := facts.item(i)) is not None]


def truncated(facts: Facts, caps: dict[str, int]) -> Iterator[Observation]:
    """CRS messages cut: at the configured character cap, or without a complete ending."""
    cap = caps.get(facts.crs)
    for index in facts.crs_indices():
        u = facts.utterances[index]
        if not u.text.strip():
            yield _obs(facts, "truncated", None, "empty message", index)
            continue
        own = body(u.text, _listed(facts, u))
        if cap is not None and len(own.rstrip()) >= cap:
            note = f"{len(own.rstrip())} characters, the configured cap is {cap}"
            yield _obs(facts, "truncated", True, note, index)
        elif ends_cut(own):
            yield _obs(facts, "truncated", True, f"ends {own.rstrip()[-20:]!r}", index)
        else:
            yield _obs(facts, "truncated", False, "", index)


def text_names_item(facts: Facts) -> Iterator[Observation]:
    """CRS messages whose own text names every item they recommend."""
    for index in facts.crs_indices():
        u = facts.utterances[index]
        if not u.recommended_items:
            continue
        listed = _listed(facts, u)
        if not listed:
            yield _obs(facts, "text_names_item", None, "no recommended item is in the catalogue", index)
            continue
        own = body(u.text, listed)
        missing = [item.display_title for item in listed if not title_in(own, item)]
        note = "does not name " + "; ".join(missing[:3]) if missing else ""
        yield _obs(facts, "text_names_item", not missing, note, index)


def _scope(text: str, item: Item) -> str | None:
    """The sentence naming the item, plus the next one when it refers back to it ("It's a ..."), with
    the title itself taken out (a year in a title is no claim); None if no sentence names it."""
    parts = sentences(text)
    for n, sentence in enumerate(parts):
        if title_in(sentence, item):
            scope = sentence
            if n + 1 < len(parts) and _BACK_REFERENCE.match(parts[n + 1]):
                scope += " " + parts[n + 1]
            return scope.replace(item.title, " ").replace(f"({item.year})", " ")
    return None


def _time_claims(scope: str, item: Item) -> list[str]:
    """Years and decades in the scope that are not the item's."""
    if item.year is None:
        return []
    wrong = [y for y in _YEAR.findall(scope) if abs(int(y) - item.year) > YEAR_TOLERANCE]
    decade = item.year // 10 * 10
    wrong += [f"{d}s" for d in _DECADE.findall(scope) if int(d) != decade]
    return [f"says {w}, the item is from {item.year}" for w in wrong]


def claim_phrases(domain: Domain) -> dict[str, list[tuple[str, str]]]:
    """Lower-cased value -> (slot, value) for the values of the label slots whose claims are checked:
    informable categorical or multi slots (not time slots) that users ask about (requestable) or that
    name the kind of item (`_KIND_CUES`); open vocabularies such as movie keywords, which catalogues
    list incompletely, are left out. Only canonical values, not synonyms, so a claim names a value."""
    found: dict[str, list[tuple[str, str]]] = {}
    for phrase, meanings in domain.lexicon().items():
        for slot, value in meanings:
            s = domain.slots.get(slot)
            if (
                s is None
                or s.kind not in (SlotKind.MULTI, SlotKind.CATEGORICAL)
                or s.attribute in ("decade", "year")
            ):
                continue
            if not (s.requestable or _KIND_CUES & {normalize(c) for c in s.cues}):
                continue
            if phrase == value:
                found.setdefault(phrase, []).append((slot, value))
    return found


def _claimed(words: list[str], start: int, end: int, slot: str, domain: Domain) -> bool:
    """Whether the words[start:end] value is claimed for the item: after an article ("a comedy") or
    before the item noun ("comedy movie") for a kind slot; after one of the slot's cue words within
    two words ("directed by X", "starring X") for any slot."""
    s = domain.slots[slot]
    cues = {normalize(c) for c in s.cues}
    before = words[max(0, start - _CLAIM_WINDOW) : start]
    if any(w in cues for w in before):
        return True
    if not _KIND_CUES & cues:
        return False
    nouns = {normalize(domain.item_noun), normalize(domain.item_noun_plural)}
    after = words[end] if end < len(words) else ""
    return (start > 0 and words[start - 1] in ("a", "an")) or after in nouns


def _attribute_claims(
    scope: str, item: Item, domain: Domain, phrases: dict[str, list[tuple[str, str]]]
) -> list[str]:
    """Slot values claimed for the item in the scope that its metadata does not hold: a phrase is
    wrong when it is claimed under some meaning and the item holds none of its claimed meanings."""
    words = normalize(scope).split()
    wrong: list[str] = []
    for start in range(len(words)):
        for end in range(min(len(words), start + 4), start, -1):
            meanings = phrases.get(" ".join(words[start:end]))
            if not meanings:
                continue
            claimed = [(slot, value) for slot, value in meanings if _claimed(words, start, end, slot, domain)]
            held = {slot: [v.lower() for v in item.values(domain.attribute(slot))] for slot, _ in claimed}
            checkable = [(slot, value) for slot, value in claimed if held[slot]]
            if checkable and not any(value in held[slot] for slot, value in checkable):
                slot, value = checkable[0]
                wrong.append(f"says {slot} {value}, the item has {', '.join(held[slot][:4])}")
            break
    return wrong


def claims(facts: Facts, phrases: dict[str, list[tuple[str, str]]]) -> Iterator[Observation]:
    """CRS messages naming one item with a year, decade or attribute claim its metadata contradicts."""
    for index in facts.crs_indices():
        u = facts.utterances[index]
        ids = list(dict.fromkeys([*u.recommended_items, *u.mentioned_items]))
        items = [item for i in ids if (item := facts.item(i)) is not None]
        text = body(u.text, _listed(facts, u))
        named = [item for item in items if title_in(text, item)]
        if len(named) != 1:
            continue  # no item, or several: a claim could not be pinned to one
        item = named[0]
        scope = _scope(text, item)
        if scope is None:
            continue
        wrong = _time_claims(scope, item) + _attribute_claims(scope, item, facts.domain, phrases)
        note = f"{item.display_title}: {wrong[0]}" if wrong else ""
        yield _obs(facts, "claim_contradicts_item", bool(wrong), note, index)


def crs_repeats(facts: Facts) -> Iterator[Observation]:
    """Consecutive near-duplicate CRS messages."""
    texts = [facts.utterances[i].text for i in facts.crs_indices()]
    if len(texts) < 2:
        yield _obs(facts, "crs_repeats", None, "fewer than 2 CRS messages")
        return
    pairs = repeated(texts)
    yield _obs(facts, "crs_repeats", bool(pairs), f"CRS message {pairs[0]}" if pairs else "")


def crs_observations(
    facts: Facts, caps: dict[str, int], phrases: dict[str, list[tuple[str, str]]]
) -> Iterator[Observation]:
    """Every CRS measure of one dialogue."""
    yield from truncated(facts, caps)
    yield from text_names_item(facts)
    yield from claims(facts, phrases)
    yield from crs_repeats(facts)
