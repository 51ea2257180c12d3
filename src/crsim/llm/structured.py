"""Structured answers: JSON validated by pydantic, and dialogue-act strings, each with one repair.

The schema (or grammar) goes to the provider for constrained decoding; the answer is validated;
if it does not validate, the model is shown its answer and the problem once and asked again; if
that fails too, the result is an error that keeps the raw text. Nothing here ever substitutes a
default value for an answer it could not read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from crsim.llm.client import LLM
from crsim.llm.errors import LLMOutputError
from crsim.llm.types import GenerationConfig, Message, assistant, user
from crsim.model.acts import DialogueAct, parse_acts
from crsim.model.text import JSONTextError, loads_clean, may_hold_surrogates

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Structured(Generic[T]):
    """A parsed answer (`value`) or why there is none (`error`); `raw` is the model's last text."""

    value: T | None
    raw: str
    error: str | None = None
    repaired: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None

    def unwrap(self) -> T:
        """The value, or an `LLMOutputError` carrying the raw text."""
        if self.error is not None or self.value is None:
            raise LLMOutputError(self.error or "no value", self.raw)
        return self.value


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.S)


def _json_text(raw: str) -> str:
    """The JSON part of an answer: code fences stripped, else from the first `{` to the last `}`."""
    fenced = _FENCE.match(raw)
    if fenced:
        return fenced.group(1)
    start, end = raw.find("{"), raw.rfind("}")
    return raw[start : end + 1] if 0 <= start < end else raw


def parse_model(raw: str, schema: type[M]) -> M:
    """Validate an answer against a pydantic model; raises ValueError with a readable reason.

    JSON nested too deeply or with over-long numbers is such a ValueError. A lone-surrogate escape
    ("\\ud800"), which pydantic's parser refuses, is read and replaced with U+FFFD like any text
    from outside (`crsim.model.text`).
    """
    text = _json_text(raw)
    try:
        if may_hold_surrogates(text):
            return schema.model_validate(loads_clean(text)[0])
        return schema.model_validate_json(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the answer: not valid JSON ({exc.msg})") from None
    except JSONTextError as exc:
        raise ValueError(f"the answer: JSON cannot be read ({exc})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the answer"
        raise ValueError(f"{where}: {first['msg']}") from None


async def generate_structured(
    llm: LLM,
    messages: list[Message],
    parse: Callable[[str], T],
    config: GenerationConfig | None = None,
    *,
    describe: str = "the format asked for",
) -> Structured[T]:
    """Generate, parse with `parse` (which raises ValueError), and repair once on failure."""
    completion = await llm.generate(messages, config)
    try:
        return Structured(parse(completion.text), completion.text)
    except ValueError as exc:
        first_error = str(exc)
    repair = [
        *messages,
        assistant(completion.text),
        user(f"That answer could not be read ({first_error}). Reply again with only {describe}."),
    ]
    second = await llm.generate(repair, config)
    try:
        return Structured(parse(second.text), second.text, repaired=True)
    except ValueError as exc:
        return Structured(None, second.text, error=f"unreadable answer after one repair: {exc}")


async def generate_json(
    llm: LLM, messages: list[Message], schema: type[M], config: GenerationConfig | None = None
) -> Structured[M]:
    """A JSON answer validated against `schema`, decoded under its JSON schema where the provider can."""
    json_schema = schema.model_json_schema()
    constrained = (config or GenerationConfig()).model_copy(
        update={"json_schema": json_schema, "grammar": None}
    )
    return await generate_structured(
        llm,
        messages,
        lambda raw: parse_model(raw, schema),
        constrained,
        describe=f"a JSON object matching this schema: {json.dumps(json_schema, separators=(',', ':'))}",
    )


def parse_act_answer(raw: str) -> list[DialogueAct]:
    text = raw.strip().strip("`").strip()
    if not text:
        raise ValueError("empty answer")
    return parse_acts(text.splitlines()[0] if "\n" in text else text)


async def generate_acts(
    llm: LLM,
    messages: list[Message],
    config: GenerationConfig | None = None,
    *,
    grammar: str | None = None,
) -> Structured[list[DialogueAct]]:
    """Dialogue acts in the `intent(slot="value")|...` form; `grammar` (GBNF) constrains decoding."""
    constrained = (config or GenerationConfig()).model_copy(update={"grammar": grammar, "json_schema": None})
    return await generate_structured(
        llm,
        messages,
        parse_act_answer,
        constrained,
        describe='dialogue acts like intent(slot="value")|intent()',
    )
