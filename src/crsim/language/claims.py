"""Claims a message makes about the one item it names that the item's catalogue metadata contradicts.

A rule over one message and the items it recommends or mentions, used by the `llm` CRS on its drafts
(a draft that contradicts its item is asked again) and by `crsim analyze behaviour`
(`claim_contradicts_item`); docs/behaviour.md states the rule with its known errors.

The scope of claims is the sentence naming the item plus the next one when it refers back to it
("It's a ...", "They serve ..."), the title taken out. Claimed there: a year or decade that is not
the item's, and a slot value the item does not hold when the wording ties it to the item: a cue of the
slot near it before or after ("directed by X", "Italian cuisine", "Italian food"), "in the" before it
("in the east"), for a slot of kinds an article right before it (not after a preposition: "the story
of a family" claims no genre) or a noun after it ("a comedy", "Italian place"), and for an ordered
slot (a price range) the word anywhere ("affordable"), unless a wish or a negation comes just before
("if you want something cheap", "not too expensive").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from crsim.language.message_rules import title_in
from crsim.language.sentences import sentences
from crsim.model.domain import Domain, SlotKind
from crsim.model.items import Item
from crsim.model.text import normalize, split_title_year, unarticle

#: Years a claim may state: 1900-2039 as four digits, not followed by "s" (that is a decade).
_YEAR = re.compile(r"(?<![\d-])((?:19|20)\d\d)(?!\d|'?s\b)")
_DECADE = re.compile(r"(?<!\d)((?:19|20)\d0)'?s\b")
#: A year within this many years of the item's counts as the item's (release vs premiere years).
YEAR_TOLERANCE = 1
#: Slots whose cues include one of these words name what kind of item something is (genre, cuisine):
#: "a comedy", "a comedy movie" claims the kind.
KIND_CUES = frozenset({"genre", "kind", "type", "category", "cuisine", "style"})
#: Slots whose cues include one of these words name who appears in an item (actors): a value after
#: one of `_CAST_WORDS` among the four words before it, in its clause, is claimed ("a movie with
#: Terry Jones and John Cleese", "It stars ...").
CAST_CUES = frozenset({"actor", "actress", "cast", "starring"})
_CAST_WORDS = frozenset({"with", "stars", "starring", "featuring"})
#: Words (normalised) how far before or after a value a cue of its slot may stand.
CLAIM_WINDOW = 2
#: Nouns besides the domain's item nouns after which a kind value is claimed ("an Italian place").
_GENERIC_NOUNS = frozenset(
    {"place", "spot", "option", "choice", "pick", "one", "film", "movie", "restaurant"}
)
#: Words that, among the three before a value, make it a wish or a denial rather than a claim about
#: the item ("since you want something cheap", "not too expensive"; "isn't" is normalised "isn t").
_NOT_CLAIMED = frozenset(
    [
        "looking",
        "want",
        "wants",
        "wanted",
        "asked",
        "prefer",
        "prefers",
        "preferred",
        "like",
        "mood",
        "searching",
        "if",
        "not",
        "no",
        "t",
        "rather",
        "instead",
        "than",
        "nor",
        "without",
    ]
)

#: Words before "a"/"an" that make the noun after it the object of a preposition, not the item's kind.
_PREPOSITIONS = frozenset(["of", "about", "with", "for", "on", "from", "to", "into", "by", "like", "than"])

#: Marks that end a clause: a wish or denial before them does not reach the words after them.
_CLAUSE_BREAK = re.compile(r"[.!?:;,()\[\]]")
#: How many words before a value, within its clause, a wish or denial word (`_NOT_CLAIMED`) reaches.
WISH_REACH = 6

#: phrase -> the (slot, value) meanings under which it is a claim.
ClaimPhrases = dict[str, list[tuple[str, str]]]


def claim_phrases(domain: Domain) -> ClaimPhrases:
    """Lower-cased phrase -> (slot, value) for the values whose claims are checked: of informable
    categorical or multi slots (not time slots) that users ask about (requestable) or that name the
    kind of item (`KIND_CUES`), the canonical values only (open vocabularies such as movie keywords,
    which catalogues list incompletely, are left out); of ordered slots (a price range) the values and
    their synonyms ("affordable")."""
    found: ClaimPhrases = {}
    for phrase, meanings in domain.lexicon().items():
        for slot, value in meanings:
            s = domain.slots.get(slot)
            if s is None or s.attribute in ("decade", "year"):
                continue
            if s.kind is SlotKind.ORDINAL:
                found.setdefault(phrase, []).append((slot, value))
                continue
            if s.kind not in (SlotKind.MULTI, SlotKind.CATEGORICAL):
                continue
            if not (s.requestable or KIND_CUES & {normalize(c) for c in s.cues}):
                continue
            if phrase == value:
                found.setdefault(phrase, []).append((slot, value))
    return found


def _back_reference(domain: Domain) -> re.Pattern[str]:
    """A sentence that goes on about the item named in the sentence before it."""
    nouns = "|".join(re.escape(n) for n in {domain.item_noun, domain.item_noun_plural} if n)
    return re.compile(
        rf"^(?:it|it's|it’s|its|this|that|they|they're|their|the (?:film|movie|show|book|story|place|"
        rf"food|menu|{nouns}))\b",
        re.I,
    )


def claim_scope(text: str, item: Item, domain: Domain, others: Sequence[Item] = ()) -> str | None:
    """The first sentence naming the item and none of `others` (the other items the message names),
    plus the next one when it refers back to it, with the title itself (and its "(year)") taken out
    and a clause break (`_CLAUSE_BREAK`) in its place: a year or a value in a title is no claim, and
    a wish before the title ("You might like X, an Italian place") is about the title, not what
    follows it; None if no such sentence."""
    parts = sentences(text)
    for n, sentence in enumerate(parts):
        if title_in(sentence, item) and not any(title_in(sentence, other) for other in others):
            scope = sentence
            if n + 1 < len(parts) and _back_reference(domain).match(parts[n + 1]):
                scope += " " + parts[n + 1]
            scope = scope.replace(f"({item.year})", " ")
            for title in (item.title, unarticle(split_title_year(item.title)[0])):
                scope = re.sub(re.escape(title), " ; ", scope, flags=re.I)
            return scope
    return None


def time_claims(scope: str, item: Item) -> list[str]:
    """Years and decades in the scope that are not the item's."""
    if item.year is None:
        return []
    wrong = [y for y in _YEAR.findall(scope) if abs(int(y) - item.year) > YEAR_TOLERANCE]
    decade = item.year // 10 * 10
    wrong += [f"{d}s" for d in _DECADE.findall(scope) if int(d) != decade]
    return [f"says {w}, the item is from {item.year}" for w in wrong]


