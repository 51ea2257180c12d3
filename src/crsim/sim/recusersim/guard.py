"""The action guard: deterministic corrections of the LLM's action choice from the dialogue's state.

RecUserSim lets the LLM choose the actions. A small model asked to do so picks
`request_recommendation` almost every turn, never asks about a recommended item and never ends,
so the dialogues end at the turn limit with the user's questions unasked. The guard (crsim's
addition, `action_guard: true` by default, recorded under `action_guard` with the LLM's own choice)
applies the first of these rules that fits, each only when the actions it needs are configured:

1. `budget`: the user writes the last message of its `turn_budget`: it ends (feedback it chose stays).
2. `satisfied`: the item under discussion was rated at least `SATISFIED` (objective + modifier, 0-6),
   contradicts nothing the user looks for, and no requested detail of it is open (or the user already
   asked once): positive feedback and end.
3. `inquire`: the item under discussion has requested details not told yet, the user has not asked
   about them, and it was not rated poorly (below `POOR`) nor contradicts the need: ask about them
   (instead of asking for another recommendation or ending).
4. `too_early`: the user ends before anything was recommended: it asks for a recommendation instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from crsim.sim.recusersim.actions import END, INQUIRE, NEGATIVE, POSITIVE, REQUEST

#: Recommendation score (0-6) from which the user is satisfied with an item, and below which it is poor.
SATISFIED = 4.0
POOR = 3.0


@dataclass(frozen=True)
class GuardState:
    """What the guard looks at: the turn and the budget, and the state of the item under discussion."""

    turn: int
    budget: int | None
    anything_recommended: bool
    #: This turn's recommendation score of the item under discussion (None: not rated this turn).
    score: float | None
    contradicts: bool
    open_details: list[str]
    asked_before: bool


def guard_actions(
    chosen: list[str], state: GuardState, available: set[str], most: int
) -> tuple[list[str], str | None]:
    """The actions after the first fitting rule, and the rule's name (None: the choice stands)."""
    for rule in (_budget, _satisfied, _inquire, _too_early):
        fixed = rule(chosen, state, available)
        if fixed is not None and fixed != chosen:
            return fixed[-most:], rule.__name__.lstrip("_")  # each rule puts its key action last
    return chosen, None


def _budget(chosen: list[str], state: GuardState, available: set[str]) -> list[str] | None:
    if state.budget is None or state.turn < state.budget or END.name not in available:
        return None
    feedback = [a for a in chosen if a in (POSITIVE.name, NEGATIVE.name)]
    return [*feedback, END.name]


def _satisfied(chosen: list[str], state: GuardState, available: set[str]) -> list[str] | None:
    if state.score is None or state.score < SATISFIED or state.contradicts:
        return None
    if state.open_details and not state.asked_before:
        return None
    if not {END.name, POSITIVE.name} <= available:
        return None
    return [POSITIVE.name, END.name]


def _inquire(chosen: list[str], state: GuardState, available: set[str]) -> list[str] | None:
    if not state.open_details or state.asked_before or INQUIRE.name not in available:
        return None
    if state.contradicts or (state.score is not None and state.score < POOR):
        return None
    kept = [a for a in chosen if a not in (REQUEST.name, END.name, INQUIRE.name)]
    return [*kept, INQUIRE.name]


def _too_early(chosen: list[str], state: GuardState, available: set[str]) -> list[str] | None:
    if state.anything_recommended or END.name not in chosen or REQUEST.name not in available:
        return None
    return [REQUEST.name if a == END.name else a for a in chosen]
