"""The user's preference model: how the simulated user judges a recommended item.

Decision order (the "feedback" case of the interaction model):

1. a target item of the information need is always accepted;
2. an item in `profile.item_ratings` is "seen" (liked or not, from its rating) and not accepted;
3. any other item gets a content-based predicted rating: the user's mean rating plus, for each
   attribute that carries taste (the domain's `nlu.taste` phrasing; movies: genres, directors,
   actors, decade; by default the attributes of its categorical, multi and ordinal slots), the
   shrunk mean deviation from that mean of the rated items sharing the item's values,
   `sum(r - mean) / (count + shrinkage)`;
   liked/disliked slot values in `profile.preferences` add +0.5/-1.0. It is accepted when it
   satisfies every constraint of the need and the prediction reaches `accept_threshold`.

Aggregates are computed lazily per attribute value and cached for the dialogue, so judging an
item costs a few set intersections, not a pass over all ratings.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from crsim.language.nlu_vocabulary import vocabulary_for
from crsim.model.domain import Domain
from crsim.model.items import Item
from crsim.model.user import InformationNeed, UserProfile

#: Prediction for a user without ratings (middle of the 0.5-5 scale, slightly positive).
DEFAULT_MEAN = 3.5
LIKE_BONUS, DISLIKE_PENALTY = 0.5, -1.0
MIN_RATING, MAX_RATING = 0.5, 5.0


class Decision(StrEnum):
    ACCEPT = "accept"
    REJECT = "reject"
    SEEN = "seen"


@dataclass(frozen=True, slots=True)
class Judgement:
    """The user's verdict on one item, with what it was based on."""

    item_id: str
    decision: Decision
    predicted: float | None = None
    rating: float | None = None
    liked: bool | None = None
    violated: str | None = None
    target: bool = False


