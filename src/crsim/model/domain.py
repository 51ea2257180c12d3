"""A domain: the item collection, the slots users state and ask about, and how people name them.

A domain is data (docs/domains.md): a YAML domain file names the items, the slots (each mapped to an
item attribute, with its kind, the words that name it and synonyms of its values), optionally a
ratings file, RecUserSim profile dictionaries and phrasing overrides. `crsim.domains` reads the
file into a `Domain`; components read the domain, never a domain name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar, overload

from crsim.core.collector import collector_paused
from crsim.model.items import ItemCollection


class SlotKind(StrEnum):
    """How a slot's values behave: one label, several labels, a number, an ordered label, or free text."""

    CATEGORICAL = "categorical"  # one value per item ("area: centre")
    MULTI = "multi"  # several values per item ("genres: comedy, drama")
    NUMERIC = "numeric"  # a number; users state a value or a range ("at least 4 stars")
    ORDINAL = "ordinal"  # labels with an order ("cheap" < "moderate" < "expensive")
    TEXT = "text"  # free text (a plot, an address): asked about, never matched as a value


@dataclass(frozen=True)
class Slot:
    """One slot of a domain: what users say, mapped to the item attribute it constrains or asks about."""

    name: str
    #: The item attribute (`Item.values(attribute)`) holding the slot's values.
    attribute: str
    kind: SlotKind = SlotKind.CATEGORICAL
    #: Users can state a value (a constraint, a preference).
    informable: bool = True
    #: Users can ask about it for a recommended item.
    requestable: bool = False
    #: Words by which people name the slot in a question ("what cuisine?").
    cues: tuple[str, ...] = ()
    #: Canonical lower-cased value -> other phrasings of it ("cheap" -> "inexpensive", "budget").
    synonyms: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Ordinal slots: the values from lowest to highest.
    order: tuple[str, ...] = ()
    #: How a CRS asks for the slot ("What kind of food would you like?"), if the domain says so.
    question: str | None = None
    #: Numeric slots: the unit said after a number ("pounds"), if the domain declares one.
    unit: str | None = None
    #: Numeric slots: the domain's own words that bound a number, by bound (`at_least`, `at_most`,
    #: `above`, `below`), beside the generic ones (`crsim.language.cues.COMPARISONS`).
    comparisons: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The slot's name in words: its first cue, else its name with spaces ("price range")."""
        return self.cues[0] if self.cues else self.name.replace("_", " ")

    def amount(self, value: str) -> str:
        """A value of a numeric slot as people say it: "an entrance fee of 20 pounds", "4 stars" (a slot
        named by its unit or a plural), "a weight of 2489" (no unit)."""
        label = self.label
        if self.unit:
            if label.lower() in (self.unit.lower(), plural(self.unit).lower()):
                return f"{value} {self.unit}"
            return f"{indefinite(label)} of {value} {self.unit}"
        if label.endswith("s") and not label.endswith("ss"):
            return f"{value} {label}"
        return f"{indefinite(label)} of {value}"


@dataclass(frozen=True)
class RatingsSource:
    """Where a domain's ratings live (users come from it) and which columns hold what."""

    path: Path
    user: str = "user_id"
    item: str = "item_id"
    rating: str = "rating"
    #: What messages call the ratings ("MovieLens"), and the prefix of the users' ids ("ml" -> "ml-7").
    name: str = "ratings"
    label: str = "user"


#: One meaning of a phrase: (slot name, canonical value).
SlotValue = tuple[str, str]


@dataclass(frozen=True)
class Domain:
    """Read-only resources shared by every component of a run.

    `informable_slots` and `requestable_slots` (slot -> attribute) are what older code reads; they
    and `slots` describe the same slots. A Domain built from the two mappings alone (tests, older
    callers) gets a `Slot` per entry with default properties.
    """

    name: str
    items: ItemCollection
    #: Slots a user can state a preference for (constraints), mapped to item attributes.
    informable_slots: dict[str, str] = field(default_factory=dict)
    #: Slots a user can ask about for a recommended item, mapped to item attributes.
    requestable_slots: dict[str, str] = field(default_factory=dict)
    #: What one item is called ("movie", "restaurant") and several of them.
    item_noun: str = "item"
    item_noun_plural: str = ""
    #: Every slot, informable or requestable, by name (file order).
    slots: Mapping[str, Slot] = field(default_factory=dict)
    #: Phrasing overrides: "nlg" (a template file path or set name for abus), "crs" (sentence -> text).
    phrasings: Mapping[str, Any] = field(default_factory=dict)
    #: RecUserSim profile dictionaries: a shipped dictionary name or a path to a YAML file.
    profiles: str | None = None
    #: Ratings file (users with rating histories come from it), if the domain has one.
    ratings: RatingsSource | None = None
    #: The domain file this domain was read from (None for a domain built in code).
    source: Path | None = None
    #: The item field popularity-ranked CRSs rank by (higher first); None: `num_ratings` if items have it.
    popularity: str | None = None

    def __post_init__(self) -> None:
        if not self.item_noun_plural:
            object.__setattr__(self, "item_noun_plural", plural(self.item_noun))
        if not self.slots:
            object.__setattr__(
                self, "slots", _slots_from_mappings(self.informable_slots, self.requestable_slots)
            )

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without what `per_domain` built (a Ray worker or a cache entry decides that)."""
        return {k: v for k, v in self.__dict__.items() if k != "_built"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def slot(self, name: str) -> Slot:
        """The slot called `name`; KeyError when the domain has none."""
        return self.slots[name]

    def attribute(self, slot: str) -> str:
        """The item attribute behind `slot` (the slot name itself for a slot the domain lacks)."""
        known = self.slots.get(slot)
        return known.attribute if known else slot

    def values(self, slot: str) -> list[str]:
        """The value vocabulary of the slot's attribute: distinct lower-cased values over the items."""
        return self.items.vocabulary(self.attribute(slot))

    def lexicon(self) -> Mapping[str, tuple[SlotValue, ...]]:
        """Lower-cased phrase -> the (slot, canonical value) pairs it names, from the item values of
        every informable categorical, multi and ordinal slot and their synonyms. Built once."""
        return self._lexicon

    @cached_property
    def _lexicon(self) -> dict[str, tuple[SlotValue, ...]]:
        meanings: dict[str, dict[SlotValue, None]] = {}
        for slot in self.slots.values():
            if not slot.informable or slot.kind in (SlotKind.TEXT, SlotKind.NUMERIC):
                continue
            for value in (*self.values(slot.name), *slot.order):
                meanings.setdefault(value.lower(), {})[(slot.name, value.lower())] = None
            for value, phrases in slot.synonyms.items():
                for phrase in (value, *phrases):
                    meanings.setdefault(phrase.lower(), {})[(slot.name, value.lower())] = None
        return {phrase: tuple(pairs) for phrase, pairs in meanings.items()}

    @property
    def informable(self) -> list[Slot]:
        """The informable slots, in file order."""
        return [s for s in self.slots.values() if s.informable]

    @property
    def requestable(self) -> list[Slot]:
        """The requestable slots, in the order of `requestable_slots`."""
        return [self.slots[name] for name in self.requestable_slots if name in self.slots]

    @property
    def attributes(self) -> list[str]:
        """The distinct item attributes the slots name (what the item collection must index)."""
        return list(dict.fromkeys(s.attribute for s in self.slots.values()))


