"""A dialogue prepared for scoring: normalised actions per service and the slot-value parameters
each turn informs, with values mapped to canonical form.

Parameters are `(slot, value)` pairs (`value` None for a slot without values). Several values of
one slot in one action are split into separate parameters, or merged with spaces when the
configuration says so. Canonicalisation follows the reference's bookkeeping within a turn: a
value whose canonical form is already present in the same turn and service keeps its surface
form, and when one turn repeats an action verbatim only its last copy is rewritten.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from crsim.studies.gcdf1.canonical import ValueCanonicaliser
from crsim.studies.gcdf1.dialogue import SLOT_VALUE_KINDS, USER, ActKind, Frame, GoalDialogue, Ontology, Turn

MULTI_VALUE_SEP = "###"

Param = tuple[str, str | None]
#: service -> parameter -> turn indices at which it was stated (ascending)
ParamTurns = dict[str, dict[Param, list[int]]]


def _identity(text: str) -> str:
    return text


def _mentions_general_or_request(text: str) -> bool:
    """The reference never rewrites actions whose text mentions 'general' or 'request'."""
    return "general" in text or "request" in text or "Request" in text or "REQUEST" in text


_blocked_names: tuple[dict[str, bool], dict[str, bool]] = ({}, {})


def _name_blocks(name: str, lowercase: bool) -> bool:
    """Whether an act or slot name stops canonicalisation (memoised: there are few names)."""
    table = _blocked_names[lowercase]
    found = table.get(name)
    if found is None:
        found = table[name] = _mentions_general_or_request(name.lower() if lowercase else name)
    return found


class Act(NamedTuple):
    """One action, normalised: `value` joins several values with '###', None when there are none."""

    kinds: int
    slot: str
    value: str | None
    blocked: bool  #: the act or slot name mentions 'general'/'request'


class ServiceActs:
    """The actions of one turn in one service."""

    __slots__ = ("acts", "kinds")

    def __init__(self) -> None:
        self.kinds = 0  #: union of the kinds of all actions in the service
        self.acts: list[Act] = []

    def slots(self, mask: int) -> list[str]:
        """Slots of the actions of any kind in `mask` (actions without a slot are left out)."""
        return [a.slot for a in self.acts if a.kinds & mask and a.slot]


EMPTY = ServiceActs()
_new_act = tuple.__new__  # skips NamedTuple's Python-level __new__ in the innermost loop


class TurnView:
    """One turn: actions grouped by service (only services with actions), requested slots."""

    __slots__ = (
        "_lowercase",
        "_nlu",
        "_turn",
        "index",
        "kinds",
        "memo",
        "params_cache",
        "requested",
        "services",
        "speaker",
        "utterance",
    )

    def __init__(self, index: int, turn: Turn, lowercase: bool) -> None:
        self._turn = turn
        self._lowercase = lowercase
        self.index = index
        self.speaker = turn.speaker
        self.utterance = turn.utterance
        self.requested: dict[str, list[str]] = {}
        self.services, self.kinds = _group(turn.frames, lowercase, self.requested)
        self._nlu: dict[str, ServiceActs] | None = None
        #: canonical parameters per (from NLU?, act-kind mask), filled by `DialogueView.params`
        self.params_cache: dict[tuple[bool, int], dict[str, list[Param]]] = {}
        #: answers of the heavier rules for this turn, keyed by (rule, domain)
        self.memo: dict[tuple[str, str], bool] = {}

    def acts(self, service: str) -> ServiceActs:
        return self.services.get(service, EMPTY)

    @property
    def has_nlu(self) -> bool:
        """Whether the system turn carries an NLU annotation."""
        return self._turn.nlu is not None

    @property
    def nlu(self) -> dict[str, ServiceActs]:
        """The NLU annotation's actions per service (grouped on first use; empty when absent)."""
        if self._nlu is None:
            frames = self._turn.nlu
            self._nlu = {} if frames is None else _group(frames, self._lowercase)[0]
        return self._nlu

    def nlu_acts(self, service: str) -> ServiceActs:
        return self.nlu.get(service, EMPTY)


