"""The values that cross the LLM interface: messages, generation parameters, completions."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Message(TypedDict):
    """One chat message, in the shape every chat API shares."""

    role: Literal["system", "user", "assistant"]
    content: str


def system(content: str) -> Message:
    return {"role": "system", "content": content}


def user(content: str) -> Message:
    return {"role": "user", "content": content}


def assistant(content: str) -> Message:
    return {"role": "assistant", "content": content}


class GenerationConfig(BaseModel):
    """Parameters of one generation. A field left `None` takes the role's configured default.

    `json_schema` and `grammar` (GBNF) ask the provider for constrained decoding; give at most one.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float | None = Field(None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(None, ge=1)
    stop: tuple[str, ...] = ()
    seed: int | None = None
    json_schema: dict[str, Any] | None = None
    grammar: str | None = None

    @model_validator(mode="after")
    def _one_constraint(self) -> GenerationConfig:
        if self.json_schema is not None and self.grammar is not None:
            raise ValueError("give json_schema or grammar, not both")
        return self


class ResolvedGeneration(BaseModel):
    """A `GenerationConfig` with the role's defaults filled in: what a provider receives."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float
    max_tokens: int
    stop: tuple[str, ...] = ()
    seed: int | None = None
    json_schema: dict[str, Any] | None = None
    grammar: str | None = None


class Usage(BaseModel):
    """Token counts of one call as the provider reported them (0 when it reports none)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0


class Completion(BaseModel):
    """What a generation returned. `latency` is seconds spent waiting for the provider (0 on a cache hit);
    `raw` is the provider's response body, kept for debugging; `replaced_code_points` counts the
    characters of `text` and `raw` that could not be written (lone surrogates) and became U+FFFD."""

    text: str
    usage: Usage = Field(default_factory=Usage)
    latency: float = 0.0
    raw: dict[str, Any] | None = None
    model: str = ""
    finish_reason: str | None = None
    cached: bool = False
    replaced_code_points: int = 0