def indefinite(phrase: str) -> str:
    """The phrase with "a" or "an" before it, by its first sound as spelt ("an attraction", "a hotel",
    "a university", "an hour", "an MP3 player")."""
    return f"{article(phrase)} {phrase}"


_AN_EXCEPTIONS = ("hour", "honest", "honour", "honor", "heir")
_A_EXCEPTIONS = ("uni", "use", "usu", "uti", "eu", "one", "once", "ewe", "ufo", "uk")


def article(phrase: str) -> str:
    """ "a" or "an" for the phrase that follows (see `indefinite`)."""
    word = phrase.strip().split(" ")[0] if phrase.strip() else ""
    lower = word.lower()
    if not word:
        return "a"
    if lower.startswith(_AN_EXCEPTIONS):
        return "an"
    if lower.startswith(_A_EXCEPTIONS) or lower == "us":
        return "a"
    if word.isupper() and len(word) > 1:  # an acronym is read letter by letter: "an MP3", "a DVD"
        return "an" if word[0] in "AEFHILMNORSX" else "a"
    return "an" if lower[0] in "aeiou8" else "a"


def plural(noun: str) -> str:
    """The English plural of a noun (its last word): "attraction" -> "attractions", "city" -> "cities",
    "bus" -> "buses", "wine glass" -> "wine glasses"."""
    head, _, last = noun.rpartition(" ")
    lower = last.lower()
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        last += "es"
    elif lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        last = last[:-1] + "ies"
    else:
        last += "s"
    return f"{head} {last}" if head else last


def _slots_from_mappings(informable: Mapping[str, str], requestable: Mapping[str, str]) -> dict[str, Slot]:
    """Slots with default properties for a Domain given only the slot -> attribute mappings."""
    slots: dict[str, Slot] = {}
    for name in dict.fromkeys([*informable, *requestable]):
        slots[name] = Slot(
            name=name,
            attribute=informable.get(name) or requestable[name],
            informable=name in informable,
            requestable=name in requestable,
        )
    return slots


_Built = TypeVar("_Built")

#: The `per_domain` builds a domain cache on disk keeps (`crsim.domains.disk_cache`): those whose cost grows
#: with the catalogue (the lexicon, the CRSs' item and text indexes), by `built_key`.
KEPT_BUILDS: set[str] = set()


def built_key(build: Callable[..., Any]) -> str:
    """The name a `per_domain` build is stored under on its domain (and in a domain cache entry)."""
    return f"{build.__module__}:{build.__qualname__}"


def built_parts(domain: Domain) -> dict[str, Any]:
    """What `per_domain` builds have made for this domain object so far, by `built_key`."""
    return domain.__dict__.setdefault("_built", {})  # type: ignore[no-any-return]


@overload
def per_domain(build: Callable[[Domain], _Built]) -> Callable[[Domain], _Built]: ...
@overload
def per_domain(*, kept: bool) -> Callable[[Callable[[Domain], _Built]], Callable[[Domain], _Built]]: ...
def per_domain(build: Callable[[Domain], _Built] | None = None, *, kept: bool = False) -> Any:
    """`build` run once per domain object and its result shared (a domain is frozen, so what is built
    from it is too). Stored on the domain object itself, so a domain rebuilt over the same items
    (`dataclasses.replace`) gets its own. `kept=True`: a domain cache on disk keeps the result
    (`crsim.domains.disk_cache`); it must then be picklable and depend on nothing but the domain."""

    def wrap(build: Callable[[Domain], _Built]) -> Callable[[Domain], _Built]:
        key = built_key(build)
        if kept:
            KEPT_BUILDS.add(key)

        @functools.wraps(build)
        def shared(domain: Domain) -> _Built:
            built = built_parts(domain)
            if key not in built:
                if kept:  # a catalogue-sized structure
                    with collector_paused():
                        built[key] = build(domain)
                else:
                    built[key] = build(domain)
            return built[key]  # type: ignore[no-any-return]

        return shared

    return wrap(build) if build is not None else wrap
