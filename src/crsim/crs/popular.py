"""`popular`: a popularity baseline CRS, plus the dialogue policy and item index it shares with `retrieval`.

The policy greets, asks for preferences, recommends the best-scoring item not yet shown, reacts to
acceptance, rejection and "seen", and closes on goodbye. Subclasses change what is asked, how items
are scored and how questions about an item are answered.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import Field

from crsim.core.components import BuildContext
from crsim.core.plugins import Params as RegistryParams
from crsim.crs.base import BaseCRS, CRSReply, CRSSession, crs
from crsim.crs.nlg import sentences_for
from crsim.language.understanding import Context, Period, Understanding, lexicon_for, understand
from crsim.model.acts import DialogueAct, Intent
from crsim.model.domain import Domain, SlotKind, per_domain

Scores = npt.NDArray[np.float64]
Ranks = npt.NDArray[np.int32]
Positions = npt.NDArray[np.intp]
_NO_RANKS = np.zeros(0, dtype=np.int32)


class ItemIndex:
    """Read-only arrays over a collection: items per slot value, years and popularity.

    Items are also numbered by rank: their order by popularity (most popular first, ties in catalogue
    order). The items holding a slot value are kept as sorted ranks (int32), so they can be walked in
    popularity order and tested for membership by binary search (`top_ranked`).
    """

    def __init__(self, domain: Domain) -> None:
        items = domain.items  # read by columns: no item objects are made
        self.ids = items.ids
        self.position = items.positions_by_id
        #: The field items are ranked by (domain `popularity`, else rating counts); None: catalogue order.
        self.ranked_by = domain.popularity or (
            "num_ratings" if any(items.extra_column("num_ratings") or ()) else None
        )
        raw = np.array(
            [_first_number(v) for v in items.values_of(self.ranked_by)]
            if self.ranked_by
            else np.zeros(len(items))
        )
        raw = np.nan_to_num(raw, nan=0.0)
        if self.ranked_by == "num_ratings":
            self.popularity = np.log1p(raw) / max(math.log1p(float(raw.max(initial=0.0))), 1.0)
        else:  # any other number, scaled into [0, 1] keeping its order
            low, high = float(raw.min(initial=0.0)), float(raw.max(initial=0.0))
            self.popularity = (raw - low) / (high - low) if high > low else np.zeros(len(raw))
        self.years = np.array([year or 0 for year in items.years], dtype=np.float64)
        #: Positions by rank (popularity descending, ties in catalogue order), and each position's rank.
        self.order = np.argsort(-self.popularity, kind="stable").astype(np.int32)
        self.rank = np.empty(len(items), dtype=np.int32)
        self.rank[self.order] = np.arange(len(items), dtype=np.int32)
        #: Per slot and lower-cased value: the ranks of the items holding it, ascending.
        self.ranked: dict[str, dict[str, Ranks]] = {}
        #: The same as bits by rank (`np.packbits`) for values at least 1 item in 128 holds (the bits
        #: take at most 4 times the room of the ranks): membership is then a lookup, not a binary search.
        self.bits: dict[tuple[str, str], npt.NDArray[np.uint8]] = {}
        period = lexicon_for(domain).period_slot
        #: Numeric slots: each item's first value as a number (NaN without one).
        self.numbers: dict[str, npt.NDArray[np.float64]] = {
            slot.name: np.array([_first_number(v) for v in items.values_of(slot.attribute)], dtype=np.float64)
            for slot in domain.informable
            if slot.kind is SlotKind.NUMERIC
        }
        for slot, attribute in domain.informable_slots.items():
            if slot == period:
                continue
            # the collection's own value index: positions of the items holding each value, unique
            self.ranked[slot] = {v: np.sort(self.rank[ks]) for v, ks in items.value_index(attribute).items()}
            for v, ranks in self.ranked[slot].items():
                if len(ranks) * 128 >= len(items):
                    held = np.zeros(len(items), dtype=np.bool_)
                    held[ranks] = True
                    self.bits[slot, v] = np.packbits(held)

    def positions(self, slot: str, value: str) -> npt.NDArray[np.intp]:
        """The items holding `value`; for a numeric slot the items whose number equals it or lies
        within its bound (">=4", "<20": `crsim.language.cues.BOUND_SIGNS`)."""
        if self._bound(slot, value) is not None:
            return np.flatnonzero(self.holds(slot, value, np.arange(len(self.ids)))).astype(np.intp)
        return np.sort(self.order[self.ranks(slot, value)]).astype(np.intp)

    def ranks(self, slot: str, value: str) -> Ranks:
        """The ranks of the items holding `value` (ascending), none for a numeric bound (">=4")."""
        return self.ranked.get(slot, {}).get(value.lower(), _NO_RANKS)

    def holds(self, slot: str, value: str, at: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
        """Whether each item at the positions `at` holds `value` (as `positions` says), without
        looking at the other items."""
        bound = self._bound(slot, value)
        if bound is None:
            ranks = self.rank[at]
            bits = self.bits.get((slot, value.lower()))
            if bits is not None:
                return np.asarray((bits[ranks >> 3] >> (7 - (ranks & 7))) & 1, dtype=np.bool_)
            listed = self.ranks(slot, value)
            if len(ranks) > 8 * len(listed):  # many items asked about: one pass beats binary searches
                held = np.zeros(len(self.ids), dtype=np.bool_)
                held[listed] = True
                return held[ranks]
            return _member(listed, ranks)
        numbers = self.numbers[slot][at]
        with np.errstate(invalid="ignore"):
            return _COMPARE[bound[0]](numbers, bound[1]) & ~np.isnan(numbers)

    def _bound(self, slot: str, value: str) -> tuple[str, float] | None:
        """(sign, number) of a value of a numeric slot, compared with each item's number; else None."""
        if slot not in self.numbers:
            return None
        match = _BOUNDED.fullmatch(value.strip())
        return (match.group(1), float(match.group(2))) if match is not None else None

    def period_match(self, period: Period) -> Scores:
        """1 inside the period, fading to 0 ten years away; 0 for items without a year."""
        return period_match(self.years, period)

    def holds_by_bound(self, slot: str, value: str) -> bool:
        """Whether `value` is a bound on a numeric slot, compared item by item (no list of holders)."""
        return self._bound(slot, value) is not None


