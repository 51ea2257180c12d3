"""`popular` and `retrieval` recommend what scoring every item would, while scoring only a few.

The reference below scores every item of the catalogue the way both CRSs did before they walked the
items in popularity order (`crsim.crs.ranked_top.top_ranked`): one array over the catalogue per term,
items holding a value found by reading the items themselves, the best k by score, ties in catalogue
order. Random dialogue states (likes, dislikes, numeric bounds, periods, words, liked items,
exclusions, values no item holds) on the shipped domains and on a seeded catalogue with many
popularity ties must get the same recommendations from both.
"""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from crsim.core.components import BuildContext
from crsim.crs.dialogue_state import DialogueState
from crsim.crs.popular import PopularCRS
from crsim.crs.retrieval import RetrievalCRS
from crsim.domains import domain_named, read_domain_file
from crsim.language.results import Period
from crsim.model.domain import Domain, SlotKind

Scores = npt.NDArray[np.float64]

VENUES = """\
name: venues
item_noun: restaurant
items: {path: items.jsonl, id: id, title: name}
popularity: reviews
slots:
  cuisine: {cues: [food, cuisine]}
  area: {cues: [area, part of town]}
  features: {kind: multi, cues: [features, facilities]}
  rating: {kind: numeric, unit: stars, cues: [rating, stars]}
  description: {kind: text, requestable: true, cues: [description]}
"""
CUISINES = ("thai", "italian", "indian", "greek", "french", "korean", "vegan", "cajun")
AREAS = ("north", "south", "east", "west", "centre")
FEATURES = ("parking", "wifi", "garden", "live music", "takeaway")
WORDS = [
    "cosy",
    "quiet",
    "lively",
    "smoky",
    "spicy",
    "grilled",
    "river",
    "garden",
    "brunch",
    "noodles",
    "curry",
    "fish",
    "tofu",
    "rooftop",
]


def write_venues(folder: Path, size: int, seed: int = 5) -> Path:
    """A seeded catalogue of `size` venues; reviews take few values, so popularity ties abound."""
    rng = random.Random(seed)
    with (folder / "items.jsonl").open("w", encoding="utf-8") as out:
        for n in range(size):
            record = {
                "id": f"v{n}",
                "name": f"{rng.choice(WORDS).title()} {rng.choice(('Inn', 'Bar', 'Grill'))} {n}",
                "cuisine": rng.choice(CUISINES),
                "area": rng.choice(AREAS),
                "features": sorted(rng.sample(FEATURES, rng.randint(0, 2))),
                "rating": rng.choice((1, 2, 3, 4, 5, 4.5)),
                "description": " ".join(rng.choices(WORDS, k=rng.randint(2, 6))),
                "reviews": rng.choice((0, 0, 1, 2, 3, 3, 7, 40)),
            }
            out.write(json.dumps(record) + "\n")
    (folder / "venues.yaml").write_text(VENUES, encoding="utf-8")
    return folder / "venues.yaml"


@pytest.fixture(scope="module")
def venues(tmp_path_factory: pytest.TempPathFactory) -> Domain:
    return read_domain_file(write_venues(tmp_path_factory.mktemp("venues"), 3000))


# --- the reference: every item scored ---------------------------------------------------------

_BOUNDED = re.compile(r"(>=|<=|>|<|)\s*(-?\d+(?:\.\d+)?)")


def holders(crs: PopularCRS, slot: str, value: str) -> npt.NDArray[np.intp]:
    """Positions of the items holding `value`, read from the items (numeric: equal or within a bound)."""
    domain = crs.domain
    attribute = domain.informable_slots[slot]
    match = _BOUNDED.fullmatch(value.strip())
    if domain.slots[slot].kind is SlotKind.NUMERIC and match is not None:
        sign, number = match.group(1), float(match.group(2))
        compare = {
            "": lambda a: math.isclose(a, number, rel_tol=1e-5, abs_tol=1e-8),
            ">=": lambda a: a >= number,
            "<=": lambda a: a <= number,
            ">": lambda a: a > number,
            "<": lambda a: a < number,
        }[sign]
        found = [
            k
            for k, item in enumerate(domain.items)
            if (x := _number(item.values(attribute))) is not None and compare(x)
        ]
    else:
        found = [
            k
            for k, item in enumerate(domain.items)
            if value.lower() in {v.lower() for v in item.values(attribute)}
        ]
    return np.array(found, dtype=np.intp)


