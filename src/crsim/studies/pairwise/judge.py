"""The pairwise judge: an LLM asked, per criterion and in both orders, which of two conversations'
simulated users is better, and the outcome the two orders give together."""

from __future__ import annotations

import asyncio
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

import jinja2
from pydantic import BaseModel, ConfigDict, Field, create_model

from crsim.core.errors import ConfigError
from crsim.core.seeding import derive_seed
from crsim.eval.judge.transcript import fit, lines
from crsim.llm.client import LLM
from crsim.llm.errors import LLMError
from crsim.llm.prompts import load_template, render
from crsim.llm.structured import generate_json
from crsim.llm.types import GenerationConfig, Message, system, user
from crsim.model.dialogue import Dialogue
from crsim.studies.pairwise.criteria import Criteria
from crsim.studies.pairwise.records import CriterionOutcome, Outcome, Preference, Side

PROMPTS = "crsim.studies.prompts"
DEFAULT_PROMPT = "pairwise.j2"


class Verdict(BaseModel):
    """The judge's answer: justification first, then which conversation's user is better."""

    model_config = ConfigDict(extra="forbid")

    justification: str = Field(min_length=1)
    better: Literal["1", "2", "tie"]


@cache
def _verdict_schema(max_justification_chars: int | None) -> type[Verdict]:
    justification: Any = Field(min_length=1, max_length=max_justification_chars)
    return create_model("Verdict", __base__=Verdict, justification=(str, justification))


@dataclass
class PairwiseJudge:
    """Asks an LLM which of two conversations' simulated users is better, per criterion, both orders."""

    llm: LLM
    criteria: Criteria
    temperature: float | None = None
    max_tokens: int | None = None
    max_chars: int = 8000
    max_justification_chars: int | None = None
    prompt: str = DEFAULT_PROMPT
    template: jinja2.Template = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.template = load_template(PROMPTS, self.prompt)

    def messages(self, first: Dialogue, second: Dialogue, criterion: str) -> list[Message]:
        variables: dict[str, Any] = {
            "description": self.criteria.description,
            "criterion": criterion,
            "criterion_description": self.criteria.criteria[criterion],
            "first": fit(lines(first.utterances), self.max_chars),
            "second": fit(lines(second.utterances), self.max_chars),
        }
        parts = []
        for part in ("system", "task"):
            text = render(self.template, part=part, **variables)
            if not text:
                raise ConfigError(f"prompt template {self.prompt!r} renders nothing for part {part!r}")
            parts.append(text)
        return [system(parts[0]), user(parts[1])]

    async def ask(
        self, a: Dialogue, b: Dialogue, criterion: str, order: Literal["a_first", "b_first"]
    ) -> Preference:
        """One order's answer, as A/B/tie."""
        first, second = (a, b) if order == "a_first" else (b, a)
        seed = derive_seed("pairwise", criterion, a.id, b.id, order) % 2**31
        config = GenerationConfig(temperature=self.temperature, max_tokens=self.max_tokens, seed=seed)
        schema = _verdict_schema(self.max_justification_chars)
        try:
            answer = await generate_json(self.llm, self.messages(first, second, criterion), schema, config)
        except LLMError as exc:
            return Preference(order=order, better=None, error=f"{type(exc).__name__}: {exc}")
        if not answer.ok or answer.value is None:
            return Preference(
                order=order,
                better=None,
                raw=answer.raw,
                error=f"LLMOutputError: {answer.error or 'no value'}",
            )
        said = answer.value.better
        better: Side = "tie"
        if said != "tie":
            better = "A" if (said == "1") == (order == "a_first") else "B"
        return Preference(
            order=order, better=better, justification=answer.value.justification.strip(), raw=answer.raw
        )

    async def compare(
        self, a: Dialogue, b: Dialogue, limit: asyncio.Semaphore | None = None
    ) -> list[CriterionOutcome]:
        """Every criterion for one pair, both orders asked."""

        async def gated(criterion: str, order: Literal["a_first", "b_first"]) -> Preference:
            async with limit or nullcontext():
                return await self.ask(a, b, criterion, order)

        names = list(self.criteria.criteria)
        answers = await asyncio.gather(*(gated(c, o) for c in names for o in ("a_first", "b_first")))
        return [outcome(c, answers[2 * i], answers[2 * i + 1]) for i, c in enumerate(names)]


def outcome(criterion: str, a_first: Preference, b_first: Preference) -> CriterionOutcome:
    """Combine the two orders (see the module docstring, step 3)."""
    failed = next((p.error for p in (a_first, b_first) if p.error is not None or p.better is None), None)
    if failed is not None or a_first.better is None or b_first.better is None:
        return CriterionOutcome(
            criterion=criterion,
            outcome=None,
            orders_agree=None,
            a_first=a_first,
            b_first=b_first,
            error=failed or "no answer",
        )
    agree = a_first.better == b_first.better
    result: Outcome = "draw"
    if agree and a_first.better == "A":
        result = "win"
    elif agree and a_first.better == "B":
        result = "loss"
    return CriterionOutcome(
        criterion=criterion, outcome=result, orders_agree=agree, a_first=a_first, b_first=b_first
    )
