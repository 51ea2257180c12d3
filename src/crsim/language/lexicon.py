"""Domain vocabularies for rule-based understanding, as n-gram tables built from the domain's data.

Three mechanisms read slot values, each set up by the domain (its slots, value synonyms and the
`understanding` section of its phrasings, see `domain_cues.UnderstandingSpec`):

* value phrases: every informable slot's values (with plural forms) and synonyms ("inexpensive" ->
  pricerange cheap, "scary" -> genre horror), matched longest-first;
* people: slots whose values are person names (full names, single-word names, unique surnames),
  with words before a name that tell the slots apart ("directed by", "starring");
* periods and topics: a slot of release periods read from years and decade words, and a slot of
  topics (multi-word values, phrases after "about").

`lexicon_for` builds the lexicon once per domain and every dialogue shares it read-only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from crsim.language.cues import bound_phrases
from crsim.language.domain_cues import Cues, UnderstandingSpec, domain_cues
from crsim.model.domain import Domain, Slot, SlotKind, per_domain
from crsim.model.items import ItemCollection
from crsim.model.text import STOPWORDS, normalize

V = TypeVar("V")
#: What a value phrase means: one or more (slot, canonical value) pairs.
Meaning = tuple[tuple[str, str], ...]


class NGrams(Generic[V]):
    """Phrases keyed by token tuples, matched longest-first at a token position."""

    def __init__(self, entries: dict[tuple[str, ...], V]) -> None:
        self.entries = entries
        lengths: dict[str, set[int]] = {}
        for key in entries:
            lengths.setdefault(key[0], set()).add(len(key))
        self.lengths = {first: sorted(ls, reverse=True) for first, ls in lengths.items()}

    def match(self, words: list[str], used: list[bool], k: int) -> tuple[V, int] | None:
        """The value and length of the longest phrase starting at `words[k]` over unused tokens."""
        for length in self.lengths.get(words[k], ()):
            key = tuple(words[k : k + length])
            if len(key) == length and key in self.entries and not any(used[k : k + length]):
                return self.entries[key], length
        return None


@dataclass(frozen=True)
class Person:
    """A name in the collection with how many items list it under each people slot
    (`counts`, in the order of `Lexicon.people_slots`)."""

    name: str
    counts: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.counts)


class Lexicon:
    """Domain vocabularies as n-gram tables plus the domain's cue words. Read-only; see `lexicon_for`."""

    def __init__(self, domain: Domain) -> None:
        items = domain.items
        self.cues: Cues = domain_cues(domain)
        spec = self.cues.spec
        self.people_slots = tuple(s for s in spec.people.slots if s in domain.informable_slots)
        self.period_slot = spec.period.slot if spec.period.slot in domain.informable_slots else None
        self.topic_slot = spec.topics.slot if spec.topics.slot in domain.informable_slots else None
        special = {*self.people_slots, self.period_slot, self.topic_slot}
        self.value_slots = tuple(
            s.name
            for s in domain.informable
            if s.name not in special and s.kind is not SlotKind.TEXT and s.kind is not SlotKind.NUMERIC
        )
        self.numeric_slots = tuple(
            s.name for s in domain.informable if s.kind is SlotKind.NUMERIC and s.name not in special
        )
        self.numeric_words = {
            name: _numeric_words(domain.slot(name), self.cues.slot_words.get(name, frozenset()))
            for name in self.numeric_slots
        }
        self.bounds = {name: bound_phrases(domain.slot(name).comparisons) for name in self.numeric_slots}
        values = _value_phrases(domain, self.value_slots, spec)
        self.values = NGrams(values)
        self.value_words = frozenset(w for key in values for w in key)
        self.common = _lowercase_words(items)
        people = _people(items, [domain.informable_slots[s] for s in self.people_slots])
        self.people = NGrams({k: p for k, p in people.items() if len(k) > 1})
        self.single_names = {k[0]: p for k, p in people.items() if len(k) == 1}
        self.surnames = _surnames(people)
        topic_attribute = domain.informable_slots[self.topic_slot] if self.topic_slot else None
        self.keywords = NGrams(_keywords(items, topic_attribute, set(people) | set(values)))
        years = [year for year in items.years if year]
        self.min_year, self.max_year = (min(years), max(years)) if years else (1900, 2030)