def _number(values: list[str]) -> float | None:
    for value in values:
        try:
            return float(value)
        except ValueError:
            continue
    return None


def popular_scores(crs: PopularCRS, state: DialogueState) -> Scores:
    index, lex = crs.index, crs.lexicon
    scores: Scores = index.popularity * 0.99
    for slot in (*lex.value_slots, *lex.numeric_slots, *lex.people_slots):
        for value in state.likes.get(slot, []):
            scores[holders(crs, slot, value)] += 1.0
        for value in state.dislikes.get(slot, []):
            scores[holders(crs, slot, value)] -= 2.0
    if state.periods:
        scores += np.floor(np.max([index.period_match(p) for p in state.periods], axis=0))
    if state.newer_than:
        scores += index.years > state.newer_than
    if state.older_than:
        scores += (index.years > 0) & (index.years < state.older_than)
    return scores


def retrieval_scores(crs: RetrievalCRS, state: DialogueState) -> Scores:
    w, index, lex = crs.settings.weights, crs.index, crs.lexicon
    scores: Scores = index.popularity * w.popularity
    topic = (lex.topic_slot,) if lex.topic_slot else ()
    for slot in (*lex.value_slots, *lex.numeric_slots, *lex.people_slots, *topic):
        for value in state.likes.get(slot, []):
            scores[holders(crs, slot, value)] += crs._weight(slot)
        for value in state.dislikes.get(slot, []):
            scores[holders(crs, slot, value)] -= w.dislike
    if state.periods:
        scores += w.decade * np.max([index.period_match(p) for p in state.periods], axis=0)
    for period in state.disliked_periods:
        scores -= w.dislike * index.period_match(period)
    if state.newer_than:
        scores[index.years <= state.newer_than] -= w.dislike
    if state.older_than:
        scores[index.years >= state.older_than] -= w.dislike
    text = crs.text
    query = text.terms(" ".join(state.topic_words)) + text.terms(" ".join(state.free_words), 0.5)
    for item_id in state.liked_items[-3:]:
        query.update(text.item_terms(index.position[item_id], 2.0))
    liked = text.similarity(query)
    if liked is not None:
        scores += w.text * liked
    disliked = text.similarity(text.terms(" ".join(state.disliked_topic_words)))
    if disliked is not None:
        scores -= w.text * disliked
    return scores


def reference_top(crs: PopularCRS, state: DialogueState) -> list[str]:
    """The k best items not excluded, by score, ties in catalogue order, every item scored."""
    scores = retrieval_scores(crs, state) if isinstance(crs, RetrievalCRS) else popular_scores(crs, state)
    excluded = [crs.index.position[i] for i in state.excluded if i in crs.index.position]
    scores[excluded] = -np.inf
    order = np.lexsort((np.arange(len(scores)), -scores))[: crs.params.k]
    return [crs.index.ids[p] for p in order if np.isfinite(scores[p])]


def by_popularity(crs: PopularCRS) -> list[str]:
    """The item ids, most popular first, ties in catalogue order."""
    popularity = crs.index.popularity
    return [crs.index.ids[p] for p in np.lexsort((np.arange(len(popularity)), -popularity))]


# --- random dialogue states --------------------------------------------------------------------


