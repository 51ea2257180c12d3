"""The dialogues GCDF1 reads: a goal per domain and alternating user/system turns of dialogue acts.

Both input kinds are converted into these types: SGD-style JSON from ConvLab-2/MultiWOZ
(`crsim.studies.gcdf1.sgd`) and crsim's own records (`crsim.studies.gcdf1.adapter`). Turn `i` of a
dialogue is a user turn when `i` is even and a system turn when it is odd, as in the SGD files.

An action's `kinds` says what it does (inform, request, recommend, no-offer, ...) as a bit set of
the `ActKind` flags below. For SGD files the kinds come from the act name (`Hotel-NoOffer`), for
crsim records from the intent; the metrics only ever look at kinds, slots and values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

USER = "USER"
SYSTEM = "SYSTEM"


class ActKind:
    """What an action does, as bit flags (plain ints: they are tested in the innermost loops).

    One action may be several kinds (an SGD act name matching several patterns).
    """

    INFORM = 1
    REQUEST = 2
    RECOMMEND = 4  # recommend or select: the system proposes an entity
    NO_OFFER = 8  # no entity matches the constraints
    NO_BOOK = 16  # a booking failed
    BOOKING_OFFER = 32  # the system offers to book (MultiWOZ `Booking-Inform`)
    BOOK = 64  # a booking was made
    OFFER_BOOK = 128  # train booking offer (MultiWOZ `Train-OfferBook`)
    OFFER_BOOKED = 256  # train booking confirmation (MultiWOZ `Train-OfferBooked`)


#: Acts whose slot-value pairs say something about an entity the system talks about.
SLOT_VALUE_KINDS = ActKind.INFORM | ActKind.RECOMMEND | ActKind.OFFER_BOOKED | ActKind.BOOK | ActKind.NO_OFFER

#: SGD act names are classified by these patterns (searched, case-sensitive), as the reference does.
_SGD_ACT_PATTERNS: tuple[tuple[int, re.Pattern[str]], ...] = (
    (ActKind.INFORM, re.compile("inform|Inform|INFORM")),
    (ActKind.REQUEST, re.compile("request|Request|REQUEST")),
    (ActKind.RECOMMEND, re.compile("Select|select|recommend|Recommend")),
    (ActKind.NO_OFFER, re.compile("noofer|NoOffer")),
    (ActKind.NO_BOOK, re.compile("NoBook|nobook")),
    (ActKind.BOOKING_OFFER, re.compile("booking-inform|Booking-Inform")),
    (ActKind.BOOK, re.compile(r"\bbook$|\bBook$")),
    (ActKind.OFFER_BOOK, re.compile("OfferBook$|offerbook$")),
    (ActKind.OFFER_BOOKED, re.compile("OfferBooked|offerbooked")),
)


@lru_cache(maxsize=4096)
def sgd_act_kinds(act: str) -> int:
    """The kinds of an SGD act name such as `Restaurant-Inform` or `Train-OfferBooked`."""
    kinds = 0
    for kind, pattern in _SGD_ACT_PATTERNS:
        if pattern.search(act):
            kinds |= kind
    return kinds


@dataclass(frozen=True, slots=True)
class Action:
    """One act with its slot and values (`values` empty for a request or a slot-less act)."""

    act: str
    slot: str = ""
    values: tuple[str, ...] = ()
    kinds: int = 0


@dataclass(frozen=True, slots=True)
class Frame:
    """The actions of one turn in one service (domain), and the slots the user requested there."""

    service: str
    actions: tuple[Action, ...] = ()
    requested_slots: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Turn:
    """One utterance; `nlu` (system turns) is what the system understood of the user turn before
    it: None when not annotated, an empty tuple when annotated as understanding nothing."""

    speaker: str
    utterance: str
    frames: tuple[Frame, ...] = ()
    nlu: tuple[Frame, ...] | None = None


@dataclass(frozen=True, slots=True)
class DomainGoal:
    """A domain of the user goal: constraints as (slot, value) in the order book, fail_book, info,
    fail_info (slot names as written in the goal), requested slots, and whether it books."""

    constraints: tuple[tuple[str, str], ...] = ()
    requests: tuple[str, ...] = ()
    transactional: bool = False


@dataclass(frozen=True, slots=True)
class GoalDialogue:
    """A dialogue to score. `system_nlu` says whether system NLU annotations exist at all; without
    them the NLU checks cannot run and are skipped (rather than counted as failures)."""

    dialogue_id: str
    goal: Mapping[str, DomainGoal]
    turns: tuple[Turn, ...]
    system_nlu: bool = True


@dataclass(frozen=True)
class Ontology:
    """Domain knowledge the behaviour rules need; `MULTIWOZ` holds the MultiWOZ 2.1 facts.

    `offer_book_domains` are domains (MultiWOZ train) where an entity is offered by informing all
    its entity slots and a booking is offered by an offer-book act. `taxi_domain` names the domain
    whose annotation errors the heuristics watch for (None: no such heuristics).
    """

    entity_slots: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    transactional_domains: frozenset[str] = frozenset()
    offer_book_domains: frozenset[str] = frozenset()
    coreference_values: Mapping[str, frozenset[str]] = field(default_factory=dict)
    ref_markers: tuple[str, ...] = ("ref", "Ref", "reference")
    booking_service: str = "booking"
    general_service: str = "general"
    taxi_domain: str | None = None

    def entities(self, domain: str) -> tuple[str, ...]:
        return self.entity_slots.get(domain, ())

    def is_ref(self, text: str) -> bool:
        """Whether a slot (or `domain-slot` request) names a booking reference."""
        return any(marker in text for marker in self.ref_markers)


MULTIWOZ = Ontology(
    entity_slots={
        "attraction": ("name", "Name"),
        "restaurant": ("name", "Name"),
        "hotel": ("name", "Name"),
        "train": ("trainID", "trainid"),
    },
    transactional_domains=frozenset({"hotel", "Hotel", "restaurant", "Restaurant", "train", "Train"}),
    offer_book_domains=frozenset({"train"}),
    coreference_values={"restaurant": frozenset({"the restaurant"})},
    taxi_domain="taxi",
)