def _cue_near(words: list[str], start: int, end: int, cues: list[list[str]]) -> bool:
    """Whether a cue phrase ends within CLAIM_WINDOW words before words[start:end] or starts within
    CLAIM_WINDOW - 1 words after it."""
    for cue in cues:
        size = len(cue)
        for stop in range(max(size, start - CLAIM_WINDOW + 1), start + 1):
            if words[stop - size : stop] == cue:
                return True
        for begin in range(end, min(len(words), end + CLAIM_WINDOW)):
            if words[begin : begin + size] == cue:
                return True
    return False


def _claimed(words: list[str], start: int, end: int, slot: str, domain: Domain, clause: int = 0) -> bool:
    """Whether the words[start:end] value is claimed for the item (the module docstring); `clause`:
    where the value's clause starts. A wish or denial word earlier in the clause, up to WISH_REACH
    words before, makes the value none ("if you'd rather stay in the centre"); one before a colon does
    not reach past it ("It matches what you asked for: food italian" claims the item is Italian)."""
    if _NOT_CLAIMED & set(words[max(0, start - WISH_REACH, clause) : start]):
        return False
    s = domain.slots[slot]
    if s.kind is SlotKind.ORDINAL:
        return True
    cues = [normalize(c).split() for c in s.cues]
    if _cue_near(words, start, end, [c for c in cues if c]):
        return True
    if CAST_CUES & {" ".join(c) for c in cues} and _CAST_WORDS & set(
        words[max(0, start - 4, clause) : start]
    ):
        return True
    before = words[max(0, start - 3) : start]
    if before[-2:] == ["in", "the"] or before[:2] == ["in", "the"]:
        return True
    if not KIND_CUES & {" ".join(c) for c in cues}:
        return False
    nouns = _GENERIC_NOUNS | {normalize(domain.item_noun), normalize(domain.item_noun_plural)}
    if nouns & set(words[end : end + 2]):
        return True
    # "is a comedy", ", a comedy": an article right before, not after a preposition ("the story of a family")
    return (
        start > 0 and words[start - 1] in ("a", "an") and (start < 2 or words[start - 2] not in _PREPOSITIONS)
    )


