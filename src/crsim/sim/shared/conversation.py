"""The conversation and the information need as an LLM user's prompts show them (`llm_single`,
`llm_dual`, `pepper`, `target_biased`, `recusersim`): the history as entries, its `User:` /
`Recommender:` transcript, the last turns of it, and the need in the words a prompt uses."""

from __future__ import annotations

from dataclasses import dataclass, field

from crsim.core.errors import DataError
from crsim.model.dialogue import Role
from crsim.model.domain import Domain
from crsim.model.user import SimulatedUser

USER_LABEL, CRS_LABEL = "User", "Recommender"


@dataclass(frozen=True)
class Entry:
    """One utterance of the conversation as the simulator saw or said it."""

    role: Role
    text: str


def transcript(entries: list[Entry]) -> str:
    """`User: ...` / `Recommender: ...` lines; whitespace inside an utterance collapsed to single spaces."""
    lines = []
    for entry in entries:
        label = USER_LABEL if entry.role == Role.USER else CRS_LABEL
        lines.append(f"{label}: {' '.join(entry.text.split())}")
    return "\n".join(lines)


def recent_turns(history: list[Entry], max_turns: int | None) -> tuple[list[Entry], int]:
    """The last `max_turns` turns (each from a user utterance up to the next one) and how many
    utterances were left out before them (a CRS greeting counts as left out once a turn is)."""
    starts = [i for i, entry in enumerate(history) if entry.role == Role.USER]
    if max_turns is None or len(starts) <= max_turns:
        return list(history), 0
    cut = starts[-max_turns]
    return history[cut:], cut


@dataclass(frozen=True)
class SlotValues:
    slot: str
    values: list[str]


@dataclass(frozen=True)
class NeedView:
    """The information need (and, optionally, slot preferences) in the words a prompt uses:
    constraint values, the slots to ask about, target items by title."""

    constraints: list[SlotValues]
    requests: list[str]
    targets: list[str]
    likes: list[SlotValues] = field(default_factory=list)
    dislikes: list[SlotValues] = field(default_factory=list)


def need_view(user: SimulatedUser, domain: Domain, *, preferences: bool = True) -> NeedView:
    """Targets become display titles; a target id unknown to the domain is an error, not skipped."""
    titles = []
    for item_id in user.need.targets:
        item = domain.items.get(item_id)
        if item is None:
            raise DataError(
                f"user {user.id!r}: target item {item_id!r} is not among the {domain.name} items; "
                "expected ids of the domain's items"
            )
        titles.append(item.display_title)
    constraints = [SlotValues(s, user.need.constraint_values(s)) for s in user.need.constraints]
    prefs = user.profile.preferences if preferences else {}
    return NeedView(
        constraints=[c for c in constraints if c.values],
        requests=list(user.need.requests),
        targets=titles,
        likes=[SlotValues(s, list(p.likes)) for s, p in prefs.items() if p.likes],
        dislikes=[SlotValues(s, list(p.dislikes)) for s, p in prefs.items() if p.dislikes],
    )