def period_match(years: Scores, period: Period) -> Scores:
    """1 for years inside the period, fading to 0 ten years away; 0 for a missing year (0)."""
    distance = np.maximum(np.maximum(period.start - years, years - period.end), 0.0)
    return np.where(years > 0, np.clip(1.0 - distance / 10.0, 0.0, 1.0), 0.0)


def _member(
    ascending: npt.NDArray[np.integer[Any]], numbers: npt.NDArray[np.integer[Any]]
) -> npt.NDArray[np.bool_]:
    """Whether each of `numbers` is in `ascending` (binary search: no array of the catalogue's length,
    as `np.isin` may make)."""
    if not len(ascending):
        return np.zeros(len(numbers), dtype=np.bool_)
    found = np.minimum(np.searchsorted(ascending, numbers), len(ascending) - 1)
    return np.asarray(ascending[found] == numbers)


_BOUNDED = re.compile(r"(>=|<=|>|<|)\s*(-?\d+(?:\.\d+)?)")
_COMPARE: dict[str, Callable[[npt.NDArray[np.float64], float], npt.NDArray[np.bool_]]] = {
    "": lambda a, n: np.isclose(a, n),
    ">=": lambda a, n: a >= n,
    "<=": lambda a, n: a <= n,
    ">": lambda a, n: a > n,
    "<": lambda a, n: a < n,
}


def _first_number(values: list[str]) -> float:
    for value in values:
        try:
            return float(value)
        except ValueError:
            continue
    return math.nan


@per_domain(kept=True)
def item_index(domain: Domain) -> ItemIndex:
    """The index of a domain's items, built once per domain (its ranking field is the domain's); a
    domain cache on disk keeps it."""
    return ItemIndex(domain)


@dataclass
class Evidence:
    """What can lift an item's score above its popularity term, for bounding the items not yet scored.

    `lists`: per liked value, the ranks of the items holding it and the most it adds; `rest`: the most
    that evidence without such a list adds (a numeric bound, a period); `forced`: positions to score in
    any case, because evidence the bound leaves out (text similarity) reaches only them.
    """

    popularity_weight: float
    lists: list[tuple[Ranks, float]] = field(default_factory=list)
    rest: float = 0.0
    forced: Positions = field(default_factory=lambda: np.zeros(0, dtype=np.intp))


