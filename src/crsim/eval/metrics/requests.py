"""Requests scored: did the CRS answer what the user asked about a recommended item, truthfully?

Success counts an accepted recommendation but not whether the CRS answered the user's questions
about it; a CRS that answers nothing ("I don't have details about ...") can tie one that answers
everything. These two metrics close that gap (`requests_answered` in docs/metrics.md):

- `requests_answered`: the share of the user's requests about a recommended item that the CRS's
  reply answered with the item's value in the catalogue;
- `task_success`: the user accepted a recommendation and every request it made about it was
  answered (the MultiWOZ notion of success: the right entity and every requested slot informed).

A request is a user `inquire(slot)` act after a recommendation; it is about the items of the latest
recommendation (ids the CRS gave or linked from its text). The reply is every CRS utterance up to
the next user utterance. It answers when an `inform` act of the reply (the CRS's own acts, or those
the rule-based annotator read from its text) gives the slot a value matching one of the items'
catalogue values, or when such a value occurs in the reply's text as a whole phrase (both
normalised by `crsim.model.text.normalize`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from crsim.core.components import BuildContext
from crsim.core.plugins import Params as BaseParams
from crsim.eval.metrics.base import Metric, NotApplicable, metric
from crsim.eval.metrics.structure import (
    recommendation_rounds,
    recommends,
    require_user_acts,
    shared_reading,
    user_facts,
)
from crsim.model.acts import Intent
from crsim.model.dialogue import Dialogue, Fault, Role, Utterance
from crsim.model.domain import Domain
from crsim.model.text import normalize, states_value

#: Missing reasons of these metrics.
NO_REQUESTS = "the user asked nothing about a recommended item"
NO_DOMAIN = "no domain to read true values from (evaluate a run folder, or give its domain)"

#: An informed value this long (normalised characters) may be a cut-off start of the true value.
_PREFIX_CHARS = 20


@dataclass(frozen=True, slots=True)
class Request:
    """One user request about the latest recommendation, and whether the CRS's reply answered it."""

    user_index: int  #: index of the user utterance that asked
    round_start: int  #: index of the recommending CRS utterance the request is about
    slot: str
    items: tuple[str, ...]  #: the items of that recommendation that have a catalogue value for the slot
    answered: bool


def _true_values(domain: Domain, items: Sequence[str], slot: str) -> dict[str, list[str]]:
    """Item id -> its normalised catalogue values of the slot's attribute (items without one left out)."""
    attribute = domain.attribute(slot)
    out: dict[str, list[str]] = {}
    for item_id in items:
        item = domain.items.get(item_id)
        if item is None:
            continue
        values = [v for v in (normalize(raw) for raw in item.values(attribute)) if v]
        if values:
            out[item_id] = values
    return out


def _matches(informed: str, truth: str) -> bool:
    """An informed value matches a true one: equal, containing it, or a long enough start of it."""
    if not informed:
        return False
    if informed == truth or f" {truth} " in f" {informed} ":
        return True
    return len(informed) >= _PREFIX_CHARS and truth.startswith(informed)


def answers(reply: Sequence[Utterance], slot: str, truths: Sequence[str], titles: Sequence[str] = ()) -> bool:
    """Whether CRS utterances give `slot` one of the (normalised) true values: an `inform` act whose
    value matches, or the value as a whole phrase of the text outside the items' `titles`
    (`crsim.model.text.states_value`)."""
    for utterance in reply:
        for act in utterance.acts:
            if act.intent != Intent.INFORM:
                continue
            for name, value in act.slots:
                if name == slot and value and any(_matches(normalize(value), t) for t in truths):
                    return True
        if states_value(utterance.text, truths, titles):
            return True
    return False


def _recommended(utterance: Utterance, domain: Domain) -> list[str]:
    """The items a recommending CRS utterance names: its ids, else the `item`/`title` of its acts."""
    if utterance.recommended_items:
        return list(dict.fromkeys(utterance.recommended_items))
    ids: list[str] = []
    for act in utterance.acts:
        if act.intent != Intent.RECOMMEND:
            continue
        item_id = act.value("item")
        if item_id is None or item_id not in domain.items:
            title = act.value("title")
            mention = domain.items.linker.match_title(title) if title else None
            item_id = mention.item_id if mention else None
        if item_id is not None and item_id not in ids:
            ids.append(item_id)
    return ids