def _group(
    frames: Iterable[Frame], lowercase: bool, requested: dict[str, list[str]] | None = None
) -> tuple[dict[str, ServiceActs], int]:
    """Actions per service (services without actions left out) and the union of their kinds;
    fills `requested` with each service's requested slots when given."""
    services: dict[str, ServiceActs] = {}
    names = _blocked_names[lowercase]
    slot_names = _blocked_names[False]
    turn_kinds = 0
    for frame in frames:
        if requested is not None and frame.requested_slots:
            slots = requested.setdefault(frame.service, [])
            for slot in frame.requested_slots:
                slot = slot.lower() if lowercase else slot
                if slot not in slots:
                    slots.append(slot)
        if not frame.actions:
            continue
        group = services.get(frame.service)
        if group is None:
            group = services[frame.service] = ServiceActs()
        append = group.acts.append
        kinds = group.kinds
        for action in frame.actions:
            slot = action.slot.lower() if lowercase else action.slot
            value: str | None = None
            if slot and action.values:
                joined = action.values[0] if len(action.values) == 1 else MULTI_VALUE_SEP.join(action.values)
                if joined:
                    value = joined.lower() if lowercase else joined
            blocked = names.get(action.act)
            if blocked is None:
                blocked = _name_blocks(action.act, lowercase)
            if not blocked and slot:
                blocked = slot_names.get(slot)
                if blocked is None:
                    blocked = _name_blocks(slot, False)
            append(_new_act(Act, (action.kinds, slot, value, blocked)))
            kinds |= action.kinds
        group.kinds = kinds
        turn_kinds |= kinds
    return services, turn_kinds


class GoalIndex:
    """The goal as the scorer reads it: normalised constraints, values per slot, requests."""

    def __init__(self, dialogue: GoalDialogue, lowercase: bool) -> None:
        norm = str.lower if lowercase else _identity
        self.domains = list(dialogue.goal)
        self.constraints: dict[str, list[Param]] = {}
        self.slot_values: dict[tuple[str, str], tuple[str, ...]] = {}
        self.requests: dict[str, list[str]] = {}
        self.transactional = {d: g.transactional for d, g in dialogue.goal.items()}
        for domain, goal in dialogue.goal.items():
            self.constraints[domain] = [(norm(s), norm(v)) for s, v in goal.constraints]
            by_slot: dict[tuple[str, str], list[str]] = {}
            for slot, value in goal.constraints:
                # matched by the slot name as written in the goal (so `arriveBy` never equals `arriveby`)
                values = by_slot.setdefault((domain, slot), [])
                if norm(value) not in values:
                    values.append(norm(value))
            self.slot_values.update({k: tuple(v) for k, v in by_slot.items()})
            requests: list[str] = []
            for slot in goal.requests:
                if norm(slot) not in requests:
                    requests.append(norm(slot))
            self.requests[domain] = requests

    def values(self, domain: str, slot: str) -> tuple[str, ...]:
        return self.slot_values.get((domain, slot), ())


