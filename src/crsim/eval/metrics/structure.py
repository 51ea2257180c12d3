"""Reading a dialogue the way the metrics need it: recommendation rounds and per-turn lists.

A turn is one user utterance and the CRS reply to it (`Dialogue.num_turns`). CRS utterances
before the first user utterance (an opening) belong to turn 1, so a dialogue always has at
least one turn to evaluate at.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from crsim.eval.metrics.base import NO_ACTS, NO_TARGETS, NotApplicable
from crsim.model import annotations as keys
from crsim.model.acts import Intent
from crsim.model.dialogue import Dialogue, Role, Utterance

_RECOMMEND, _ACCEPT, _REJECT = Intent.RECOMMEND.value, Intent.ACCEPT.value, Intent.REJECT.value
_INQUIRE = Intent.INQUIRE.value

#: How a dialogue is cut into rounds: crsim's (rounds start at the first recommendation) or
#: UserSimCRS's (the stretch before the first recommendation is a round of its own).
RoundsMode = Literal["crsim", "usersimcrs"]


_T = TypeVar("_T")

#: What metrics read off a dialogue, shared inside `readings_shared`: (kind, id of the dialogue,
#: arguments) -> (the dialogue, the reading). The dialogue is kept so that its id is not reused.
_SHARED: ContextVar[dict[tuple[Hashable, ...], tuple[Dialogue, object]] | None] = ContextVar(
    "crsim_shared_readings", default=None
)


@contextmanager
def readings_shared() -> Iterator[None]:
    """Inside the block, what several metrics read off one dialogue (its recommendation rounds, its
    lists by turn, a metric's per-turn curve, its requests) is computed once and reused.

    An evaluation scores every metric of a batch of dialogues and then their per-turn curves; each
    would otherwise cut the same dialogue into rounds and lists again. The dialogues must not change
    inside the block (the readings are keyed by the dialogue object); the readings are dropped on exit.
    """
    if _SHARED.get() is not None:
        yield
        return
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def forget_readings() -> None:
    """Inside `readings_shared`, drop the readings kept so far: a stream that scores one dialogue at a
    time keeps one block open and forgets each dialogue's readings once it is scored."""
    memo = _SHARED.get()
    if memo is not None:
        memo.clear()


def shared_reading(kind: Hashable, dialogue: Dialogue, args: Hashable, compute: Callable[[], _T]) -> _T:
    """`compute()`, or inside `readings_shared` the value computed before for this dialogue, kind and
    arguments. Callers must not change the value they get (it may be handed to another metric)."""
    memo = _SHARED.get()
    if memo is None:
        return compute()
    key = (kind, id(dialogue), args)
    hit = memo.get(key)
    if hit is not None and hit[0] is dialogue:
        return hit[1]  # type: ignore[return-value]
    value = compute()
    memo[key] = (dialogue, value)
    return value


def recommends(utterance: Utterance) -> bool:
    """A CRS utterance recommends when it lists recommended item ids or carries a `recommend` act.

    Items it only mentions (`mentioned_items`) do not make it a recommendation.
    """
    return utterance.role is Role.CRS and (
        bool(utterance.recommended_items) or any(a.intent == _RECOMMEND for a in utterance.acts)
    )


@dataclass(frozen=True, slots=True)
class UserFacts:
    """What several metrics read off the user's utterances, in one walk over them."""

    turns: int  #: user utterances (`Dialogue.num_turns`)
    without_acts: int | None  #: index of the first user utterance without acts (None: every one has acts)
    inquires: bool  #: some user act is an `inquire` (a request about an item)


def user_facts(dialogue: Dialogue) -> UserFacts:
    """`UserFacts` of a dialogue, read once per dialogue inside `readings_shared`."""
    return shared_reading(UserFacts, dialogue, None, lambda: _user_facts(dialogue))


def _user_facts(dialogue: Dialogue) -> UserFacts:
    user, inquire = Role.USER, _INQUIRE
    turns, without, inquires = 0, None, False
    for index, utterance in enumerate(dialogue.utterances):
        if utterance.role is not user:
            continue
        turns += 1
        acts = utterance.acts
        if not acts:
            if without is None:
                without = index
        elif not inquires:
            for act in acts:
                if act.intent == inquire:
                    inquires = True
                    break
    return UserFacts(turns, without, inquires)


def first_without_acts(dialogue: Dialogue) -> int | None:
    """The index of the first user utterance without dialogue acts (None when every one has acts)."""
    return user_facts(dialogue).without_acts


def require_user_acts(dialogue: Dialogue) -> None:
    """Raise `NotApplicable` naming the first user utterance that has no dialogue acts."""
    index = user_facts(dialogue).without_acts
    if index is not None:
        raise NotApplicable(NO_ACTS, f"dialogue {dialogue.id!r}, utterance {index}")


def targets(dialogue: Dialogue) -> frozenset[str]:
    """The user's target items; `NotApplicable` when the dialogue has none."""
    need = dialogue.information_need
    if need is None or not need.targets:
        raise NotApplicable(NO_TARGETS, f"dialogue {dialogue.id!r}")
    return frozenset(need.targets)


@dataclass(frozen=True, slots=True)
class Round:
    """A recommending utterance and the user's reactions until the next recommendation.

    `accepted` follows the user's last reaction in the round: each `accept` sets it, each `reject`
    clears it, and an utterance with both counts as an acceptance (as UserSimCRS does).
    """

    start: int | None  #: index of the recommending utterance; None for UserSimCRS's leading stretch
    accepts: int  #: user utterances in the round with an `accept` act
    accepted: bool  #: the last `accept`/`reject` reaction in the round was an `accept`


class LabelSets(BaseModel):
    """A dataset's own intent labels (kept by converters in the `labels` annotation, field `intents`)
    that mean recommend, accept and reject, matched exactly, as UserSimCRS's metric classes take them."""

    model_config = ConfigDict(extra="forbid")

    recommend: list[str] = Field(min_length=1)
    accept: list[str] = Field(min_length=1)
    reject: list[str] = Field(default_factory=list)


#: Label sets by name, usable as `labels: iard` on the command line: UserSimCRS's defaults for IARD
#: (its v2 utility script's recommendation/accept/reject labels) and the CIR6 labels of the MovieBot
#: dialogues that crsim's converter maps to recommend / accept / reject.
LABEL_PRESETS: dict[str, LabelSets] = {
    "iard": LabelSets(recommend=["REC-S", "REC-E"], accept=["ACC"], reject=["REJ"]),
    "moviebot": LabelSets(
        recommend=["REVEAL", "REVEAL.SIMILAR"], accept=["NOTE.ACCEPT", "NOTE.LIKE"], reject=["NOTE.DISLIKE"]
    ),
}


def _original_labels(dialogue: Dialogue, index: int) -> set[str]:
    labels = keys.annotation(keys.DATASET_LABELS, dialogue, index) or {}
    return set(labels.get(keys.LABEL_INTENTS) or ())


def _reading(dialogue: Dialogue, index: int, labels: LabelSets | None) -> tuple[bool, bool, bool]:
    """(carries a recommend intent, an accept, a reject): crsim acts, or the dataset's own labels."""
    utterance = dialogue.utterances[index]
    if labels is None:
        intents = {a.intent for a in utterance.acts}
        return _RECOMMEND in intents, _ACCEPT in intents, _REJECT in intents
    own = _original_labels(dialogue, index)
    return bool(own & set(labels.recommend)), bool(own & set(labels.accept)), bool(own & set(labels.reject))


def recommendation_rounds(
    dialogue: Dialogue, mode: RoundsMode = "crsim", labels: LabelSets | None = None
) -> list[Round]:
    """Rounds in order. With `crsim`, a round opens at a recommending CRS utterance and utterances
    before the first recommendation belong to no round; with `usersimcrs`, a round opens at a
    recommend intent of either participant and the stretch before the first one is a leading round
    (a dialogue without any recommendation is one round, an empty dialogue none). `labels` reads
    the dataset's own labels instead of crsim's acts (item ids then open no round)."""
    return shared_reading(
        "rounds", dialogue, (mode, _label_key(labels)), lambda: _recommendation_rounds(dialogue, mode, labels)
    )


def _label_key(labels: LabelSets | None) -> Hashable:
    if labels is None:
        return None
    return tuple(labels.recommend), tuple(labels.accept), tuple(labels.reject)


def _recommendation_rounds(dialogue: Dialogue, mode: RoundsMode, labels: LabelSets | None) -> list[Round]:
    if labels is None:
        return _rounds_by_acts(dialogue, mode == "usersimcrs")
    rounds: list[Round] = []
    start: int | None = None
    opened = mode == "usersimcrs" and bool(dialogue.utterances)
    accepts, accepted = 0, False
    for index, utterance in enumerate(dialogue.utterances):
        recommend, accept, reject = _reading(dialogue, index, labels)
        by_crs = utterance.role is Role.CRS and (recommend or (labels is None and recommends(utterance)))
        if by_crs or (recommend and mode == "usersimcrs"):
            if opened and (index > 0 or start is not None):
                rounds.append(Round(start, accepts, accepted))
            start, opened, accepts, accepted = index, True, 0, False
        elif opened and utterance.role is Role.USER:
            accepts += accept
            if accept:
                accepted = True
            elif reject:
                accepted = False
    if opened:
        rounds.append(Round(start, accepts, accepted))
    return rounds


def _rounds_by_acts(dialogue: Dialogue, usersimcrs: bool) -> list[Round]:
    """`_recommendation_rounds` reading crsim's acts (no dataset labels): the same rounds, with each
    utterance's acts read once."""
    crs, user = Role.CRS, Role.USER
    rounds: list[Round] = []
    start: int | None = None
    opened = usersimcrs and bool(dialogue.utterances)
    accepts, accepted = 0, False
    for index, utterance in enumerate(dialogue.utterances):
        role = utterance.role
        if role is crs and utterance.recommended_items:
            opens = True
        elif role is crs or usersimcrs:
            opens = False
            for act in utterance.acts:
                if act.intent == _RECOMMEND:
                    opens = True
                    break
        else:
            opens = False
        if opens:
            if opened and (index > 0 or start is not None):
                rounds.append(Round(start, accepts, accepted))
            start, opened, accepts, accepted = index, True, 0, False
        elif opened and role is user:
            accept = reject = False
            for act in utterance.acts:
                if act.intent == _ACCEPT:
                    accept = True
                elif act.intent == _REJECT:
                    reject = True
            accepts += accept
            if accept:
                accepted = True
            elif reject:
                accepted = False
    if opened:
        rounds.append(Round(start, accepts, accepted))
    return rounds


def top_k(items: list[str], k: int) -> tuple[str, ...]:
    """The first k distinct items of a list, in order."""
    return tuple(dict.fromkeys(items))[:k]


class RecommendationTrace:
    """The recommendation lists of a dialogue by turn, cut at k, with carry-forward lookups."""

    def __init__(self, dialogue: Dialogue, k: int) -> None:
        given: list[tuple[int, tuple[str, ...]]] = []  # (turn index, list), in order
        users_seen = 0
        user = Role.USER
        for utterance in dialogue.utterances:
            if utterance.role is user:
                users_seen += 1
            elif utterance.recommended_items:
                given.append((max(users_seen, 1) - 1, top_k(utterance.recommended_items, k)))
        self.num_turns = max(users_seen, 1)  # `Dialogue.num_turns`, at least 1
        #: lists[t - 1]: the non-empty top-k lists the CRS gave during turn t, in order.
        self.lists: list[list[tuple[str, ...]]] = [[] for _ in range(self.num_turns)]
        for turn, items in given:
            self.lists[turn].append(items)

    def standing(self) -> list[tuple[str, ...]]:
        """P_t for t = 1..num_turns: the most recent non-empty list at the end of turn t."""
        out: list[tuple[str, ...]] = []
        current: tuple[str, ...] = ()
        for lists in self.lists:
            if lists:
                current = lists[-1]
            out.append(current)
        return out

    def covered(self, wanted: frozenset[str]) -> list[int]:
        """For t = 1..num_turns: how many of `wanted` were recommended in turns 1..t."""
        seen: set[str] = set()
        out: list[int] = []
        for lists in self.lists:
            for items in lists:
                seen.update(i for i in items if i in wanted)
            out.append(len(seen))
        return out

    def at(self, values: list[float], turn: int | None) -> float:
        """values[t - 1] for the given turn, the last turn when None; past the end the last state."""
        index = self.num_turns if turn is None else min(turn, self.num_turns)
        return values[index - 1]


def recommendation_trace(dialogue: Dialogue, k: int) -> RecommendationTrace:
    """`RecommendationTrace(dialogue, k)`, shared by the metrics inside `readings_shared`."""
    return shared_reading("trace", dialogue, k, lambda: RecommendationTrace(dialogue, k))


def extend(values: list[float], max_turns: int) -> list[float]:
    """Cut or pad per-turn values to max_turns, carrying the last value forward."""
    out = values[:max_turns]
    out.extend([values[-1]] * (max_turns - len(out)))
    return out