def _titles(domain: Domain, items: Sequence[str]) -> list[str]:
    """The items' titles, with and without the year."""
    out: list[str] = []
    for item_id in items:
        item = domain.items.get(item_id)
        if item is not None:
            out += [item.display_title, item.title]
    return out


def _reply(dialogue: Dialogue, user_index: int) -> list[Utterance]:
    """The CRS utterances after a user utterance, up to the next user utterance."""
    out: list[Utterance] = []
    for utterance in dialogue.utterances[user_index + 1 :]:
        if utterance.role is Role.USER:
            break
        out.append(utterance)
    return out


def requests(dialogue: Dialogue, domain: Domain) -> Iterator[Request]:
    """The user's requests about recommended items, in order, each with whether it was answered.

    A request about a slot for which none of the recommended items has a catalogue value is left out:
    there is no true value to check an answer against.
    """
    latest: Utterance | None = None  # the latest recommending CRS utterance
    items: list[str] | None = None  # its items, read when the user first asks about them
    start = -1
    for index, utterance in enumerate(dialogue.utterances):
        if utterance.role is Role.CRS:
            if recommends(utterance):
                latest, items, start = utterance, None, index
            continue
        if latest is None:
            continue
        for act in utterance.acts:
            if act.intent != Intent.INQUIRE:
                continue
            if items is None:
                items = _recommended(latest, domain)
            if not items:
                break
            for slot in dict.fromkeys(name for name, _ in act.slots):
                truths = _true_values(domain, items, slot)
                if not truths:
                    continue
                every = [t for values in truths.values() for t in values]
                answered = answers(_reply(dialogue, index), slot, every, _titles(domain, items))
                yield Request(index, start, slot, tuple(truths), answered)


def asked(dialogue: Dialogue, domain: Domain) -> tuple[Request, ...]:
    """`requests` as a tuple, computed once per dialogue inside `readings_shared` (both metrics below
    read them)."""
    if not user_facts(dialogue).inquires:  # no request at all: nothing to walk
        return ()
    return shared_reading("requests", dialogue, id(domain), lambda: tuple(requests(dialogue, domain)))


class _RequestMetric(Metric):
    """Shared: the domain from the build context (a metric is also built without one, to check it)."""

    class Params(BaseParams):
        pass

    def __init__(self, params: BaseParams | None = None, ctx: BuildContext | None = None) -> None:
        super().__init__(params, ctx)
        self.domain = ctx.domain if ctx is not None else None

    def _domain(self) -> Domain:
        if self.domain is None:
            raise NotApplicable(NO_DOMAIN)
        return self.domain


@metric("requests_answered")
class RequestsAnswered(_RequestMetric):
    """The share of the user's requests about a recommended item that the CRS answered truthfully.

    Not applicable (never 0) when the user asked nothing about a recommended item.
    """

    binary = False
    direction = "higher"

    def default_label(self) -> str:
        return "Requests answered"

    def compute(self, dialogue: Dialogue) -> float:
        require_user_acts(dialogue)
        found = asked(dialogue, self._domain())
        if not found:
            raise NotApplicable(NO_REQUESTS, f"dialogue {dialogue.id!r}")
        return sum(r.answered for r in found) / len(found)


@metric("task_success")
class TaskSuccess(_RequestMetric):
    """1 if the user accepted a recommendation and the CRS answered every request it made about it.

    The requests about an accepted recommendation are those asked in its round (between the
    recommending utterance and the next one). A dialogue the CRS broke is 0, as for Success.
    """

    binary = True
    direction = "higher"

    def default_label(self) -> str:
        return "Task success"

    def compute(self, dialogue: Dialogue) -> float:
        require_user_acts(dialogue)
        if dialogue.termination is not None and dialogue.termination.fault is Fault.CRS:
            return 0.0
        accepted = {r.start for r in recommendation_rounds(dialogue) if r.accepted and r.start is not None}
        if not accepted:
            return 0.0
        unanswered = {r.round_start for r in asked(dialogue, self._domain()) if not r.answered}
        return float(bool(accepted - unanswered))
