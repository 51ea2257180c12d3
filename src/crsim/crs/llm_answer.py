"""The answer the `llm` CRS asks its model for each turn: `{"recommend": [numbers], "message": text}`,
its per-turn JSON schema (numbers bounded by the candidates, a message with room to finish its
sentence) and the token budget that fits it."""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator


class CRSAnswer(BaseModel):
    """What the model answers each turn; per-turn subclasses bound the candidate numbers."""

    model_config = ConfigDict(extra="forbid")  # a closed schema, as OpenAI's strict mode requires

    recommend: list[int]
    message: str

    @field_validator("message")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the message must not be empty")
        return value.strip()


#: How far past `max_message_chars` the schema lets a message run, so that the model can end its
#: sentence and the cut falls at a sentence end, not where a grammar closed the string.
OVERRUN = 1.5
#: Characters per token assumed when the answer's token budget is derived (3: on the safe side of
#: the ~4 of English text, since titles, numbers and JSON punctuation take more tokens).
_CHARS_PER_TOKEN = 3


def _overhead(max_recommendations: int) -> int:
    """Tokens of an answer besides its message: braces, keys, quotes and the numbers."""
    return 4 * max_recommendations + 24


def schema_chars(max_message_chars: int, max_tokens: int | None = None, max_recommendations: int = 0) -> int:
    """The longest message the answer schema allows: `OVERRUN` times the limit, less where a given
    token cap could not hold that much (never less than the limit itself)."""
    room = int(max_message_chars * OVERRUN)
    if max_tokens is not None:
        room = min(room, (max_tokens - _overhead(max_recommendations)) * _CHARS_PER_TOKEN)
    return max(room, max_message_chars)


def answer_tokens(max_message_chars: int, max_recommendations: int) -> int:
    """A token budget that fits the longest answer the schema allows, with its JSON around it."""
    return -(-schema_chars(max_message_chars) // _CHARS_PER_TOKEN) + _overhead(max_recommendations)


@cache
def answer_model(candidates: int, most: int, max_chars: int) -> type[CRSAnswer]:
    """The answer schema for a turn with `candidates` numbered items: numbers 1..candidates (as an
    enum and as bounds, for grammar converters that read either), at most `most` of them, and a
    message of at most `max_chars` characters."""
    numbers: Any = list[int]
    if candidates > 0:
        bounds = Field(ge=1, le=candidates, json_schema_extra={"enum": list(range(1, candidates + 1))})
        numbers = list[Annotated[int, bounds]]
    return create_model(
        f"CRSAnswer{candidates}",
        __base__=CRSAnswer,
        recommend=(
            numbers,
            Field(max_length=min(most, candidates), description="Numbers of the recommended candidates."),
        ),
        message=(str, Field(min_length=1, max_length=max_chars, description="What to say to the user.")),
    )
