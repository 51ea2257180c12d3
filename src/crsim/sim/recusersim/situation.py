"""Where a RecUserSim dialogue stands, read from the user's memory without an LLM: the facts of the
recommender's message, the details it told, the state lines of the action prompt, the state the
action guard reads, and the inquiry a message makes."""

from __future__ import annotations

from typing import Any

from crsim.model.domain import Domain
from crsim.sim.recusersim.actions import INQUIRE, REQUEST
from crsim.sim.recusersim.evidence import Inquiry, TurnFacts, tells, turn_facts
from crsim.sim.recusersim.guard import GuardState
from crsim.sim.recusersim.memory import Memory


def message_facts(domain: Domain, memory: Memory, text: str, recommended: list[str]) -> TurnFacts:
    """The facts of the recommender's message, against what the user's last message did."""
    return turn_facts(
        domain,
        text,
        [item for i in recommended if (item := domain.items.get(i)) is not None],
        before=list(memory.recommended),
        asked_for_recommendation=REQUEST.name in memory.last_actions,
        inquiry=memory.pending,
        constraints={c.slot: c.values for c in memory.need.constraints},
    )


def learn_told(domain: Domain, memory: Memory, text: str) -> None:
    """Remember which requested details of the item under discussion the message told."""
    item = domain.items.get(memory.focus) if memory.focus else None
    if item is None:
        return
    told = {d for d in memory.need.requests if tells(domain, item, d, text)}
    memory.learned.setdefault(item.id, set()).update(told)


def state_lines(domain: Domain, memory: Memory, turn: int, budget: int | None) -> list[str]:
    """Where the conversation stands, for the action prompt: items, open details, turns left."""
    lines = []
    item = domain.items.get(memory.focus) if memory.focus else None
    if item is None:
        lines.append("Nothing has been recommended to you yet.")
    else:
        lines.append(f"The item under discussion: {item.display_title}.")
        open_details = memory.open_details(item.id)
        if open_details and not memory.inquired[item.id]:
            lines.append(f"You still want to know its {', '.join(open_details)}.")
        elif open_details:
            lines.append(f"You asked about its {', '.join(open_details)} and got no answer.")
    if budget is None:
        lines.append(f"This is message {turn} of yours.")
    else:
        left = max(budget - turn, 0)
        lines.append(f"This is message {turn} of yours; after it you have {left} more.")
    return lines


def guard_state(
    memory: Memory, turn: int, budget: int | None, facts: TurnFacts, ratings: dict[str, Any]
) -> GuardState:
    """What the action guard reads of the dialogue (`guard.py`)."""
    score = ratings.get("recommendation", {}).get("score") if facts.recommended else None
    focus = memory.focus
    return GuardState(
        turn=turn,
        budget=budget,
        anything_recommended=bool(memory.recommended),
        score=score,
        contradicts=bool(facts.contradicts),
        open_details=memory.open_details(focus),
        asked_before=bool(focus and memory.inquired[focus]),
    )


def note_inquiry(domain: Domain, memory: Memory, names: list[str]) -> Inquiry | None:
    """Remember what this message does; with `inquire_attribute`, which details of which item it
    asks about: the open requested ones, else the first requestable detail not told yet."""
    memory.last_actions, memory.pending = names, None
    item = domain.items.get(memory.focus) if memory.focus else None
    if INQUIRE.name not in names or item is None:
        return None
    details = memory.open_details(item.id)
    if not details:
        known = memory.learned.get(item.id, set())
        details = [s.name for s in domain.requestable if s.name not in known][:1]
    memory.inquired[item.id] += 1
    memory.pending = Inquiry(item.id, item.display_title, details) if details else None
    return memory.pending
