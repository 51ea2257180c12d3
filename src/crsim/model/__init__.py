"""The unified data format: dialogue acts, utterances, dialogues, users and items."""

# No `from __future__ import annotations` in this file: it would bind the name `annotations` here and
# hide the submodule `crsim.model.annotations` from `from crsim.model import annotations`.
from typing import TYPE_CHECKING

from crsim.core.lazy import exports

if TYPE_CHECKING:
    from crsim.model.acts import DialogueAct, Intent, format_acts, parse_acts
    from crsim.model.dialogue import (
        FORMAT_VERSION,
        Dialogue,
        ErrorInfo,
        LLMCall,
        LLMUsage,
        ReplyOption,
        Role,
        Termination,
        TerminationReason,
        Timing,
        Utterance,
    )
    from crsim.model.domain import Domain
    from crsim.model.items import Item, ItemCollection
    from crsim.model.user import InformationNeed, SimulatedUser, SlotPreferences, UserProfile


#: Public name -> the submodule defining it; imported on first use, so that importing one
#: submodule (a run folder's file names, the text rules) does not build every pydantic model of the format.
_WHERE = {
    "Dialogue": "dialogue",
    "DialogueAct": "acts",
    "Domain": "domain",
    "ErrorInfo": "dialogue",
    "FORMAT_VERSION": "dialogue",
    "InformationNeed": "user",
    "Intent": "acts",
    "Item": "items",
    "ItemCollection": "items",
    "LLMCall": "dialogue",
    "LLMUsage": "dialogue",
    "ReplyOption": "dialogue",
    "Role": "dialogue",
    "SimulatedUser": "user",
    "SlotPreferences": "user",
    "Termination": "dialogue",
    "TerminationReason": "dialogue",
    "Timing": "dialogue",
    "UserProfile": "user",
    "Utterance": "dialogue",
    "format_acts": "acts",
    "parse_acts": "acts",
}


__getattr__ = exports(__name__, _WHERE)


__all__ = [
    "FORMAT_VERSION",
    "Dialogue",
    "DialogueAct",
    "Domain",
    "ErrorInfo",
    "InformationNeed",
    "Intent",
    "Item",
    "ItemCollection",
    "LLMCall",
    "LLMUsage",
    "ReplyOption",
    "Role",
    "SimulatedUser",
    "SlotPreferences",
    "Termination",
    "TerminationReason",
    "Timing",
    "UserProfile",
    "Utterance",
    "format_acts",
    "parse_acts",
]
