"""`retrieval`: a CRS that elicits preferences and ranks items by attribute matches and text similarity.

It shares the dialogue policy of `popular` and changes three things: it asks about several slots
(skipping what the user already said), scores items with weighted attribute matches plus TF-IDF
similarity between the user's own words and each item's title, plot, keywords and genres, and
answers questions about the item under discussion from the item's metadata.
"""

from __future__ import annotations

import math
import random
import weakref
from collections import Counter
from typing import Literal

import numpy as np
from pydantic import Field
from sklearn.feature_extraction.text import TfidfVectorizer

from crsim.components import BuildContext
from crsim.crs import nlg
from crsim.crs.base import crs
from crsim.crs.popular import DialogueState, PopularCRS, Scores, _act
from crsim.model.acts import DialogueAct, Intent
from crsim.model.domain import Domain
from crsim.model.items import Item, ItemCollection
from crsim.registry import Params as RegistryParams

Slot = Literal["genre", "actor", "director", "decade", "keyword"]


class TextIndex:
    """TF-IDF vectors (unit length) of every item's title, plot, keywords and genres, built once.

    Similarity is computed from per-term posting lists (column slices of the CSC matrix), which
    for queries of a few dozen terms is much faster than a sparse matrix product.
    """

    #: Terms kept from a liked item's vector when it is used as a query (its strongest ones).
    ITEM_TERMS = 25

    def __init__(self, domain: Domain) -> None:
        docs = [
            " ".join([item.title, item.plot or "", " ".join(item.keywords), " ".join(item.genres)])
            for item in domain.items
        ]
        vectorizer = TfidfVectorizer(stop_words="english", sublinear_tf=True, ngram_range=(1, 2), min_df=1)
        matrix = vectorizer.fit_transform(docs)
        self.size = matrix.shape[0]
        self.rows, columns = matrix.tocsr(), matrix.tocsc()
        self.indptr, self.indices, self.data = columns.indptr, columns.indices, columns.data
        self.vocabulary: dict[str, int] = dict(vectorizer.vocabulary_)
        self.idf = np.asarray(vectorizer.idf_, dtype=np.float64)
        self.analyzer = vectorizer.build_analyzer()

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
        positive = {c: v for c, v in query.items() if v > 0}
        norm = math.sqrt(sum(v * v for v in positive.values()))
        if not norm:
            return None
        scores = np.zeros(self.size)
        indptr, indices, data = self.indptr, self.indices, self.data
        for column, value in positive.items():
            start, end = indptr[column], indptr[column + 1]
            scores[indices[start:end]] += data[start:end] * (value / norm)
        return scores


_TEXT_INDEXES: weakref.WeakKeyDictionary[ItemCollection, TextIndex] = weakref.WeakKeyDictionary()


def text_index(domain: Domain) -> TextIndex:
    """The TF-IDF index of a domain's items, built once per item collection."""
    index = _TEXT_INDEXES.get(domain.items)
    if index is None:
        index = _TEXT_INDEXES[domain.items] = TextIndex(domain)
    return index


class Weights(RegistryParams):
    """How much each kind of evidence adds to an item's score."""

    genre: float = Field(1.0, ge=0, description="Per stated genre the item has.")
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
    """Elicits genre, actor, period, director and topic; ranks by weighted attribute matches plus
    TF-IDF similarity with the user's words; answers plot/year/director/cast questions from metadata."""

    class Params(PopularCRS.Params):
        max_questions: int = Field(
            3, ge=0, le=5, description="Preference questions (after the greeting) before recommending."
        )
        elicitation_order: tuple[Slot, ...] = Field(
            ("genre", "actor", "decade", "director", "keyword"),
            description="Slots asked about, in order; slots the user already filled are skipped.",
        )
        weights: Weights = Field(default_factory=Weights, description="Scoring weights.")
        explain: bool = Field(True, description="Say which stated preferences a recommendation matches.")

    def __init__(self, params: Params, ctx: BuildContext) -> None:
        super().__init__(params, ctx)
        self.settings = params
        self.text = text_index(self.domain)

    def _slot_order(self) -> tuple[str, ...]:
        return tuple(self.settings.elicitation_order)

    def _scores(self, state: DialogueState) -> Scores:
        w, index = self.settings.weights, self.index
        scores: Scores = index.popularity * w.popularity
        slots = (("genre", w.genre), ("actor", w.actor), ("director", w.director), ("keyword", w.keyword))
        for slot, weight in slots:
            for value in state.likes.get(slot, []):
                scores[index.positions(slot, value)] += weight
            for value in state.dislikes.get(slot, []):
                scores[index.positions(slot, value)] -= w.dislike
        if state.periods:
            scores += w.decade * np.max([index.period_match(p) for p in state.periods], axis=0)
        for period in state.disliked_periods:
            scores -= w.dislike * index.period_match(period)
        if state.newer_than:
            scores[index.years <= state.newer_than] -= w.dislike
        if state.older_than:
            scores[index.years >= state.older_than] -= w.dislike
        liked = self._query(state)
        if liked is not None:
            scores += w.text * liked
        disliked = self.text.similarity(self.text.terms(" ".join(state.disliked_topic_words)))
        if disliked is not None:
            scores -= w.text * disliked
        return scores

    def _query(self, state: DialogueState) -> Scores | None:
        """Similarity with stated topics, leftover words (half weight) and items the user said they like."""
        query = self.text.terms(" ".join(state.topic_words)) + self.text.terms(
            " ".join(state.free_words), 0.5
        )
        for item_id in state.liked_items[-3:]:
            position = self.index.position.get(item_id)
            if position is not None:
                query.update(self.text.item_terms(position, 2.0))
        return self.text.similarity(query)

    def _answers(
        self, rng: random.Random, state: DialogueState, slots: list[str]
    ) -> tuple[str, list[DialogueAct]]:
        """Plot, year, director, cast or genre of the item under discussion, from its metadata."""
        if state.last is None:
            return nlg.acknowledge("no_item", rng), [_act(Intent.OTHER)]
        item = self.domain.items[state.last]
        texts: list[str] = []
        acts: list[DialogueAct] = []
        for slot in slots:
            values = self._values(item, slot)
            texts.append(nlg.answer(slot, values))
            acts += [_act(Intent.INFORM, slot, v) for v in values] or [_act(Intent.OTHER)]
        return " ".join(texts), acts

    def _values(self, item: Item, slot: str) -> list[str]:
        attribute = self.domain.requestable_slots.get(slot) or self.domain.informable_slots.get(slot)
        return item.values(attribute) if attribute else []

    def _explain(self, state: DialogueState, item_id: str) -> str:
        if not self.settings.explain:
            return ""
        item = self.domain.items[item_id]
        genres = [g for g in item.genres if g.lower() in state.likes.get("genre", [])]
        wanted = set(state.likes.get("actor", [])) | set(state.likes.get("director", []))
        people = [p for p in (*item.directors, *item.actors) if p.lower() in wanted]
        in_period = item.year and any(p.contains(item.year) for p in state.periods)
        period = f"the {item.year // 10 * 10}s" if in_period and item.year else None
        return nlg.explanation(genres, list(dict.fromkeys(people)), period)