class PreferenceModel:
    """Judges items for one user and one information need (one instance per dialogue)."""

    def __init__(
        self,
        profile: UserProfile,
        need: InformationNeed,
        domain: Domain,
        *,
        accept_threshold: float = 4.0,
        liked_rating: float = 3.5,
        shrinkage: float = 5.0,
    ) -> None:
        self.profile, self.need, self.domain = profile, need, domain
        self.accept_threshold, self.liked_rating, self.shrinkage = accept_threshold, liked_rating, shrinkage
        ratings = profile.item_ratings
        self.mean = sum(ratings.values()) / len(ratings) if ratings else DEFAULT_MEAN
        self._rated = frozenset(ratings)
        self._deviation: dict[tuple[str, str], tuple[float, int]] = {}
        self._liked: list[Item] | None = None
        self._fitting: frozenset[str] | None = None
        #: Constrained slots the user gave up on (`relax`): no longer required of an item.
        self.relaxed: set[str] = set()
        vocabulary = vocabulary_for(domain)
        self.taste, self.text_match = vocabulary.taste, vocabulary.text_match

    def judge(self, item_id: str) -> Judgement:
        """Accept, reject or "seen" for one item id (unknown ids are rejected)."""
        if item_id in self.need.targets:
            return Judgement(item_id, Decision.ACCEPT, target=True)
        rating = self.profile.item_ratings.get(item_id)
        if rating is not None:
            return Judgement(item_id, Decision.SEEN, rating=rating, liked=rating >= self.liked_rating)
        item = self.domain.items.get(item_id)
        if item is None:
            return Judgement(item_id, Decision.REJECT)
        predicted = round(self.predict(item), 3)
        violated = self.violated_constraint(item)
        ok = violated is None and predicted >= self.accept_threshold
        return Judgement(item_id, Decision.ACCEPT if ok else Decision.REJECT, predicted, violated=violated)

    def predict(self, item: Item) -> float:
        """Content-based rating prediction on the 0.5-5 scale."""
        score = self.mean
        for group in self.taste:
            total, count = 0.0, 0
            for value in item.values(group):
                dev_sum, n = self._feature(group, value)
                total, count = total + dev_sum, count + n
            if count:
                score += total / (count + self.shrinkage)
        score += self._stated_preferences(item)
        return min(MAX_RATING, max(MIN_RATING, score))

    def relax(self, slot: str) -> None:
        """Stop requiring the need's constraint on `slot` (after the CRS found nothing)."""
        self.relaxed.add(slot)
        self._fitting = None

    def support(self, slot: str, values: list[str]) -> float:
        """How much the user's own taste backs wanting `values` of `slot`: the best shrunk deviation
        of its ratings among the values (0 for a slot that carries no taste, or values never rated),
        plus the bonus of a value the profile says it likes. Lower: less important to the user."""
        attribute = self.domain.informable_slots.get(slot, slot)
        liked = {v.lower() for v in self.profile.likes(slot)}
        best: float | None = None
        for value in values:
            score = 0.0
            if attribute in self.taste:
                dev_sum, n = self._feature(attribute, value)
                score = dev_sum / (n + self.shrinkage)
            if value.lower() in liked:
                score += LIKE_BONUS
            best = score if best is None else max(best, score)
        return best or 0.0

    def violated_constraint(self, item: Item) -> str | None:
        """The first constrained slot the item does not satisfy, or None (relaxed slots aside)."""
        for slot in self.need.constraints:
            if slot in self.relaxed:
                continue
            wanted = {v.lower() for v in self.need.constraint_values(slot)}
            attribute = self.domain.informable_slots.get(slot, slot)
            have = {v.lower() for v in item.values(attribute)}
            text = " ".join(item.values(self.text_match[slot])).lower() if slot in self.text_match else ""
            have |= {w for w in wanted if text and w in text}
            if wanted and not wanted & have:
                return slot
        return None

    def favourite(self, slot: str) -> str | None:
        """The user's favourite value of an unconstrained `slot`, for answering an elicitation.

        Candidates are values shared by at least two items the user liked (rated at least
        `liked_rating`), preferring liked items that meet the need's constraints so the answer
        fits what the user is looking for; the value with the highest shrunk deviation above
        the user's mean wins. None when no value stands out. Names keep their catalogue casing.
        """
        attribute = self.domain.informable_slots.get(slot, slot)
        if attribute not in self.taste:
            return None
        liked = [item for item in self._liked_items() if item.values(attribute)]
        fitting = [item for item in liked if item.id in self._satisfying()]
        counts: dict[str, int] = {}
        names: dict[str, str] = {}
        for item in fitting or liked:
            for value in item.values(attribute):
                key = value.lower()
                counts[key] = counts.get(key, 0) + 1
                names.setdefault(key, value)
        best, best_score = None, 0.0
        for key in sorted(k for k, n in counts.items() if n >= 2):
            dev_sum, n = self._feature(attribute, key)
            score = dev_sum / (n + self.shrinkage)
            if score > best_score:
                best, best_score = names[key], score
        return best

    def _liked_items(self) -> list[Item]:
        """Up to 200 rated items the user liked, best rated first (ties in id order); computed once."""
        if self._liked is None:
            ratings = self.profile.item_ratings
            ids = [i for i, r in ratings.items() if r >= self.liked_rating]
            ids.sort(key=lambda i: (-ratings[i], i))
            items = (self.domain.items.get(i) for i in ids[:200])
            self._liked = [item for item in items if item is not None]
        return self._liked

    def _satisfying(self) -> frozenset[str]:
        """Ids of the liked items that meet every constraint, found with the attribute index."""
        if self._fitting is None:
            liked = self._liked_items()
            fitting = frozenset(item.id for item in liked)
            for slot in self.need.constraints:
                if slot in self.relaxed:
                    continue
                attribute = self.domain.informable_slots.get(slot, slot)
                values = [v.lower() for v in self.need.constraint_values(slot)]
                matching: set[str] = set()
                for value in values:
                    matching |= self.domain.items.among(attribute, value, fitting)
                if slot in self.text_match:
                    matching |= {i.id for i in liked if self._text_has(i, slot, values)}
                fitting &= matching
            self._fitting = fitting
        return self._fitting

    def _text_has(self, item: Item, slot: str, values: list[str]) -> bool:
        text = " ".join(item.values(self.text_match[slot])).lower()
        return bool(text) and any(v in text for v in values)

    def _feature(self, group: str, value: str) -> tuple[float, int]:
        """Sum of (rating - mean) and count over the rated items with `value` in `group`."""
        key = (group, value.lower())
        cached = self._deviation.get(key)
        if cached is None:
            ids = self.domain.items.among(group, value, self._rated)
            ratings = self.profile.item_ratings
            cached = (sum(ratings[i] for i in ids) - self.mean * len(ids), len(ids))
            self._deviation[key] = cached
        return cached

    def _stated_preferences(self, item: Item) -> float:
        bonus = 0.0
        for slot in self.profile.preferences:
            attribute = self.domain.informable_slots.get(slot, slot)
            have = {v.lower() for v in item.values(attribute)}
            bonus += LIKE_BONUS * sum(1 for v in self.profile.likes(slot) if v.lower() in have)
            bonus += DISLIKE_PENALTY * sum(1 for v in self.profile.dislikes(slot) if v.lower() in have)
        return bonus
