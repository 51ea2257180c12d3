"""The conversational patterns GCDF1 recognises, as predicates over turns of one domain.

Each predicate answers one question about system (or user) turns, e.g. "did the system report
that nothing matches?" or "did it offer an entity or a booking?". They follow the reference
evaluator's MultiWOZ rules: services are matched by name, a domain's booking acts may sit in the
separate `booking` service, and slot names are compared after normalisation.
"""

from __future__ import annotations

from collections.abc import Sequence

from crsim.studies.gcdf1.dialogue import ActKind, Ontology
from crsim.studies.gcdf1.turns import TurnView

_INFORM = ActKind.INFORM
_REQUEST = ActKind.REQUEST
_RECOMMEND = ActKind.RECOMMEND
_NO_OFFER = ActKind.NO_OFFER
_NO_BOOK = ActKind.NO_BOOK
_BOOKING_OFFER = ActKind.BOOKING_OFFER
_BOOK = ActKind.BOOK
_OFFER_BOOK = ActKind.OFFER_BOOK
_OFFER_BOOKED = ActKind.OFFER_BOOKED
_OFFERED = _INFORM | _RECOMMEND | _BOOK
_CHOICE = ("choice", "Choice")


class Rules:
    """Predicates bound to an ontology (entity slots, transactional domains, service names)."""

    def __init__(self, ontology: Ontology) -> None:
        self.ontology = ontology
        self.booking = ontology.booking_service
        self.general = ontology.general_service
        self.taxi = ontology.taxi_domain
        self._entities = {
            domain: frozenset(s.lower() for s in slots) for domain, slots in ontology.entity_slots.items()
        }

    # -- single system turns ------------------------------------------------------------------

    def requests_information(self, turn: TurnView, domain: str) -> bool:
        """The turn asks something in the domain (or about a booking)."""
        return bool((turn.acts(domain).kinds | turn.acts(self.booking).kinds) & _REQUEST)

    def requested_slot(self, turn: TurnView, domain: str, slot: str) -> bool:
        """The system asked for `slot`."""
        return slot in turn.acts(domain).slots(_REQUEST) or slot in turn.acts(self.booking).slots(_REQUEST)

    def offered_choice(self, turn: TurnView, domain: str) -> bool:
        """The system told the user how many options there are (a `choice` slot)."""
        return any(act.slot in _CHOICE for act in turn.acts(domain).acts)

    def no_offer(self, turn: TurnView, domain: str) -> bool:
        """The system reported that no entity matches."""
        return bool(turn.acts(domain).kinds & _NO_OFFER)

    def booking_failed(self, turn: TurnView, domain: str) -> bool:
        """A transactional domain and a failed booking in this turn (in any service)."""
        return domain in self.ontology.transactional_domains and bool(turn.kinds & _NO_BOOK)

    def confirms_booking(self, turn: TurnView, domain: str) -> bool:
        """The system gave a booking reference."""
        key = ("confirms_booking", domain)
        found = turn.memo.get(key)
        if found is None:
            found = turn.memo[key] = self._confirms_booking(turn, domain)
        return found

    def _confirms_booking(self, turn: TurnView, domain: str) -> bool:
        markers = self.ontology.ref_markers
        if domain in self.ontology.offer_book_domains:
            slots = turn.acts(domain).slots(_OFFER_BOOKED | _INFORM)
        else:
            mask = _BOOK | _INFORM
            slots = turn.acts(domain).slots(mask) + turn.acts(self.booking).slots(mask)
        return any(slot in markers for slot in slots)

    def offers_entity_or_booking(self, turn: TurnView, domain: str) -> bool:
        """The system proposed an entity (recommended it, or informed its entity slots) or offered
        to book one (without a booking failure in the same turn)."""
        key = ("offers_entity_or_booking", domain)
        found = turn.memo.get(key)
        if found is None:
            found = turn.memo[key] = self._offers_entity_or_booking(turn, domain)
        return found

    def _offers_entity_or_booking(self, turn: TurnView, domain: str) -> bool:
        entities = self._entities.get(domain, frozenset())
        if domain in self.ontology.offer_book_domains:
            if entities <= set(turn.acts(domain).slots(_INFORM)):
                return True
            return bool(turn.kinds & _OFFER_BOOK)
        if not entities:
            return False
        listed = self.ontology.entities(domain)
        if all(e in listed for e in entities) and turn.acts(domain).kinds & _RECOMMEND:
            return True
        offered = turn.acts(domain).slots(_OFFERED) + turn.acts(self.booking).slots(_OFFERED)
        if all(any(e in slot for slot in offered) for e in entities):
            return True
        transactional = domain in self.ontology.transactional_domains
        return transactional and bool(turn.kinds & _BOOKING_OFFER) and not turn.kinds & _NO_BOOK

    def answered(self, turn: TurnView, domain: str, request: str) -> bool:
        """The system informed the requested slot (`domain-slot`), or a booking reference for it."""
        if self.ontology.is_ref(request) and self.confirms_booking(turn, domain):
            return True
        prefix = f"{domain}-"
        return any(
            a.kinds & _INFORM and a.slot and a.value is not None and prefix + a.slot == request
            for a in turn.acts(domain).acts
        )

    def understood_request(self, turn: TurnView, domain: str, request: str) -> bool:
        """The system NLU recognised the request; True when the turn has no NLU annotation."""
        if not turn.has_nlu:
            return True
        return request in {f"{domain}-{slot}" for slot in turn.nlu_acts(domain).slots(_REQUEST)}

    # -- several system turns -----------------------------------------------------------------

    def offered_slot(self, turns: Sequence[TurnView], domain: str, slot: str) -> bool:
        """Some turn informed, recommended or booked a slot whose name contains `slot`."""
        for turn in turns:
            offered = turn.acts(domain).slots(_OFFERED) + turn.acts(self.booking).slots(_OFFERED)
            if any(slot in name for name in offered):
                return True
        return False

    def booking_failure_for_entity(self, turns: Sequence[TurnView], domain: str, slot: str) -> bool:
        """A booking failed in one of the turns and `slot` names the entity (a new one was chosen)."""
        if domain not in self.ontology.transactional_domains or slot not in self.ontology.entities(domain):
            return False
        return any(turn.kinds & _NO_BOOK for turn in turns)

    def booking_offer_for_entity(self, turns: Sequence[TurnView], domain: str, slot: str) -> bool:
        """The most recent system turn offered a booking and `slot` names the entity."""
        if slot not in self.ontology.entities(domain):
            return False
        if domain in self.ontology.offer_book_domains:
            return any(turn.acts(domain).kinds & _OFFER_BOOK for turn in turns)
        if domain not in self.ontology.transactional_domains:
            return False
        return bool(turns[0].kinds & _BOOKING_OFFER)

    def recommended_entity(self, turns: Sequence[TurnView], domain: str, slot: str) -> bool:
        """`slot` names the entity and the system recommended (or asked to select) one."""
        if slot not in self.ontology.entities(domain):
            return False
        return any(turn.acts(domain).kinds & _RECOMMEND for turn in turns)

    def switched_domain(self, user: TurnView, turns: Sequence[TurnView], domain: str) -> bool:
        """The system talked about another domain in between (taxi mentions excepted: in MultiWOZ
        they are usually annotation errors)."""
        taxi = self.taxi
        if taxi is not None and (any(taxi in s for s in user.services) or taxi in user.utterance):
            return False
        discussed: set[str] = set()
        for turn in turns:
            if taxi is not None and (taxi in turn.services or taxi in turn.utterance):
                return False
            discussed.update(turn.services)
        discussed.discard(self.booking)
        discussed.discard(domain)
        return bool(discussed)

    def taxi_active(self, turn: TurnView) -> bool:
        return self.taxi is not None and self.taxi in turn.services

    def span_domains(self, turns: Sequence[TurnView]) -> set[str]:
        found: set[str] = set()
        for turn in turns:
            found.update(turn.services)
        return found

    def several_domains(self, turn: TurnView) -> bool:
        return len(set(turn.services) - {self.general}) > 1