class DialogueView:
    """Everything the two metrics read from one dialogue, computed once and cached."""

    def __init__(
        self,
        dialogue: GoalDialogue,
        ontology: Ontology,
        canonicaliser: ValueCanonicaliser | None,
        *,
        lowercase: bool = True,
        merge_values: bool = False,
        memoise: bool = True,
    ) -> None:
        self.dialogue = dialogue
        self.id = dialogue.dialogue_id
        self.ontology = ontology
        self.canonicaliser = canonicaliser
        self.merge_values = merge_values
        self.memoise = memoise
        self.goal = GoalIndex(dialogue, lowercase)
        self.turns = [TurnView(i, t, lowercase) for i, t in enumerate(dialogue.turns)]
        #: parameters of identical action lists (users repeat themselves), per (service, mask, acts)
        self._param_memo: dict[tuple[str, int, tuple[Act, ...]], list[Param]] = {}
        self.system_nlu = dialogue.system_nlu
        self._user_params: ParamTurns | None = None
        self._system_params: ParamTurns | None = None

    # -- parameters ---------------------------------------------------------------------------

    def params(self, turn: TurnView, mask: int, *, nlu: bool = False) -> dict[str, list[Param]]:
        """Canonical parameters of `turn` (or of its NLU annotation) per service, for acts in `mask`."""
        key = (nlu, mask)
        found = turn.params_cache.get(key)
        if found is None:
            services = turn.nlu if nlu else turn.services
            found = turn.params_cache[key] = {
                service: params
                for service, acts in services.items()
                if (params := self._service_params(service, acts, mask))
            }
        return found

    def _service_params(self, service: str, group: ServiceActs, mask: int) -> list[Param]:
        if not group.kinds & mask:
            return []
        if not self.memoise:
            return self._extract(service, group, mask)
        key = (service, mask, tuple(group.acts))
        found = self._param_memo.get(key)
        if found is None:
            found = self._param_memo[key] = self._extract(service, group, mask)
        return found

    def _extract(self, service: str, group: ServiceActs, mask: int) -> list[Param]:
        entries: list[tuple[str, str | None, bool]] = []
        multi: list[tuple[str, str, bool]] = []
        for act in group.acts:
            if not act.kinds & mask:
                continue
            value = act.value
            if value is not None and MULTI_VALUE_SEP in value:
                if self.merge_values:
                    value = value.replace(MULTI_VALUE_SEP, " ")
                else:
                    multi.append((act.slot, value, act.blocked))
                    continue
            entries.append((act.slot, value, act.blocked))
        for slot, value, blocked in reversed(multi):  # the reference appends split actions in reverse
            entries.extend((slot, part, blocked) for part in value.split(MULTI_VALUE_SEP))
        if self.canonicaliser is not None and service in self.goal.constraints:
            self._canonicalise(service, entries)
        seen: dict[Param, None] = {}
        for slot, value, _ in entries:
            if slot:
                seen[(slot, value)] = None
        return list(seen)

    def _canonicalise(self, service: str, entries: list[tuple[str, str | None, bool]]) -> None:
        """Rewrite values to canonical form in place, with the reference's index bookkeeping."""
        assert self.canonicaliser is not None
        positions: dict[Param, list[int]] = {}
        for index, (slot, value, blocked) in enumerate(entries):
            if slot and value is not None and not blocked and not _mentions_general_or_request(value):
                positions[(slot, value)] = [index]
        if not positions:
            return
        slots = list(dict.fromkeys(slot for slot, _ in positions))
        for slot in slots:
            goal_values = self.goal.values(service, slot)
            for param in [p for p in positions if p[0] == slot]:
                assert param[1] is not None
                canonical = self.canonicaliser.canonical(service, slot, param[1], goal_values)
                if canonical is None:
                    continue
                moved = positions.pop(param)
                target = (slot, canonical)
                if target in positions:
                    positions[target] = sorted(positions[target] + moved)
                else:
                    positions[target] = moved
        for (slot, value), indices in positions.items():
            if len(indices) == 1:
                index = indices[0]
                entries[index] = (slot, value, entries[index][2])

    def user_params(self) -> ParamTurns:
        """Every informed parameter per service with the user turns that state it."""
        if self._user_params is None:
            self._user_params = self._collect(USER, ActKind.INFORM)
        return self._user_params

    def system_params(self) -> ParamTurns:
        """Every parameter the system informs, recommends, books or reports as unavailable."""
        if self._system_params is None:
            self._system_params = self._collect(None, SLOT_VALUE_KINDS)
        return self._system_params

    def _collect(self, speaker: str | None, mask: int) -> ParamTurns:
        found: ParamTurns = {}
        for turn in self.turns:
            if (speaker == USER) != (turn.speaker == USER):
                continue
            for service, params in self.params(turn, mask).items():
                table = found.setdefault(service, {})
                for param in params:
                    table.setdefault(param, []).append(turn.index)
        return found

    def nlu_params(self, turn: TurnView, service: str) -> list[Param]:
        """What the system NLU understood the user to inform in `service` (turn is a system turn)."""
        return self.params(turn, ActKind.INFORM, nlu=True).get(service, [])

    def user_requests(self) -> dict[str, dict[str, list[int]]]:
        """Requested slots ('domain-slot') per service with the user turns requesting them."""
        found: dict[str, dict[str, list[int]]] = {}
        for turn in self.turns:
            for service, slots in turn.requested.items():
                table = found.setdefault(service, {})
                for slot in slots:
                    table.setdefault(slot, []).append(turn.index)
        return found

    # -- turn spans ---------------------------------------------------------------------------

    def system_turns_before(self, user_turn: int, limit: int | None = None) -> list[TurnView]:
        """System turns before `user_turn`, most recent first (at most `limit`)."""
        stop = -1 if limit is None else max(-1, user_turn - 1 - 2 * limit)
        return [self.turns[i] for i in range(user_turn - 1, stop, -2)]

    def system_turns_between(self, first: int, second: int) -> list[TurnView]:
        """System turns between two user turns, most recent first."""
        return [self.turns[i] for i in range(second - 1, first, -2)]
