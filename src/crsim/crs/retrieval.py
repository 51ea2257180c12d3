"""`retrieval`: a CRS that elicits preferences and ranks items by attribute matches and text similarity.

It shares the dialogue policy of `popular` and changes three things: it asks about several slots
(skipping what the user already said), scores items with weighted attribute matches plus TF-IDF
similarity between the user's own words and each item's title, plot, keywords and genres, and
answers questions about the item under discussion from the item's metadata.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import repeat

import numpy as np
from pydantic import Field
from sklearn.feature_extraction.text import TfidfVectorizer

from crsim.core.components import BuildContext
from crsim.core.errors import ConfigError
from crsim.core.plugins import Params as RegistryParams
from crsim.crs.base import crs
from crsim.crs.dialogue_state import DialogueState
from crsim.crs.item_index import Positions, Scores, period_match
from crsim.crs.popular import PopularCRS, _act
from crsim.crs.ranked_top import Evidence
from crsim.crs.tfidf import fit_tfidf
from crsim.language.lexicon import lexicon_for
from crsim.language.phrasings import phrasing
from crsim.model.acts import DialogueAct, Intent
from crsim.model.domain import Domain, per_domain
from crsim.model.items import Item


class TextIndex:
    """TF-IDF vectors (unit length) of every item's title, plot, keywords and genres, built once.

    Similarity is computed from per-term posting lists (column slices of the CSC matrix), which
    for queries of a few dozen terms is much faster than a sparse matrix product.
    """

    #: Terms kept from a liked item's vector when it is used as a query (its strongest ones).
    ITEM_TERMS = 25

    def __init__(self, domain: Domain) -> None:
        vectorizer = _vectorizer()
        fitted = fit_tfidf(_item_texts(domain), vectorizer)  # = vectorizer.fit_transform, with numpy
        matrix = fitted.matrix
        self.size = matrix.shape[0]
        self.rows, columns = matrix.tocsr(), matrix.tocsc()
        self.indptr, self.indices, self.data = columns.indptr, columns.indices, columns.data
        self.vocabulary: dict[str, int] = fitted.vocabulary
        self.idf = fitted.idf
        self.analyzer = vectorizer.build_analyzer()

    def __getstate__(self) -> dict[str, object]:
        """Pickled without the analyzer (a closure over the fitted vectorizer), rebuilt on load."""
        return {k: v for k, v in self.__dict__.items() if k != "analyzer"}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self.analyzer = _vectorizer().build_analyzer()

    def terms(self, text: str, weight: float = 1.0) -> Counter[int]:
        """Weighted TF-IDF terms of a piece of user text (unknown words are ignored)."""
        if not text:
            return Counter()
        counts = Counter(self.vocabulary[t] for t in self.analyzer(text) if t in self.vocabulary)
        return Counter(
            {col: weight * (1.0 + math.log(n)) * float(self.idf[col]) for col, n in counts.items()}
        )

    def item_terms(self, position: int, weight: float = 1.0) -> Counter[int]:
        row = self.rows[position]
        strongest = np.argsort(-row.data, kind="stable")[: self.ITEM_TERMS]
        return Counter({int(row.indices[k]): weight * float(row.data[k]) for k in strongest})

    def similarity(self, query: Counter[int]) -> Scores | None:
        """Cosine similarity of every item with the query, or None for an empty query."""
        found = self.sparse_similarity(query)
        if found is None:
            return None
        scores = np.zeros(self.size)
        scores[found.positions] = found.values
        return scores

    def sparse_similarity(self, query: Counter[int]) -> Similar | None:
        """The items sharing a term with the query and their cosine similarity with it (every other
        item's is 0), or None for an empty query: work in the length of the query's posting lists."""
        positive = {c: v for c, v in query.items() if v > 0}
        norm = math.sqrt(sum(v * v for v in positive.values()))
        if not norm:
            return None
        indptr, indices, data = self.indptr, self.indices, self.data
        postings = [(indices[indptr[c] : indptr[c + 1]], data[indptr[c] : indptr[c + 1]]) for c in positive]
        positions = np.sort(np.concatenate([p for p, _ in postings])).astype(np.intp)
        positions = positions[np.flatnonzero(np.diff(positions, prepend=-1))]
        values = np.zeros(len(positions))
        for (items, weights), value in zip(postings, positive.values(), strict=True):
            values[np.searchsorted(positions, items)] += weights * (value / norm)
        return Similar(positions, values)


@dataclass(frozen=True)
class Similar:
    """Items with a non-zero similarity to a query: positions (ascending) and similarities."""

    positions: Positions
    values: Scores

    def at(self, at: Positions) -> Scores:
        """The similarity of the items at positions `at` (0 for those not listed)."""
        if not len(self.positions):
            return np.zeros(len(at))
        found = np.minimum(np.searchsorted(self.positions, at), len(self.positions) - 1)
        return np.where(self.positions[found] == at, self.values[found], 0.0)


def _vectorizer() -> TfidfVectorizer:
    """The vectorizer of every text index (its analyzer needs no fitting)."""
    return TfidfVectorizer(stop_words="english", sublinear_tf=True, ngram_range=(1, 2), min_df=1)


def _item_words(domain: Domain, item: Item) -> list[str]:
    """The text an item is matched on: title, plot, topics, the values of the value slots (a genre,
    a cuisine), then other text attributes (a description)."""
    lex = lexicon_for(domain)
    topics = [domain.informable_slots[lex.topic_slot]] if lex.topic_slot else []
    values = [domain.informable_slots[s] for s in lex.value_slots]
    texts = [s.attribute for s in domain.slots.values() if s.kind == "text" and s.attribute not in _OWN]
    parts = [item.title, item.plot or ""]
    parts += [" ".join(item.values(a)) for a in dict.fromkeys([*topics, *values, *texts])]
    return parts


def _item_texts(domain: Domain) -> Iterator[str]:
    """`_item_words` of every item joined by spaces, read from the collection's columns."""
    lex = lexicon_for(domain)
    topics = [domain.informable_slots[lex.topic_slot]] if lex.topic_slot else []
    values = [domain.informable_slots[s] for s in lex.value_slots]
    texts = [s.attribute for s in domain.slots.values() if s.kind == "text" and s.attribute not in _OWN]
    items = domain.items
    plots: Iterable[str | None] = items.field_column("plot") or repeat(None)
    columns = [items.values_of(a) for a in dict.fromkeys([*topics, *values, *texts])]
    for title, plot, *found in zip(items.titles, plots, *columns, strict=False):  # plots may repeat None
        yield " ".join([title, plot or "", *(" ".join(v) for v in found)])


#: Item fields `_item_words` reads itself.
_OWN = frozenset({"title", "plot", "year", "decade"})


@per_domain(kept=True)
def text_index(domain: Domain) -> TextIndex:
    """The TF-IDF index of a domain's items, built once per domain; a domain cache on disk keeps it."""
    return TextIndex(domain)


#: Slots with their own weight field (the movie domain's); any other slot's values weigh `genre`.
_SLOT_WEIGHTS = frozenset({"genre", "actor", "director", "keyword"})


class Weights(RegistryParams):
    """How much each kind of evidence adds to an item's score."""

    genre: float = Field(
        1.0,
        ge=0,
        description="Per stated genre the item has (and per stated value of any slot without a weight).",
    )
    actor: float = Field(1.5, ge=0, description="Per stated actor in the cast.")
    director: float = Field(1.5, ge=0, description="Per stated director.")
    decade: float = Field(
        0.8, ge=0, description="Release year inside a stated period (fading over 10 years)."
    )
    keyword: float = Field(1.0, ge=0, description="Per stated topic that is one of the item's keywords.")
    text: float = Field(3.0, ge=0, description="Cosine similarity with the user's words and liked items.")
    popularity: float = Field(0.3, ge=0, description="Scaled log rating count: a small tie-breaker.")
    dislike: float = Field(2.0, ge=0, description="Subtracted per disliked value, or a critique violated.")


@crs("retrieval")
class RetrievalCRS(PopularCRS):
    """Elicits the domain's informable slots (movies: genre, actor, period, director and topic); ranks by
    weighted attribute matches plus TF-IDF similarity with the user's words; answers questions about
    the requestable slots (movies: plot, year, director, cast) from the item's metadata."""

    class Params(PopularCRS.Params):
        max_questions: int = Field(
            3, ge=0, le=5, description="Preference questions (after the greeting) before recommending."
        )
        elicitation_order: tuple[str, ...] = Field(
            ("genre", "actor", "decade", "director", "keyword"),
            description="Slots asked about, in order; slots the user already filled are skipped. Left "
            "unset: the domain's order (its phrasings' `crs.elicitation_order`, else its informable "
            "slots in file order; the default shown is the movie domain's).",
        )
        weights: Weights = Field(default_factory=Weights, description="Scoring weights.")
        explain: bool = Field(True, description="Say which stated preferences a recommendation matches.")

    def __init__(self, params: Params, ctx: BuildContext) -> None:
        super().__init__(params, ctx)
        self.settings = params
        domain = self.domain
        unknown = [s for s in params.elicitation_order if s not in domain.informable_slots]
        if "elicitation_order" in params.model_fields_set and unknown:
            raise ConfigError(
                f"crs retrieval: elicitation_order names {', '.join(map(repr, unknown))}, not informable "
                f"slots of the domain {domain.name!r}; expected some of {', '.join(domain.informable_slots)}"
            )
        self.text = text_index(domain)

    def _slot_order(self) -> tuple[str, ...]:
        """The order given in the config; left unset, the domain's (`crs.elicitation_order` of its
        phrasings, else its informable slots in file order)."""
        known = self.domain.informable_slots
        if "elicitation_order" in self.settings.model_fields_set:
            return tuple(s for s in self.settings.elicitation_order if s in known)
        own = phrasing(self.domain, "crs").get("elicitation_order")
        return tuple(s for s in own if s in known) if own else tuple(known)

    def _weight(self, slot: str) -> float:
        """The weight of a stated value of `slot`: its own field, else the value weight (`genre`)."""
        w = self.settings.weights
        return float(getattr(w, slot)) if slot in _SLOT_WEIGHTS else w.genre

    def _scores(self, state: DialogueState, at: Positions) -> Scores:
        """Scores of the items at positions `at`: weighted attribute matches, period, text similarity
        with the user's words and liked items, popularity."""
        w, index, lex = self.settings.weights, self.index, self.lexicon
        scores: Scores = index.popularity[at] * w.popularity
        years = index.years[at]
        topic = (lex.topic_slot,) if lex.topic_slot else ()
        for slot in (*lex.value_slots, *lex.numeric_slots, *lex.people_slots, *topic):
            weight = self._weight(slot)
            for value in state.likes.get(slot, []):
                scores[index.holds(slot, value, at)] += weight
            for value in state.dislikes.get(slot, []):
                scores[index.holds(slot, value, at)] -= w.dislike
        if state.periods:
            scores += w.decade * np.max([period_match(years, p) for p in state.periods], axis=0)
        for period in state.disliked_periods:
            scores -= w.dislike * period_match(years, period)
        if state.newer_than:
            scores[years <= state.newer_than] -= w.dislike
        if state.older_than:
            scores[years >= state.older_than] -= w.dislike
        liked, disliked = self._similar(state)
        if liked is not None:
            scores += w.text * liked.at(at)
        if disliked is not None:
            scores -= w.text * disliked.at(at)
        return scores

    def _evidence(self, state: DialogueState) -> Evidence:
        """The most each stated preference adds to a score (`_scores`); the items similar to the
        user's words are scored in any case."""
        w, index, lex = self.settings.weights, self.index, self.lexicon
        evidence = Evidence(popularity_weight=w.popularity)
        topic = (lex.topic_slot,) if lex.topic_slot else ()
        for slot in (*lex.value_slots, *lex.numeric_slots, *lex.people_slots, *topic):
            for value in state.likes.get(slot, []):
                if index.holds_by_bound(slot, value):
                    evidence.rest += self._weight(slot)
                else:
                    evidence.lists.append((index.ranks(slot, value), self._weight(slot)))
        evidence.rest += w.decade if state.periods else 0.0
        liked, _ = self._similar(state)
        if liked is not None and w.text > 0:
            evidence.forced = liked.positions
        return evidence

    def _similar(self, state: DialogueState) -> tuple[Similar | None, Similar | None]:
        """The items similar to what the user likes (`_query`) and to the topics they dislike,
        remembered for the state they were computed for (one recommendation scores in rounds)."""
        key = (
            tuple(state.topic_words), tuple(state.free_words), tuple(state.liked_items[-3:]),
            tuple(state.disliked_topic_words),
        )  # fmt: skip
        remembered = state.memo.get("similar")
        if remembered is None or remembered[0] != key:
            disliked = self.text.sparse_similarity(self.text.terms(" ".join(state.disliked_topic_words)))
            remembered = (key, (self._query(state), disliked))
            state.memo["similar"] = remembered
        return remembered[1]

    def _query(self, state: DialogueState) -> Similar | None:
        """Similarity with stated topics, leftover words (half weight) and items the user said they like."""
        query = self.text.terms(" ".join(state.topic_words)) + self.text.terms(
            " ".join(state.free_words), 0.5
        )
        for item_id in state.liked_items[-3:]:
            position = self.index.position.get(item_id)
            if position is not None:
                query.update(self.text.item_terms(position, 2.0))
        return self.text.sparse_similarity(query)

    def _answers(
        self, rng: random.Random, state: DialogueState, slots: list[str]
    ) -> tuple[str, list[DialogueAct]]:
        """The asked slots of the item under discussion (movies: plot, year, director, cast or genre),
        from its metadata."""
        if state.last is None:
            return self.say.acknowledge("no_item", rng), [_act(Intent.OTHER)]
        item = self.domain.items[state.last]
        texts: list[str] = []
        acts: list[DialogueAct] = []
        for slot in slots:
            values = self._values(item, slot)
            texts.append(self.say.answer(slot, values))
            acts += [_act(Intent.INFORM, slot, v) for v in values] or [_act(Intent.OTHER)]
        return " ".join(texts), acts

    def _values(self, item: Item, slot: str) -> list[str]:
        attribute = self.domain.requestable_slots.get(slot) or self.domain.informable_slots.get(slot)
        return item.values(attribute) if attribute else []

    def _explain(self, state: DialogueState, item_id: str) -> str:
        if not self.settings.explain:
            return ""
        item = self.domain.items[item_id]
        spec = self.say.table["explanation"]
        if not isinstance(spec, dict):
            return self.say.matches(self._matched(state, item))
        kinds = self._liked_values(state, item, [spec["kind_slot"]])
        people = self._liked_values(state, item, spec["people_slots"])
        in_period = item.year and any(p.contains(item.year) for p in state.periods)
        period = f"the {item.year // 10 * 10}s" if in_period and item.year else None
        return self.say.described(kinds, list(dict.fromkeys(people)), period)

    def _liked_values(self, state: DialogueState, item: Item, slots: list[str]) -> list[str]:
        """The item's values (catalogue casing) of `slots` that the user stated a liking for."""
        wanted = {v for slot in slots for v in state.likes.get(slot, [])}
        attributes = [self.domain.informable_slots.get(slot, slot) for slot in slots]
        return [v for attribute in attributes for v in item.values(attribute) if v.lower() in wanted]

    def _matched(self, state: DialogueState, item: Item) -> list[tuple[str, str]]:
        """(slot, value) pairs of stated likes the item has, in the domain's slot order."""
        matched = []
        for slot, attribute in self.domain.informable_slots.items():
            have = {v.lower() for v in item.values(attribute)}
            matched += [(slot, v) for v in state.likes.get(slot, []) if v.lower() in have]
        return matched
