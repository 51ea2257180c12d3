"""The answer schemas of RecUserSim's structured questions and what is made of the answers: the
excitation question (may a recommended item outside the known preferences reveal a new one?) and the
action selection (which actions, as shown with the action pattern's tendencies)."""

from __future__ import annotations

from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, create_model

from crsim.llm.structured import Structured
from crsim.model.items import Item
from crsim.sim.recusersim.actions import UserAction
from crsim.sim.recusersim.memory import Discovery, Memory
from crsim.sim.recusersim.params import RecUserSimParams
from crsim.sim.recusersim.profile import ActionPattern


def excitation_schema(justification_chars: int) -> type[BaseModel]:
    """The answer of the excitation question: reasoning, whether agreeable, the new preference."""
    return create_model(
        "Excitation",
        __config__=ConfigDict(extra="forbid"),
        reasoning=(str, Field(max_length=justification_chars)),
        agreeable=(bool, ...),
        new_preference=(str, Field(max_length=60)),
    )


def excitation_record(answer: Structured[Any], item: Item, turn: int, memory: Memory) -> dict[str, Any]:
    """The record of the excitation question; an agreeable answer with a preference is remembered
    as discovered."""
    record: dict[str, Any] = {"item_id": item.id, "item": item.display_title}
    if answer.value is None:
        return {**record, "error": answer.error, "raw": answer.raw}
    value = answer.value.model_dump()
    record.update(value)
    preference = str(value["new_preference"]).strip()
    if value["agreeable"] and preference:
        discovery = Discovery(
            turn=turn,
            item_id=item.id,
            item=item.display_title,
            preference=preference,
            reason=value["reasoning"],
        )
        memory.discovered.append(discovery)
        record["discovered"] = True
    else:
        record["discovered"] = False
    return record


def action_schema(available: list[UserAction], params: RecUserSimParams) -> type[BaseModel]:
    """The answer of the action selection: one to `max_actions` of the available actions (and the
    reasoning first, with `action_reason`)."""
    names = cast(Any, Literal)[tuple(a.name for a in available)]
    fields: dict[str, Any] = {}
    if params.action_reason:
        fields["reasoning"] = (str, Field(max_length=params.justification_chars))
    fields["actions"] = (list[names], Field(min_length=1, max_length=params.max_actions))  # type: ignore[valid-type]
    return create_model("ActionSelection", __config__=ConfigDict(extra="forbid"), **fields)


def shown_actions(available: list[UserAction], pattern: ActionPattern, details: str) -> list[dict[str, Any]]:
    """The actions as the action prompt lists them: name, meaning, the pattern's tendency."""
    return [
        {
            "name": a.name,
            "meaning": a.meaning.replace("{details}", details),
            "tendency": pattern.tendencies.get(a.name),
        }
        for a in available
    ]