def random_state(crs: PopularCRS, rng: random.Random) -> DialogueState:
    """Likes and dislikes of values the catalogue has and has not, numeric bounds, periods, words,
    liked items, and exclusions that often take the most popular items."""
    domain, lex, index = crs.domain, crs.lexicon, crs.index
    state = crs._new_state()
    ids = index.ids
    slots = [
        *lex.value_slots,
        *lex.numeric_slots,
        *lex.people_slots,
        *([lex.topic_slot] if lex.topic_slot else []),
    ]
    for slot in rng.sample(slots, rng.randint(0, min(4, len(slots)))):
        target = state.likes if rng.random() < 0.8 else state.dislikes
        if slot in lex.numeric_slots:
            number = rng.choice(domain.values(slot) or ["3"])
            values = [f"{rng.choice(('', '>=', '<=', '>', '<'))}{number}"]
        else:
            known = domain.values(slot)
            values = rng.sample(known, min(len(known), rng.randint(1, 2)))
        if rng.random() < 0.1:
            values.append("no such value")
        target[slot] = values
    if lex.period_slot and rng.random() < 0.4:
        start = rng.randrange(1930, 2020)
        state.periods = [Period("a period", start, start + rng.choice((0, 9)))]
        if rng.random() < 0.3:
            state.disliked_periods = [Period("another", start - 20, start - 11)]
        if rng.random() < 0.3:
            state.newer_than, state.older_than = rng.choice(((start, None), (None, start + 5)))
    texts = [item.display_title for item in rng.sample(list(domain.items), 3)]
    words = [w for text in texts for w in text.lower().split()] + ["zzyzx"]
    if rng.random() < 0.5:
        state.free_words = rng.sample(words, min(3, len(words)))
    if rng.random() < 0.3:
        state.topic_words = rng.sample(words, 1)
    if rng.random() < 0.2:
        state.disliked_topic_words = rng.sample(words, 1)
    if rng.random() < 0.3:
        state.liked_items = rng.sample(ids, rng.randint(1, 3))
    best_first = by_popularity(crs)[: max(1, len(ids) // 20)]
    state.excluded = set(rng.sample(ids, rng.randint(0, min(30, len(ids)))))
    if rng.random() < 0.4:
        state.excluded |= set(best_first[: rng.randint(1, len(best_first))])
    state.excluded |= set(state.liked_items)
    return state


def crs_of(kind: type[PopularCRS], domain: Domain, k: int) -> PopularCRS:
    params = kind.Params(k=k)
    return kind(params, BuildContext(domain=domain))


@pytest.mark.parametrize("kind", [PopularCRS, RetrievalCRS])
@pytest.mark.parametrize("name", ["movies", "restaurants", "hotels", "venues"])
def test_recommendations_equal_those_of_scoring_every_item(
    kind: type[PopularCRS], name: str, venues: Domain
) -> None:
    domain = venues if name == "venues" else domain_named(name)
    rng = random.Random(f"{kind.__name__} {name}")
    for k in (1, 3):
        crs = crs_of(kind, domain, k)
        for _ in range(120):
            state = random_state(crs, rng)
            assert crs._top(state) == reference_top(crs, state), (state.likes, state.dislikes, state.excluded)


@pytest.mark.parametrize("kind", [PopularCRS, RetrievalCRS])
def test_all_items_excluded_or_none_matching(kind: type[PopularCRS], venues: Domain) -> None:
    crs = crs_of(kind, venues, 3)
    state = crs._new_state()
    state.likes = {"cuisine": ["no such value"]}
    assert crs._top(state) == reference_top(crs, state) == by_popularity(crs)[:3]
    state.excluded = set(crs.index.ids) - {crs.index.ids[-1]}
    assert crs._top(state) == [crs.index.ids[-1]]
    state.excluded = set(crs.index.ids)
    assert crs._top(state) == []


@pytest.mark.parametrize("kind", [PopularCRS, RetrievalCRS])
def test_a_recommendation_scores_a_small_part_of_the_catalogue(
    kind: type[PopularCRS], venues: Domain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A liked cuisine (an eighth of the items) and an area: the best match is found among the most
    popular items and the most popular holders of each value, not by scoring all 3,000."""
    crs = crs_of(kind, venues, 1)
    scored: list[int] = []
    score = crs._scores
    monkeypatch.setattr(crs, "_scores", lambda state, at: scored.append(len(at)) or score(state, at))
    state = crs._new_state()
    state.likes = {"cuisine": ["thai"], "area": ["north"]}
    state.free_words = ["restaurant"]
    assert crs._top(state) == reference_top(crs, state)
    assert 0 < sum(scored) < len(venues.items) // 10


@pytest.mark.parametrize("name", ["movies", "restaurants", "venues"])
def test_the_rank_order_is_popularity_then_catalogue_order(name: str, venues: Domain) -> None:
    crs = crs_of(PopularCRS, venues if name == "venues" else domain_named(name), 1)
    assert [crs.index.ids[p] for p in crs.index.order] == by_popularity(crs)
    assert all(crs.index.order[crs.index.rank[p]] == p for p in range(len(crs.index.ids)))
