"""Reading SGD-style JSON dialogues (ConvLab-2 / MultiWOZ 2.1 conversions) with located errors.

A file holds a list of dialogues (or an object mapping ids to dialogues), plain or gzipped. Each
dialogue is checked field by field; a malformed one becomes a `LoadIssue` naming the file, the
record, the dialogue id and the field, and the other dialogues are still read. The checks are
hand-written rather than a pydantic model because they run for every action of every turn and
the whole evaluation of a thousand dialogues should take seconds.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crsim.studies.gcdf1.dialogue import (
    SYSTEM,
    USER,
    Action,
    DomainGoal,
    Frame,
    GoalDialogue,
    Turn,
    sgd_act_kinds,
)

#: Goal keys holding constraints, in the order the reference reads them.
CONSTRAINT_KEYS = ("book", "fail_book", "info", "fail_info")
REQUEST_KEY = "reqt"


class SgdFormatError(ValueError):
    """A dialogue field that does not have the expected shape (`field` is a path like
    `turns[3].frames[0].service`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"field '{field}': {message}")
        self.field = field
        self.message = message

    def within(self, prefix: str) -> SgdFormatError:
        """The same error located inside `prefix` (locations are built only when something fails)."""
        return SgdFormatError(f"{prefix}.{self.field}" if self.field else prefix, self.message)


@dataclass(frozen=True)
class LoadIssue:
    """A file or dialogue that could not be read; the rest of the input is still scored."""

    path: str
    message: str
    record: int | None = None
    dialogue_id: str | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = [self.path]
        if self.record is not None:
            where.append(f"record {self.record}")
        if self.dialogue_id is not None:
            where.append(f"dialogue {self.dialogue_id!r}")
        if self.field:
            where.append(f"field '{self.field}'")
        return f"{', '.join(where)}: {self.message}"


@dataclass
class LoadResult:
    dialogues: list[GoalDialogue] = field(default_factory=list)
    issues: list[LoadIssue] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _expect(value: Any, kind: type | tuple[type, ...], where: str, what: str) -> Any:
    if not isinstance(value, kind):
        raise SgdFormatError(where, f"expected {what}, got {_type_name(value)}")
    return value


_is_str = str.__instancecheck__  # `isinstance(x, str)` as a function, for map() over a list


