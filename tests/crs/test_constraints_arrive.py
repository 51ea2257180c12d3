"""Constraints said the way CRSs understand them, and understood the ways users say them (issue 34,
item 2).

Every informable slot of every shipped domain, of the docs' bookshop and of a generated domain
(bench/awkward_catalogue.py: categorical, ordinal, multi-valued, numeric with and without a unit) is
stated by the agenda simulator's template NLG (every wording of the domain's template set) and read
by the built-in CRSs' understanding: the constraint must arrive on its slot. Numeric slots are also
said in the common paraphrases and with comparison words, which must arrive as bounds the CRSs'
item index applies.
"""

from __future__ import annotations

import random

import pytest

from catalogues import awkward_domain, bookshop_domain
from crsim.crs.item_index import item_index
from crsim.domains import domain_named
from crsim.language.understanding import Context, understand
from crsim.model.acts import DialogueAct, Intent
from crsim.model.domain import Domain, SlotKind
from crsim.sim.shared.nlg import DomainWords, NLGContext, TemplateNLG, domain_template_set, load_templates


@pytest.fixture(scope="module")
def awkward(tmp_path_factory: pytest.TempPathFactory) -> Domain:
    return awkward_domain(tmp_path_factory.mktemp("awkward"), count=60, seed=5)


@pytest.fixture(scope="module")
def books(tmp_path_factory: pytest.TempPathFactory) -> Domain:
    return bookshop_domain(tmp_path_factory.mktemp("books"))


def _stated(domain: Domain, slot: str, value: str) -> list[str]:
    """Every wording the domain's template NLG gives to `disclose(slot=value)`."""
    templates = load_templates(domain_template_set(domain))
    act = DialogueAct(intent=Intent.DISCLOSE, slots=[(slot, value)])
    texts = {
        TemplateNLG(templates, random.Random(seed), DomainWords.of(domain)).generate([act], NLGContext())
        for seed in range(40)
    }
    return sorted(texts)


def _arrived(domain: Domain, slot: str, value: str, text: str) -> bool:
    u = understand(text, domain)
    if slot == "decade" and domain.name == "movies":
        return any(p.label == value for p in u.periods)
    return value.lower() in [v.lower() for v in u.likes.get(slot, [])]


def _sample_values(domain: Domain, slot: str) -> list[str]:
    """A few values of the slot that users' goals take (the most frequent ones, and the rarest)."""
    counts = domain.items.value_counts(domain.attribute(slot))
    ranked = sorted(counts, key=lambda v: (-counts[v], v))
    return list(dict.fromkeys([*ranked[:3], ranked[-1]])) if ranked else []


@pytest.mark.parametrize("name", ["awkward", "books", "restaurants", "hotels", "movies"])
def test_every_slot_stated_by_the_simulator_arrives_at_the_crs(
    name: str, awkward: Domain, books: Domain
) -> None:
    domain = {"awkward": awkward, "books": books}.get(name) or domain_named(name)
    lost = []
    for slot in domain.informable:
        if name == "movies" and slot.name == "keyword":
            continue  # topics are free phrases that retrieval matches as text, not as slot values
        for value in _sample_values(domain, slot.name):
            for text in _stated(domain, slot.name, value):
                if not _arrived(domain, slot.name, value, text):
                    lost.append(f"{slot.name}={value}: {text!r} -> {understand(text, domain).likes}")
    assert not lost, f"{len(lost)} lost, e.g. {lost[:6]}"


def test_numeric_values_are_said_with_their_unit(awkward: Domain) -> None:
    said = " ".join(
        _stated(awkward, "fee", "4") + _stated(awkward, "rating", "3") + _stated(awkward, "rooms", "5")
    )
    assert "4 pounds" in said and "3 stars" in said and "5 rooms" in said
    assert "to be 4" not in said and "4 as the" not in said


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("I'd like the rooms to be 8.", "rooms", "8"),
        ("Something with 8 rooms, please.", "rooms", "8"),
        ("an 8-room place would be nice", "rooms", "8"),
        ("I'm looking for an attraction with 3 as the rooms.", "rooms", "3"),
        ("For the rooms, 3 would be great.", "rooms", "3"),
        ("three rooms", "rooms", "3"),
        ("I'm not really interested in that one. I'd like one with an entrance fee of 6 pounds.", "fee", "6"),
        ("at least 4 stars", "rating", ">=4"),
        ("4 stars or more and 2 rooms", "rating", ">=4"),
        ("under 5 pounds", "fee", "<5"),
        ("no more than 6 pounds", "fee", "<=6"),
        ("a rating of 2", "rating", "2"),
        ("the entrance fee should be 2.5 pounds", "fee", "2.5"),
    ],
)
def test_numeric_paraphrases_arrive(awkward: Domain, text: str, slot: str, value: str) -> None:
    assert understand(text, awkward).likes.get(slot) == [value]


def test_a_bare_number_answers_the_numeric_slot_just_asked(awkward: Domain) -> None:
    assert understand("4, please.", awkward, Context(elicited="rating")).likes == {"rating": ["4"]}


def test_hotel_stars_arrive_in_paraphrases() -> None:
    hotels = domain_named("hotels")
    for text in ("I'd like the stars to be 4.", "a 4-star hotel", "at least 4 stars"):
        assert understand(text, hotels).likes.get("stars") in (["4"], [">=4"]), text


def test_the_item_index_applies_bounds(awkward: Domain) -> None:
    index = item_index(awkward)
    fees = {item.id: float(item.values("fee")[0]) for item in awkward.items}
    for value, keep in (("<3", lambda f: f < 3), (">=6", lambda f: f >= 6), ("4", lambda f: f == 4)):
        chosen = {index.ids[p] for p in index.positions("fee", value)}
        assert chosen == {i for i, f in fees.items() if keep(f)}, value


def test_every_slot_kind_is_exercised(awkward: Domain) -> None:
    kinds = {slot.kind for slot in awkward.informable}
    assert {SlotKind.CATEGORICAL, SlotKind.ORDINAL, SlotKind.MULTI, SlotKind.NUMERIC} <= kinds