#: Items scored per list in the first round of `top_ranked` (doubling each round).
FIRST_ROUND = 64


def top_ranked(
    index: ItemIndex,
    evidence: Evidence,
    score_at: Callable[[Positions], Scores],
    k: int,
    excluded: Positions,
) -> list[int]:
    """Positions of the `k` best-scoring items not `excluded`, best first (ties: catalogue order),
    scoring only as many items as it takes to be sure: the same `k` as scoring every item.

    The items are walked in rank order (popularity descending), together with each list of
    `evidence` (the items holding a liked value, also in rank order), a chunk per round; the items
    met are scored exactly (`score_at`). An item not met yet is less popular than every list's
    cursor it belongs to, so its score is at most its popularity at the tightest such cursor plus
    the evidence it could hold (`_ceiling`); the walk stops when that is below the k-th best score.
    """
    size = len(index.ids)
    lists = [(ranks, most) for ranks, most in evidence.lists if len(ranks) and most > 0]
    cursors = [0] * len(lists)
    walked, step = 0, max(FIRST_ROUND, 4 * k)
    excluded = np.sort(excluded)
    seen = np.sort(index.rank[evidence.forced])
    best = evidence.forced[~_member(excluded, evidence.forced)]
    best_scores = score_at(best)
    while True:
        chunks = [np.arange(walked, min(walked + step, size), dtype=np.int32)]
        walked = min(walked + step, size)
        open_lists = [n for n, (ranks, _) in enumerate(lists) if cursors[n] < len(ranks)]
        shortest = min(open_lists, key=lambda n: len(lists[n][0]) - cursors[n], default=None)
        for n, (ranks, _) in enumerate(lists):
            # an item holding every liked value is in the shortest list: when none is, only walking
            # that list to its end shows it, so it goes faster than the others
            ahead = step * (len(lists) + 1) if n == shortest else step
            chunks.append(ranks[cursors[n] : cursors[n] + ahead])
            cursors[n] = min(cursors[n] + ahead, len(ranks))
        met = np.sort(np.concatenate(chunks))
        met = met[np.flatnonzero(np.diff(met, prepend=-1)) if len(met) else met]
        met = met[~_member(seen, met)]
        seen = np.sort(np.concatenate([seen, met]))
        at = index.order[met].astype(np.intp)
        at = at[~_member(excluded, at)]
        candidates = np.concatenate([best, at])
        scores = np.concatenate([best_scores, score_at(at)])
        keep = np.lexsort((candidates, -scores))[:k]
        best, best_scores = candidates[keep], scores[keep]
        if walked >= size:
            break
        if len(best) == k and _ceiling(index, evidence, lists, cursors, walked) < best_scores[-1]:
            break
        step *= 2
    return [int(p) for p in best]


def _ceiling(
    index: ItemIndex, evidence: Evidence, lists: list[tuple[Ranks, float]], cursors: list[int], walked: int
) -> float:
    """The highest score an item not met yet could have. Its popularity is at most that of the walk's
    next item and of the next item of every list holding it: for each such cursor's popularity `t`, the
    best case holds every list whose next item is at least as popular, and all evidence without a list."""
    popularity = index.popularity
    ahead = [
        float(popularity[index.order[ranks[c]]]) if c < len(ranks) else -math.inf
        for (ranks, _), c in zip(lists, cursors, strict=True)
    ]
    top = float(popularity[index.order[walked]])
    ceiling = -math.inf
    for t in (top, *(a for a in ahead if a < top)):
        if t == -math.inf:
            continue
        held = sum(most for (_, most), a in zip(lists, ahead, strict=True) if a >= t)
        ceiling = max(ceiling, evidence.popularity_weight * t + evidence.rest + held)
    return ceiling + 1e-9 * (1.0 + abs(ceiling))  # above any rounding of the same sum in the scores