def _fits(value: str, phrase: str, held: list[str], slot: str, domain: Domain) -> bool:
    """Whether the item holds the claimed value; a synonym of an ordered value ("affordable" for
    cheap) also fits the values next to it on the order (a moderate price is affordable too)."""
    if value in held:
        return True
    order = [o.lower() for o in domain.slots[slot].order]
    if phrase == value or value not in order:
        return False
    at = order.index(value)
    return any(v in order and abs(order.index(v) - at) <= 1 for v in held)


def attribute_claims(scope: str, item: Item, domain: Domain, phrases: ClaimPhrases) -> list[str]:
    """Slot values claimed for the item in the scope that its metadata does not hold: a phrase is
    wrong when it is claimed under some meaning and the item holds none of its claimed meanings."""
    words: list[str] = []
    clauses: list[int] = []  # per word, the index of the first word of its clause
    for part in _CLAUSE_BREAK.split(scope):
        found = normalize(part).split()
        clauses += [len(words)] * len(found)
        words += found
    wrong: list[str] = []
    start = 0
    while start < len(words):
        for end in range(min(len(words), start + 4), start, -1):
            phrase = " ".join(words[start:end])
            meanings = phrases.get(phrase)
            if not meanings:
                continue
            claimed = [
                (slot, value)
                for slot, value in meanings
                if _claimed(words, start, end, slot, domain, clauses[start])
            ]
            held = {slot: [v.lower() for v in item.values(domain.attribute(slot))] for slot, _ in claimed}
            checkable = [(slot, value) for slot, value in claimed if held[slot]]
            if checkable and not any(
                _fits(value, phrase, held[slot], slot, domain) for slot, value in checkable
            ):
                slot = checkable[0][0]
                wrong.append(f"says {slot} {phrase}, the item has {', '.join(held[slot][:4])}")
            start = end - 1
            break
        start += 1
    return wrong


def item_claims(
    text: str, item: Item, domain: Domain, phrases: ClaimPhrases, *, years: bool = True
) -> list[str]:
    """The claims of `text` about `item` that its metadata contradicts (empty when no sentence names
    it); years and decades only when `years`."""
    scope = claim_scope(text, item, domain)
    if scope is None:
        return []
    return (time_claims(scope, item) if years else []) + attribute_claims(scope, item, domain, phrases)


def contradicting_claims(
    text: str, items: list[Item], domain: Domain, phrases: ClaimPhrases, *, years: bool = True
) -> tuple[Item, list[str]] | None:
    """(an item, its contradicted claims) when `text` names one or more of `items` by title: the first
    named item with a contradicted claim, else the first named item with none; None when it names
    none. When several are named, an item's claims are read only in sentences naming it alone (a
    claim between two titles could not be pinned to one)."""
    named = [item for item in items if title_in(text, item)]
    if not named:
        return None
    for item in named:
        others = [other for other in named if other is not item]
        scope = claim_scope(text, item, domain, others)
        if scope is None:
            continue
        wrong = (time_claims(scope, item) if years else []) + attribute_claims(scope, item, domain, phrases)
        if wrong:
            return item, wrong
    return named[0], []
