"""The unified data format: dialogue acts, utterances, dialogues, users and items."""

from crsim.model.acts import DialogueAct, Intent, format_acts, parse_acts
from crsim.model.dialogue import (
    FORMAT_VERSION,
    Dialogue,
    ErrorInfo,
    LLMCall,
    LLMUsage,
    Role,
    Termination,
    TerminationReason,
    Timing,
    Utterance,
)
from crsim.model.domain import Domain
from crsim.model.items import Item, ItemCollection
from crsim.model.user import InformationNeed, SimulatedUser, SlotPreferences, UserProfile

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
