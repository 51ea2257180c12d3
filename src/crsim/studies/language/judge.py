"""LLM judges of one utterance (role "judge"): its formality label and its key points.

Each asks for JSON under a schema (`crsim.llm.structured.generate_json`: constrained decoding
where the provider supports it, one repair). An answer that still cannot be read, or a failed
call, is a `Reading` with value None and the error (and the raw answer) kept, never a guess.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import jinja2
from pydantic import BaseModel, ConfigDict, Field, field_validator
from rapidfuzz import fuzz

from crsim.core.errors import ConfigError
from crsim.core.seeding import derive_seed
from crsim.llm.client import LLM, LLMHub
from crsim.llm.errors import LLMError
from crsim.llm.prompts import load_template, render, template_check
from crsim.llm.structured import generate_json
from crsim.llm.types import GenerationConfig, Message, system, user
from crsim.studies.language.measures import Reading

PROMPTS = "crsim.studies.language.prompts"

#: What each key-point kind means, as the judge's prompt explains it (the rule counter's kinds + other).
KIND_MEANINGS = {
    "item": "a specific title",
    "genre": "a genre or kind of movie",
    "person": "an actor, director or other named person",
    "period": "a release year, decade or era",
    "topic": "a subject, theme or plot element",
    "preference": "another like or dislike (mood, style, quality)",
    "time": "when they will watch",
    "place": "where or on what service they will watch",
    "company": "who they will watch with",
    "occasion": "the occasion",
    "constraint": "a limit such as running time, age rating or language",
    "question": "a specific thing they ask about an item",
    "feedback": "an opinion on a recommended item",
    "other": "any other piece of information the assistant could use",
}


class FormalityAnswer(BaseModel):
    formality: Literal["formal", "neutral", "informal"]


class KeyPointAnswer(BaseModel):
    kind: str = Field(json_schema_extra={"enum": list(KIND_MEANINGS)})
    text: Annotated[str, Field(min_length=1, max_length=100)]

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        if value not in KIND_MEANINGS:
            raise ValueError(f"kind {value!r} is not one of {', '.join(KIND_MEANINGS)}")
        return value


class KeyPointsAnswer(BaseModel):
    key_points: list[KeyPointAnswer] = Field(max_length=20)


class JudgeSettings(BaseModel):
    """How the judges call the model: role, sampling and prompt templates."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: str = Field("judge", min_length=1, description="Model role of the judges.")
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    formality_tokens: int = Field(32, ge=8, description="Token cap of a formality answer.")
    key_point_tokens: int = Field(320, ge=16, description="Token cap of a key-point answer.")
    min_grounding: float = Field(
        80.0,
        ge=0.0,
        le=100.0,
        description="Key points whose text matches no part of the message this well (rapidfuzz "
        "partial_ratio, 0-100) are not counted; 0 counts every listed point.",
    )
    formality_prompt: Annotated[str, template_check(PROMPTS)] = Field(
        "formality.j2",
        description="Template in crsim.studies.language.prompts or a path; parts system/utterance.",
    )
    key_points_prompt: Annotated[str, template_check(PROMPTS)] = Field(
        "key_points.j2",
        description="Template in crsim.studies.language.prompts or a path; parts system/utterance.",
    )


class LLMJudge:
    """Formality and key points of single utterances, one model call each (answers cached by the hub)."""

    def __init__(self, llms: LLMHub, settings: JudgeSettings | None = None) -> None:
        self.settings = settings or JudgeSettings()
        self.llm: LLM = llms.role(self.settings.role)
        self._formality = load_template(PROMPTS, self.settings.formality_prompt)
        self._key_points = load_template(PROMPTS, self.settings.key_points_prompt)
        self.failed = 0

    def formality_messages(self, text: str) -> list[Message]:
        return self._messages(self._formality, self.settings.formality_prompt, text)

    def key_point_messages(self, text: str) -> list[Message]:
        return self._messages(self._key_points, self.settings.key_points_prompt, text)

    def _messages(self, template: jinja2.Template, name: str, text: str) -> list[Message]:
        kinds = list(KIND_MEANINGS.items())
        parts = [
            render(template, part=p, text=" ".join(text.split()), kinds=kinds)
            for p in ("system", "utterance")
        ]
        if not all(parts):
            raise ConfigError(f"prompt template {name!r} renders nothing for part 'system' or 'utterance'")
        return [system(parts[0]), user(parts[1])]

    def _config(self, task: str, text: str, tokens: int) -> GenerationConfig:
        return GenerationConfig(
            temperature=self.settings.temperature, max_tokens=tokens, seed=derive_seed(task, text) % 2**31
        )

    async def formality(self, text: str) -> Reading[str]:
        """The label, or None with the error when the answer cannot be read or the call fails."""
        config = self._config("formality", text, self.settings.formality_tokens)
        try:
            answer = await generate_json(self.llm, self.formality_messages(text), FormalityAnswer, config)
        except LLMError as exc:
            return self._failed(f"{type(exc).__name__}: {exc}", None)
        if answer.value is None:
            return self._failed(answer.error or "no value", answer.raw)
        label = answer.value.formality
        return Reading(label, details=(f"judge: {label}",))

    async def key_points(self, text: str) -> Reading[int]:
        """The number of distinct key points listed that occur in the message, or None with the error."""
        config = self._config("key_points", text, self.settings.key_point_tokens)
        try:
            answer = await generate_json(self.llm, self.key_point_messages(text), KeyPointsAnswer, config)
        except LLMError as exc:
            return self._failed(f"{type(exc).__name__}: {exc}", None)
        if answer.value is None:
            return self._failed(answer.error or "no value", answer.raw)
        points: dict[str, str] = {}  # text -> kind: one text is one key point, whatever kinds it is given
        for point in answer.value.key_points:
            points.setdefault(" ".join(point.text.lower().split()), point.kind)
        grounded = {(kind, words): self._grounded(words, text) for words, kind in points.items()}
        kept = [f"{kind}: {words}" for (kind, words), ok in grounded.items() if ok]
        dropped = [f"not in the message: {kind}: {words}" for (kind, words), ok in grounded.items() if not ok]
        return Reading(len(kept), details=(*kept, *dropped))

    def _grounded(self, point: str, text: str) -> bool:
        """Whether the key point's words occur in the message (fuzzily): a small model may copy the
        prompt's examples instead of reading the message."""
        if self.settings.min_grounding <= 0:
            return True
        score = fuzz.partial_ratio(point, " ".join(text.lower().split()))
        return bool(score >= self.settings.min_grounding)

    def _failed(self, error: str, raw: str | None) -> Reading[Any]:
        self.failed += 1
        return Reading(None, error=error, raw=raw)
