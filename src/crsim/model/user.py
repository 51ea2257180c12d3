"""What a (simulated) user wants and likes: the information need and the preference profile."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

SlotValueSpec = str | list[str]


class InformationNeed(BaseModel):
    """Constraints (slot -> wanted value or values), requests (slots the user will ask about),
    and target items (what the user is looking for, never told to the CRS)."""

    model_config = ConfigDict(extra="forbid")

    constraints: dict[str, SlotValueSpec] = Field(default_factory=dict)
    requests: list[str] = Field(default_factory=list)
    targets: list[str] = Field(default_factory=list)

    def constraint_values(self, slot: str) -> list[str]:
        value = self.constraints.get(slot)
        if value is None:
            return []
        return [value] if isinstance(value, str) else list(value)


class SlotPreferences(BaseModel):
    model_config = ConfigDict(extra="forbid")

    likes: list[str] = Field(default_factory=list)
    dislikes: list[str] = Field(default_factory=list)


class UserProfile(BaseModel):
    """Known preferences: explicit item ratings, liked/disliked slot values, and a free persona."""

    model_config = ConfigDict(extra="forbid")

    item_ratings: dict[str, float] = Field(default_factory=dict)
    preferences: dict[str, SlotPreferences] = Field(default_factory=dict)
    persona: dict[str, Any] = Field(default_factory=dict)

    def likes(self, slot: str) -> list[str]:
        prefs = self.preferences.get(slot)
        return list(prefs.likes) if prefs else []

    def dislikes(self, slot: str) -> list[str]:
        prefs = self.preferences.get(slot)
        return list(prefs.dislikes) if prefs else []


class SimulatedUser(BaseModel):
    """One member of a user population: the input a simulator gets for one dialogue."""

    model_config = ConfigDict(extra="forbid")

    id: str
    profile: UserProfile = Field(default_factory=UserProfile)
    need: InformationNeed = Field(default_factory=InformationNeed)


#: A population that simulates a user again appends `#<round>` (round >= 2) to the user's id.
_REUSE_SUFFIX = re.compile(r"#[2-9]\d*$|#1\d+$")


def source_user_id(user_id: str) -> str:
    """The person behind a simulated user's id: the id without the `#<round>` suffix a population adds
    when it simulates one user again (`users.allow_reuse`), so 'ml-7' and 'ml-7#2' are one user."""
    return _REUSE_SUFFIX.sub("", user_id) if "#" in user_id else user_id