def _value_phrases(
    domain: Domain, slots: Iterable[str], spec: UnderstandingSpec
) -> dict[tuple[str, ...], Meaning]:
    """Value phrases (the value, its plural, the domain's synonyms) -> the (slot, value) pairs named.

    Values come from the items (and an ordinal slot's order); synonyms count only for known values.
    `spec.only_forms` lists values too ambiguous to match as bare words, with the phrases that name
    them instead; values that are function words or answers ("no", "yes": parking, internet) are
    named only by their synonyms ("free parking"). Labels win over synonyms that spell the same phrase."""
    phrases: dict[tuple[str, ...], Meaning] = {}
    for slot_name in slots:
        slot = domain.slot(slot_name)
        known = set(domain.items.vocabulary(slot.attribute)) | {v.lower() for v in slot.order}
        only = spec.only_forms.get(slot_name, {})
        for value in sorted(known):
            if value in STOPWORDS or value in _ANSWER_WORDS:
                continue
            forms = list(only[value]) if value in only else [value, value + "s"]
            forms += [value[:-1] + "ies"] if value.endswith("y") and value not in only else []
            for form in forms:
                key = tuple(normalize(form).split())
                if key:
                    phrases[key] = _joined(phrases.get(key), (slot_name, value))
    synonyms: dict[tuple[str, ...], Meaning] = {}
    for slot_name in slots:
        slot = domain.slot(slot_name)
        known = set(domain.items.vocabulary(slot.attribute)) | {v.lower() for v in slot.order}
        for value, alternatives in slot.synonyms.items():
            if value.lower() not in known:
                continue
            for phrase in alternatives:
                key = tuple(normalize(phrase).split())
                if key:
                    synonyms[key] = _joined(synonyms.get(key), (slot_name, value.lower()))
    for key, meaning in synonyms.items():
        phrases.setdefault(key, meaning)
    return phrases


#: Values that say yes or no rather than name something ("parking: yes").
_ANSWER_WORDS = frozenset({"yes", "no", "none", "true", "false", "y", "n"})


def _joined(meaning: Meaning | None, pair: tuple[str, str]) -> Meaning:
    return (pair,) if not meaning else (meaning if pair in meaning else (*meaning, pair))


def synonym_table(domain: Domain, slot_name: str) -> dict[str, tuple[str, ...]]:
    """Everyday phrase -> canonical values of one slot (all values, known to the items or not)."""
    table: dict[str, tuple[str, ...]] = {}
    for value, alternatives in domain.slot(slot_name).synonyms.items():
        for phrase in alternatives:
            table[phrase] = (*table.get(phrase, ()), value.lower())
    return table


def _keywords(
    items: ItemCollection, attribute: str | None, taken: set[tuple[str, ...]]
) -> dict[tuple[str, ...], str]:
    """Multi-word topics (2 to 4 words) that are not also a person's name or a value phrase."""
    keywords = {}
    for keyword in items.vocabulary(attribute) if attribute else []:
        key = tuple(normalize(keyword).split())
        if 2 <= len(key) <= 4 and key not in taken:
            keywords[key] = keyword
    return keywords


def _people(items: ItemCollection, attributes: list[str]) -> dict[tuple[str, ...], Person]:
    """People by name tokens; one-word names that are stopwords or short are left out."""
    counts = [items.value_counts(attribute) for attribute in attributes]
    people: dict[tuple[str, ...], Person] = {}
    for name in set().union(*counts) if counts else set():
        key = tuple(normalize(name).split())
        if key and not (len(key) == 1 and (key[0] in STOPWORDS or len(key[0]) < 4)):
            people[key] = Person(name, tuple(c.get(name, 0) for c in counts))
    return people


def _surnames(people: Mapping[tuple[str, ...], Person]) -> dict[str, Person]:
    """Last names that identify exactly one person ("Spielberg"), among people with 2+ items."""
    seen: dict[str, list[Person]] = {}
    for key, person in people.items():
        if len(key) >= 2 and len(key[-1]) >= 4 and person.total >= 2:
            seen.setdefault(key[-1], []).append(person)
    return {last: found[0] for last, found in seen.items() if len(found) == 1 and last not in STOPWORDS}


#: Words of a slot's cues that do not name it alone ("how many stars").
_QUESTION_WORDS = frozenset({"how", "many", "much", "what", "which", "is", "the", "of", "a", "an"})


def _numeric_words(slot: Slot, cue_words: frozenset[str]) -> frozenset[str]:
    """Words naming a numeric slot next to a number: its cues' and name's words, its unit, and their
    singular and plural forms ("8 cylinders", "an 8-cylinder car", "20 pounds")."""
    words = set(cue_words) | set(normalize(slot.name.replace("_", " ")).split())
    words |= set(normalize(slot.unit).split()) if slot.unit else set()
    words -= _QUESTION_WORDS | STOPWORDS
    forms = set(words)
    for word in words:
        forms.add(word[:-1] if word.endswith("s") and len(word) > 3 else word + "s")
    return frozenset(forms)


def _lowercase_words(items: ItemCollection) -> frozenset[str]:
    """Words that occur in lower case in plots: a name made of them needs capitals to be matched."""
    words: set[str] = set()
    for plot in items.field_column("plot") or ():
        words.update(re.findall(r"\b[a-z]+\b", plot or ""))
    return frozenset(words)


@per_domain(kept=True)
def lexicon_for(domain: Domain) -> Lexicon:
    """The lexicon of a domain, built once per domain (`per_domain`) and then shared; a domain cache
    on disk keeps it."""
    return Lexicon(domain)