@dataclass
class DialogueState:
    """Everything one dialogue has established: preferences, questions asked, items shown."""

    likes: dict[str, list[str]] = field(default_factory=dict)
    dislikes: dict[str, list[str]] = field(default_factory=dict)
    periods: list[Period] = field(default_factory=list)
    disliked_periods: list[Period] = field(default_factory=list)
    no_preference: set[str] = field(default_factory=set)
    topic_words: list[str] = field(default_factory=list)
    disliked_topic_words: list[str] = field(default_factory=list)
    free_words: list[str] = field(default_factory=list)
    liked_items: list[str] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)
    recommended: list[str] = field(default_factory=list)
    excluded: set[str] = field(default_factory=set)
    accepted: list[str] = field(default_factory=list)
    last: str | None = None
    pending: str | None = None
    newer_than: int | None = None
    older_than: int | None = None
    #: Per-dialogue caches of derived values (e.g. text-similarity scores), owned by the CRS.
    memo: dict[str, Any] = field(default_factory=dict)
    #: The domain's period slot (filled by periods, not values) and the slots whose newly stated value
    #: replaces the earlier one once recommendations started (the user steers away from what was shown).
    period_slot: str | None = None
    replaceable: tuple[str, ...] = ()

    def context(self) -> Context:
        elicited = self.pending if self.pending not in (None, "more") else None
        return Context(elicited=elicited, recommended=self.last, yes_no=self.pending == "more")

    def filled(self, slot: str) -> bool:
        if slot in self.no_preference or "any" in self.no_preference:
            return True
        return bool(self.periods) if slot == self.period_slot else bool(self.likes.get(slot))

    def absorb(self, u: Understanding, year_of_last: int | None) -> None:
        """Merge what the user said. After recommendations started, a newly stated value of a
        replaceable slot (a genre, a cuisine) or period replaces the earlier one: the user is steering
        away from what was shown."""
        steering = bool(self.recommended)
        for slot, values in u.likes.items():
            current = [] if steering and slot in self.replaceable else self.likes.get(slot, [])
            self.likes[slot] = current + [v for v in values if v not in current]
            self.dislikes[slot] = [v for v in self.dislikes.get(slot, []) if v not in values]
        for slot, values in u.dislikes.items():
            self.dislikes[slot] = self.dislikes.get(slot, []) + values
            self.likes[slot] = [v for v in self.likes.get(slot, []) if v not in values]
        if u.periods:
            self.periods = list(u.periods) if steering else self.periods + u.periods
            self.newer_than = self.older_than = None
        self.disliked_periods += u.disliked_periods
        if year_of_last and (u.newer or u.older):
            self.newer_than, self.older_than = (year_of_last, None) if u.newer else (None, year_of_last)
        self.no_preference.update(u.no_preference)
        self.topic_words += u.topic_words
        self.disliked_topic_words += u.disliked_topic_words
        self.free_words += u.free_words
        self.liked_items += u.liked_items
        self.excluded.update(u.liked_items, u.seen_items, u.rejected_items, u.accepted_items)
        self.accepted += [i for i in u.accepted_items if i not in self.accepted]


def _act(intent: str, slot: str | None = None, value: str | None = None) -> DialogueAct:
    return DialogueAct(intent=intent, slots=[(slot, value)] if slot else [])