def _string_list(value: Any) -> bool:
    """Whether `value` is a list of strings (the fast paths' one check, done in C)."""
    return isinstance(value, list) and all(map(_is_str, value))


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if _string_list(value):
        return tuple(value)
    if not isinstance(value, list):
        raise SgdFormatError(where, f"expected a list of strings, got {_type_name(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise SgdFormatError(f"{where}[{index}]", f"expected a string, got {_type_name(item)}")
    return tuple(value)


# Each reader below has a fast path that accepts only well-formed input with the fewest Python-level
# calls, and otherwise hands over to the checked reader, which raises the located error for the first
# bad field (or reads the same value: a fast path never decides what is valid). At 1,000 dialogues
# (26,000 turns, 141,000 frames, 96,000 actions) the checked readers alone took about as long as
# `json.load` of the files.


#: Actions read so far, by (act, slot, values): `Action` is immutable, so equal actions share one
#: object. In the reference evaluator's 128 dialogues 12,323 actions hold 1,046 distinct ones.
_ACTIONS: dict[tuple[str, str, tuple[str, ...]], Action] = {}
_MAX_ACTIONS = 200_000  # emptied when full: a memo, not a store


def _action(raw: Any) -> Action:
    if isinstance(raw, dict):
        act, slot, values = raw.get("act"), raw.get("slot") or "", raw.get("values")
        if isinstance(act, str) and isinstance(slot, str) and (not values or _string_list(values)):
            key = (act, slot, tuple(values) if values else ())
            found = _ACTIONS.get(key)
            if found is None:
                if len(_ACTIONS) >= _MAX_ACTIONS:
                    _ACTIONS.clear()
                found = _ACTIONS[key] = Action(act, slot, key[2], sgd_act_kinds(act))
            return found
    return _checked_action(raw)


def _checked_action(raw: Any) -> Action:
    if not isinstance(raw, dict):
        raise SgdFormatError("", f"expected an action object, got {_type_name(raw)}")
    act = raw.get("act")
    if not isinstance(act, str):
        raise SgdFormatError("act", f"expected an act name (string), got {_type_name(act)}")
    slot = raw.get("slot") or ""
    if not isinstance(slot, str):
        raise SgdFormatError("slot", f"expected a string, got {_type_name(slot)}")
    values = raw.get("values")
    return Action(act, slot, _strings(values, "values") if values else (), sgd_act_kinds(act))


def _frame(raw: Any, user: bool) -> Frame | None:
    """A frame, or None for one with neither actions nor requested slots (nothing to score)."""
    if isinstance(raw, dict):
        service, actions_raw = raw.get("service"), raw.get("actions") or []
        state = raw.get("state") if user else None
        if not actions_raw and isinstance(service, str) and (state is None or _nothing_requested(state)):
            return None  # most frames: a service the turn says nothing about
        requested_raw = state.get("requested_slots") if isinstance(state, dict) else None
        if (
            isinstance(service, str)
            and isinstance(actions_raw, list)
            and (state is None or isinstance(state, dict))
            and (not requested_raw or _string_list(requested_raw))
        ):
            try:
                actions = tuple(map(_action, actions_raw))
            except SgdFormatError:
                return _checked_frame(raw, user)  # locates the bad action
            if not actions and not requested_raw:
                return None
            return Frame(service, actions, tuple(requested_raw) if requested_raw else ())
    return _checked_frame(raw, user)


def _nothing_requested(state: Any) -> bool:
    return isinstance(state, dict) and not state.get("requested_slots")


def _checked_frame(raw: Any, user: bool) -> Frame | None:
    if not isinstance(raw, dict):
        raise SgdFormatError("", f"expected a frame object, got {_type_name(raw)}")
    service = raw.get("service")
    if not isinstance(service, str):
        raise SgdFormatError("service", f"expected a service name (string), got {_type_name(service)}")
    actions_raw = raw.get("actions") or []
    _expect(actions_raw, list, "actions", "a list of actions")
    actions: list[Action] = []
    for index, action in enumerate(actions_raw):
        try:
            actions.append(_checked_action(action))
        except SgdFormatError as exc:
            raise exc.within(f"actions[{index}]") from None
    requested: tuple[str, ...] = ()
    state = raw.get("state") if user else None
    if state is not None:
        _expect(state, dict, "state", "an object")
        if state.get("requested_slots"):
            requested = _strings(state["requested_slots"], "state.requested_slots")
    if not actions and not requested:
        return None
    return Frame(service, tuple(actions), requested)


def _frames(raw: Any, where: str, user: bool) -> tuple[Frame, ...]:
    _expect(raw, list, where, "a list of frames")
    try:
        return tuple(frame for item in raw if (frame := _frame(item, user)) is not None)
    except SgdFormatError:
        pass
    for index, item in enumerate(raw):  # again, item by item, to name the bad frame
        try:
            _frame(item, user)
        except SgdFormatError as exc:
            raise exc.within(f"{where}[{index}]") from None
    raise AssertionError("unreachable: a frame failed once and not again")


def _turn(raw: Any, index: int) -> Turn:
    where = f"turns[{index}]"
    _expect(raw, dict, where, "a turn object")
    expected = USER if index % 2 == 0 else SYSTEM
    speaker = raw.get("speaker")
    if speaker != expected:
        raise SgdFormatError(
            f"{where}.speaker",
            f"expected {expected!r} (turns alternate USER, SYSTEM, starting with the user), got {speaker!r}",
        )
    turn_id = raw.get("turn_id")
    if turn_id is not None and str(turn_id) != str(index):
        raise SgdFormatError(f"{where}.turn_id", f"expected {index} (the turn's position), got {turn_id!r}")
    utterance = raw.get("utterance", "")
    _expect(utterance, str, f"{where}.utterance", "a string")
    frames = _frames(raw.get("frames") or [], f"{where}.frames", expected == USER)
    nlu: tuple[Frame, ...] | None = None
    nlu_raw = raw.get("nlu")
    if nlu_raw:  # an empty or missing NLU annotation means "not annotated"
        _expect(nlu_raw, dict, f"{where}.nlu", "an object with 'frames'")
        nlu = _frames(nlu_raw.get("frames") or [], f"{where}.nlu.frames", False)
    return Turn(speaker=expected, utterance=utterance, frames=frames, nlu=nlu)


def _domain_goal(raw: Any, where: str) -> DomainGoal:
    _expect(raw, dict, where, "an object with info/book/reqt parts")
    constraints: list[tuple[str, str]] = []
    for key in CONSTRAINT_KEYS:
        part = raw.get(key)
        if part is None:
            continue
        _expect(part, dict, f"{where}.{key}", "an object mapping slots to values")
        for slot, value in part.items():
            _expect(value, str, f"{where}.{key}.{slot}", "a string value")
            constraints.append((slot, value))
    requests: tuple[str, ...] = ()
    reqt = raw.get(REQUEST_KEY)
    if isinstance(reqt, dict):
        requests = tuple(reqt)
    elif reqt is not None:
        requests = _strings(reqt, f"{where}.{REQUEST_KEY}")
    return DomainGoal(constraints=tuple(constraints), requests=requests, transactional=bool(raw.get("book")))


def parse_sgd_dialogue(raw: Any) -> GoalDialogue:
    """One SGD dialogue object as a `GoalDialogue`; `SgdFormatError` names the first bad field."""
    _expect(raw, dict, "dialogue", "a dialogue object")
    dialogue_id = raw.get("dialogue_id")
    if not isinstance(dialogue_id, str) or not dialogue_id:
        raise SgdFormatError("dialogue_id", f"expected a non-empty string, got {_type_name(dialogue_id)}")
    goal_raw = _expect(raw.get("goal"), dict, "goal", "an object mapping domains to sub-goals")
    goal = {domain: _domain_goal(part, f"goal.{domain}") for domain, part in goal_raw.items()}
    turns_raw = _expect(raw.get("turns"), list, "turns", "a list of turns")
    turns = tuple(_turn(t, i) for i, t in enumerate(turns_raw))
    return GoalDialogue(dialogue_id=dialogue_id, goal=goal, turns=turns)


def _records(data: list[Any] | dict[str, Any]) -> Iterable[tuple[int, Any]]:
    return enumerate(data if isinstance(data, list) else data.values())


def parse_sgd_records(data: Any, path: str, result: LoadResult | None = None) -> LoadResult:
    """Parse the dialogues of one loaded file into `result`, collecting an issue per bad dialogue."""
    result = result if result is not None else LoadResult()
    if not isinstance(data, (list, dict)):
        result.issues.append(LoadIssue(path, f"expected a list of dialogues, got {_type_name(data)}"))
        return result
    for index, raw in _records(data):
        try:
            dialogue = parse_sgd_dialogue(raw)
        except SgdFormatError as exc:
            dialogue_id = raw.get("dialogue_id") if isinstance(raw, dict) else None
            result.issues.append(
                LoadIssue(
                    path,
                    exc.message,
                    record=index,
                    dialogue_id=dialogue_id if isinstance(dialogue_id, str) else None,
                    field=exc.field,
                )
            )
            continue
        if dialogue.dialogue_id in result.seen:
            result.issues.append(
                LoadIssue(
                    path,
                    "this dialogue id was read before; the first dialogue with it is kept",
                    record=index,
                    dialogue_id=dialogue.dialogue_id,
                )
            )
            continue
        result.seen.add(dialogue.dialogue_id)
        result.dialogues.append(dialogue)
    return result


def read_json(path: Path) -> Any:
    """A JSON file, gunzipped when its name ends in `.gz`."""
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            return json.load(handle)
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def load_sgd_files(paths: Sequence[str | Path]) -> LoadResult:
    """Read every file; unreadable files, malformed dialogues and repeated ids become issues."""
    result = LoadResult()
    for raw_path in paths:
        path = Path(raw_path)
        try:
            data = read_json(path)
        except OSError as exc:
            result.issues.append(LoadIssue(str(path), f"cannot read the file ({exc.strerror or exc})"))
            continue
        except (json.JSONDecodeError, UnicodeDecodeError, EOFError) as exc:
            result.issues.append(LoadIssue(str(path), f"not valid JSON ({exc})"))
            continue
        parse_sgd_records(data, str(path), result)
    return result
