"""What is measured on one user utterance, the categories the measures fall into, and their records.

Three measures follow RecUserSim's refinement module: sentence length (words), formality
(formal / neutral / informal) and information richness (the number of key points). Each
utterance gets a value per measure and a category from configurable thresholds; a value an LLM
judge could not give is None with the error kept, and is counted, never replaced by a number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

T = TypeVar("T")


class Measure(StrEnum):
    LENGTH = "length"
    FORMALITY = "formality"
    RICHNESS = "richness"


#: Categories of each measure, from the low end to the high end (the order tests and plots use).
LENGTH_CATEGORIES = ("short", "medium", "long")
FORMALITY_CATEGORIES = ("informal", "neutral", "formal")
RICHNESS_CATEGORIES = ("low", "high")
CATEGORIES: dict[Measure, tuple[str, ...]] = {
    Measure.LENGTH: LENGTH_CATEGORIES,
    Measure.FORMALITY: FORMALITY_CATEGORIES,
    Measure.RICHNESS: RICHNESS_CATEGORIES,
}
#: Formality as a number, so it can be averaged and ranked like the other two measures.
FORMALITY_SCORE = {"informal": -1, "neutral": 0, "formal": 1}


class Thresholds(BaseModel):
    """Category boundaries. Defaults follow RecUserSim's refinement examples where the paper gives
    them: a concise user writes at most 20 words, a low-information user at most 2 key points. The
    paper gives no long-message bound; above 40 words (twice the concise bound) counts as long."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    short_max: int = Field(20, ge=1, description="At most this many words: short.")
    medium_max: int = Field(40, ge=1, description="More than short_max and at most this many words: medium.")
    low_richness_max: int = Field(2, ge=0, description="At most this many key points: low richness.")

    @model_validator(mode="after")
    def _ordered(self) -> Thresholds:
        if self.medium_max <= self.short_max:
            raise ValueError(f"medium_max ({self.medium_max}) must be above short_max ({self.short_max})")
        return self

    def length_category(self, words: int) -> str:
        if words <= self.short_max:
            return "short"
        return "medium" if words <= self.medium_max else "long"

    def richness_category(self, key_points: int) -> str:
        return "low" if key_points <= self.low_richness_max else "high"


_WORD = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*", re.UNICODE)


def word_count(text: str) -> int:
    """Words of `text`: runs of letters or digits, with inner apostrophes and hyphens ("don't",
    "feel-good" are one word); punctuation and emoji are not words."""
    return len(_WORD.findall(text))


@dataclass(frozen=True)
class Reading(Generic[T]):
    """One measurement: a value, or why there is none (`error`, with the model's `raw` text).
    `details` says what the value rests on (the key points found, the formality cues seen)."""

    value: T | None
    error: str | None = None
    raw: str | None = None
    details: tuple[str, ...] = field(default=())


class UtteranceMeasures(BaseModel):
    """The measures of one user utterance; `turn` is its position among the dialogue's user turns."""

    model_config = ConfigDict(extra="forbid")

    dialogue_id: str
    turn: int = Field(ge=1)
    text: str
    words: int
    length: str
    formality: str | None = Field(description="formal / neutral / informal; None when unreadable.")
    formality_error: str | None = None
    formality_details: list[str] = Field(default_factory=list)
    key_points: int | None = Field(description="Number of key points; None when unreadable.")
    key_points_error: str | None = None
    key_points_found: list[str] = Field(default_factory=list, description="The key points, `kind: text`.")
    richness: str | None = Field(description="low / high; None when key_points is None.")
    raw: dict[str, str] = Field(default_factory=dict, description="Unreadable LLM answers, by measure.")

    def category(self, measure: Measure) -> str | None:
        if measure is Measure.LENGTH:
            return self.length
        return self.formality if measure is Measure.FORMALITY else self.richness

    def number(self, measure: Measure) -> float | None:
        """The measure as a number: words, key points, or the formality score (-1, 0, 1)."""
        if measure is Measure.LENGTH:
            return float(self.words)
        if measure is Measure.RICHNESS:
            return None if self.key_points is None else float(self.key_points)
        return None if self.formality is None else float(FORMALITY_SCORE[self.formality])

    def error(self, measure: Measure) -> str | None:
        if measure is Measure.FORMALITY:
            return self.formality_error
        return self.key_points_error if measure is Measure.RICHNESS else None


class DialogueMeasures(BaseModel):
    """The measured user utterances of one dialogue with what groups them: the simulator (`group`,
    the simulator id, made unique across runs when needed) and the persona's linguistic pattern."""

    model_config = ConfigDict(extra="forbid")

    dialogue_id: str
    group: str
    simulator_id: str | None
    run: str
    pattern: dict[str, str] = Field(
        default_factory=dict, description="Persona linguistic pattern: persona key -> level (lower case)."
    )
    utterances: list[UtteranceMeasures] = Field(default_factory=list)