@crs("popular")
class PopularCRS(BaseCRS):
    """Popularity baseline: asks for the domain's first slot, then recommends the items matching most
    of what it understood, ranked by the domain's popularity field (a count of ratings when the items
    carry one; else the catalogue's own order). It holds no item knowledge beyond attributes, so
    it answers questions about an item only generically, saying how it ranks."""

    class Params(RegistryParams):
        k: int = Field(1, ge=1, le=10, description="Items per recommendation turn.")
        max_questions: int = Field(
            1, ge=0, le=3, description="Preference questions (after the greeting) before recommending."
        )

    def __init__(self, params: Params, ctx: BuildContext) -> None:
        domain = ctx.require_domain(type(self).__name__)
        self.params, self.domain = params, domain
        self.index = item_index(domain)
        self.lexicon = lexicon_for(
            domain
        )  # build the shared understanding resources now, not in the first reply
        self.say = sentences_for(domain)
        _ = domain.items.linker

    def _new_state(self) -> DialogueState:
        return DialogueState(period_slot=self.lexicon.period_slot, replaceable=self.lexicon.value_slots)

    async def start(self, session: CRSSession) -> CRSReply:
        session.state = self._new_state()
        greeting = self.say.greeting(session.rng)
        return CRSReply(text=greeting, acts=[_act(Intent.GREETING), _act(Intent.ELICIT)], items_listed=True)

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        """The reply, with every item its text names listed: recommended or only mentioned."""
        reply = self._respond(session, text)
        reply.items_listed = True
        return reply

    def _respond(self, session: CRSSession, text: str) -> CRSReply:
        if not isinstance(session.state, DialogueState):
            session.state = self._new_state()
        state: DialogueState = session.state
        u = understand(text, self.domain, state.context())
        last = self.domain.items.get(state.last) if state.last else None
        state.absorb(u, last.year if last else None)
        if self._closing(state, u):
            state.pending = None
            text = self.say.closing(session.rng, accepted=bool(state.accepted))
            return CRSReply(text=text, acts=[_act(Intent.GOODBYE)], end=True)
        if u.accepted_items:
            state.pending = "more"
            text = f"{self.say.acknowledge('accept', session.rng)} {self.say.anything_else(session.rng)}"
            return CRSReply(text=text, acts=[_act(Intent.ASK)])
        return self._reply(session.rng, state, u)

    # --- policy --------------------------------------------------------------------------------

    def _closing(self, state: DialogueState, u: Understanding) -> bool:
        """Goodbye; thanks or 'no' once an item was accepted or 'anything else?' was asked."""
        if u.has(Intent.GOODBYE):
            return True
        moving_on = u.gives_preferences or u.has(Intent.REQUEST_RECOMMENDATION) or bool(u.inquiries)
        done = bool(state.accepted) or state.pending == "more"
        declined = u.has(Intent.DENY) or u.thanks or "any" in u.no_preference
        return done and declined and not moving_on and not u.rejected_items and not u.seen_items

    def _reply(self, rng: random.Random, state: DialogueState, u: Understanding) -> CRSReply:
        """The next move; an answer about the item under discussion names it without recommending it."""
        about = state.last if u.inquiries else None
        reply = self._next_move(rng, state, u)
        if about is not None and about not in reply.recommended_items:
            reply.mentioned_items = [about]
        return reply

    def _next_move(self, rng: random.Random, state: DialogueState, u: Understanding) -> CRSReply:
        parts: list[str] = []
        acts: list[DialogueAct] = []
        if not u.understood and state.recommended and state.pending != "more":
            state.pending = "more"
            text = f"{self.say.acknowledge('not_understood', rng)} {self.say.offer_more(rng)}"
            return CRSReply(text=text, acts=[_act(Intent.ASK)])
        if u.inquiries:
            answer_text, answer_acts = self._answers(rng, state, u.inquiries)
            parts.append(answer_text)
            acts += answer_acts
        if u.seen_items or u.rejected_items:
            parts.append(self.say.acknowledge("seen" if u.seen_items else "reject", rng))
        elif u.gives_preferences and state.recommended and not u.inquiries:
            parts.append(self.say.acknowledge("noted", rng))
        only_asked = bool(u.inquiries) and not (u.gives_preferences or u.rejected_items or u.seen_items)
        if only_asked and not u.has(Intent.REQUEST_RECOMMENDATION) and state.last:
            state.pending = None
            return CRSReply(text=" ".join(parts), acts=acts)
        slot = self._next_slot(state)
        if self._should_recommend(state, u, slot) or slot is None:
            return self._recommend(rng, state, parts, acts)
        if not u.understood:
            parts.append(self.say.acknowledge("not_understood", rng))
        parts.append(self.say.question(slot, rng, repeat=slot in state.asked))
        state.asked.append(slot)
        state.pending = slot
        return CRSReply(text=" ".join(parts), acts=[*acts, _act(Intent.ELICIT, slot)])

    def _should_recommend(self, state: DialogueState, u: Understanding, slot: str | None) -> bool:
        if u.rejected_items or u.seen_items or (state.recommended and u.gives_preferences):
            return True
        if state.pending == "more" and (u.has(Intent.AFFIRM) or not u.understood):
            return True
        # a request in the opening line is the reason for the chat, not an answer to a question
        return u.has(Intent.REQUEST_RECOMMENDATION) and bool(state.asked or state.recommended)

    def _next_slot(self, state: DialogueState) -> str | None:
        if len(state.asked) >= self.params.max_questions:
            return None
        for slot in self._slot_order():
            if not state.filled(slot) and state.asked.count(slot) < 2:
                return slot
        return None

    def _recommend(
        self, rng: random.Random, state: DialogueState, parts: list[str], acts: list[DialogueAct]
    ) -> CRSReply:
        chosen = self._top(state)
        if not chosen:
            state.pending = "more"
            return CRSReply(text=" ".join([*parts, self.say.exhausted()]), acts=[*acts, _act(Intent.ASK)])
        items = [self.domain.items[i] for i in chosen]
        state.recommended += chosen
        state.excluded.update(chosen)
        state.last, state.pending = chosen[0], None
        parts.append(self.say.recommendation([item.display_title for item in items], rng))
        reason = self._explain(state, chosen[0])
        parts += [reason] if reason else []
        acts += [_act(Intent.RECOMMEND, "title", item.display_title) for item in items]
        return CRSReply(text=" ".join(parts), recommended_items=chosen, acts=acts)

    def _top(self, state: DialogueState) -> list[str]:
        """The k best items not shown, seen or mentioned yet (ties: more popular, then catalogue order),
        found by scoring the popular items and those holding liked values first (`top_ranked`)."""
        index = self.index
        excluded = np.array([index.position[i] for i in state.excluded if i in index.position], dtype=np.intp)
        chosen = top_ranked(
            index, self._evidence(state), lambda at: self._scores(state, at), self.params.k, excluded
        )
        return [index.ids[p] for p in chosen]

    # --- hooks ---------------------------------------------------------------------------------

    def _slot_order(self) -> tuple[str, ...]:
        """Slots this CRS asks about, in order: the domain's first informable slot."""
        return tuple(self.domain.informable_slots)[:1]

    def _scores(self, state: DialogueState, at: Positions) -> Scores:
        """Scores of the items at positions `at`: the number of stated preferences an item matches
        (dislikes count against), then popularity."""
        index, lex = self.index, self.lexicon
        scores: Scores = index.popularity[at] * 0.99
        years = index.years[at]
        for slot in (*lex.value_slots, *lex.numeric_slots, *lex.people_slots):
            for value in state.likes.get(slot, []):
                scores[index.holds(slot, value, at)] += 1.0
            for value in state.dislikes.get(slot, []):
                scores[index.holds(slot, value, at)] -= 2.0
        if state.periods:
            scores += np.floor(np.max([period_match(years, p) for p in state.periods], axis=0))
        if state.newer_than:
            scores += years > state.newer_than
        if state.older_than:
            scores += (years > 0) & (years < state.older_than)
        return scores

    def _evidence(self, state: DialogueState) -> Evidence:
        """The most each stated preference adds to a score (`_scores`), for `top_ranked`."""
        index, lex = self.index, self.lexicon
        evidence = Evidence(popularity_weight=0.99)
        for slot in (*lex.value_slots, *lex.numeric_slots, *lex.people_slots):
            for value in state.likes.get(slot, []):
                if index.holds_by_bound(slot, value):
                    evidence.rest += 1.0
                else:
                    evidence.lists.append((index.ranks(slot, value), 1.0))
        evidence.rest += float(bool(state.periods)) + bool(state.newer_than) + bool(state.older_than)
        return evidence

    def _answers(
        self, rng: random.Random, state: DialogueState, slots: list[str]
    ) -> tuple[str, list[DialogueAct]]:
        """Popularity only: a generic line, whatever was asked."""
        if state.last is None:
            return self.say.acknowledge("no_item", rng), [_act(Intent.OTHER)]
        title = self.domain.items[state.last].display_title
        return self.say.generic_answer(title, self.index.ranked_by), [_act(Intent.OTHER)]

    def _explain(self, state: DialogueState, item_id: str) -> str:
        """Why the item was chosen; the baseline does not say."""
        return ""
