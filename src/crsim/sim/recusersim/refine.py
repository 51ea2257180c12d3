"""The refinement module: tools that bring a drafted reply in line with the user's linguistic pattern.

Each tool has a judge and a refiner and runs only its refiner when its judge finds the draft off
the user's pattern. `length`: a rule judge (words, the same count the analysis uses) and an LLM
refiner; `formality`: an LLM judge shown one example per level, and an LLM refiner; `richness`: an
LLM judge that lists the draft's key points (their number against the threshold), and an LLM
refiner. Tools run in the configured order (default richness, formality, length: the length
refiner is told to keep tone and content, so it goes last). An unreadable judge answer is recorded
with its raw text and that tool leaves the draft as it is; an empty rewrite keeps the draft too.
New tools register with `@refinement_tool("name")`. By default all judges first look at the draft
concurrently (`refine_in_order`); a tool whose text an earlier refiner changed is judged again.
"""

from __future__ import annotations

import asyncio
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from crsim.core.errors import ConfigError
from crsim.core.plugins import Registry
from crsim.llm.structured import Structured
from crsim.sim.recusersim.profile import Traits

_WORD = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*", re.UNICODE)


def count_words(text: str) -> int:
    """Words as `crsim analyze` counts them (runs of letters or digits, inner apostrophes and hyphens
    kept), so the length judge and the analysis agree; a test holds the two definitions together."""
    return len(_WORD.findall(text))


@dataclass(frozen=True)
class Thresholds:
    """Category bounds shared with the analysis defaults: short <= 20 words < medium <= 40 < long;
    low richness <= 2 key points < high."""

    short_max: int = 20
    medium_max: int = 40
    low_richness_max: int = 2

    def length(self, words: int) -> str:
        if words <= self.short_max:
            return "short"
        return "medium" if words <= self.medium_max else "long"

    def richness(self, points: int) -> str:
        return "low" if points <= self.low_richness_max else "high"


class Refining(Protocol):
    """What a tool may use: the user's traits, the thresholds, and the simulator's two kinds of call."""

    @property
    def traits(self) -> Traits: ...

    @property
    def thresholds(self) -> Thresholds: ...

    async def ask_json(
        self, kind: str, template: str, schema: type[BaseModel], **variables: Any
    ) -> Structured[Any]:
        """A JSON answer to a task prompt (with the dialogue's system message and conversation)."""
        ...

    async def ask_text(self, kind: str, template: str, **variables: Any) -> tuple[str, str]:
        """(cleaned text, raw answer) of a rewrite prompt."""
        ...


class Outcome(BaseModel):
    """What one tool did to the draft; recorded per turn in `refinement`."""

    tool: str
    target: str = Field(description="The user's level, e.g. 'short'.")
    found: str | None = Field(description="The judge's level; None when the judge's answer was unreadable.")
    measure: int | None = Field(None, description="Words (length) or key points (richness).")
    refined: bool = False
    rejudged: bool = Field(False, description="Judged again because an earlier tool changed the text.")
    error: str | None = None
    raw: str | None = None

    def record(self) -> dict[str, Any]:
        """The annotation: `found` always (None = unreadable judge), other empty fields left out."""
        return {
            k: v
            for k, v in self.model_dump().items()
            if (v is not None and v is not False) or k in ("found", "refined")
        }


class RefinementTool(ABC):
    """A judge (`judge`: where the text stands against the user's level) and a refiner (`refine`:
    a rewrite towards it), run by `apply` or by `refine_in_order`."""

    name: ClassVar[str]

    @abstractmethod
    async def judge(self, ctx: Refining, text: str) -> Outcome:
        """The judgement of `text` (`found` None when the judge's answer was unreadable)."""

    @abstractmethod
    async def refine(self, ctx: Refining, text: str, judged: Outcome) -> tuple[str, Outcome]:
        """The rewritten text (or `text` when the rewrite came back empty) and the updated outcome."""

    async def apply(self, ctx: Refining, draft: str) -> tuple[str, Outcome]:
        """Judge, and refine only if the judge found the draft off the user's level."""
        return await self.finish(ctx, draft, await self.judge(ctx, draft))

    async def finish(self, ctx: Refining, text: str, judged: Outcome) -> tuple[str, Outcome]:
        if judged.found is None or judged.found == judged.target:
            return text, judged
        return await self.refine(ctx, text, judged)


async def refine_in_order(
    ctx: Refining, tools: list[RefinementTool], draft: str, *, concurrent_judges: bool = True
) -> tuple[str, list[Outcome]]:
    """The tools in order, each on the text the previous ones left. With `concurrent_judges`, every
    judge first looks at the draft at the same time; a tool whose text was changed by an earlier
    refiner is judged again (`rejudged`), so each decision still rests on the current text, while
    the common case (no refiner fires before the last judge) waits for one judge instead of all."""
    early: list[Outcome | None] = [None] * len(tools)
    if concurrent_judges and len(tools) > 1:
        early = list(await asyncio.gather(*(tool.judge(ctx, draft) for tool in tools)))
    text, outcomes = draft, []
    for tool, judged in zip(tools, early, strict=True):
        if judged is None or text != draft:
            again = judged is not None
            judged = await tool.judge(ctx, text)
            judged.rejudged = again
        text, outcome = await tool.finish(ctx, text, judged)
        outcomes.append(outcome)
    return text, outcomes


#: The refinement tools by name (entry points `crsim.recusersim_tool`, each naming a tool class).
tool_catalogue: Registry[type[RefinementTool]] = Registry("recusersim_tool")


def refinement_tool(name: str) -> Callable[[type[RefinementTool]], type[RefinementTool]]:
    """Name a tool class; one no entry point declares is registered in code (a test, a notebook)."""

    def register(cls: type[RefinementTool]) -> type[RefinementTool]:
        cls.name = name
        if name not in tool_catalogue.names():
            tool_catalogue.add(name, cls)
        return cls

    return register


def tool_names() -> list[str]:
    return tool_catalogue.names()


def get_tool(name: str, where: str = "") -> RefinementTool:
    """A new instance of the tool `name`; a ConfigError naming `where` and the known names otherwise."""
    try:
        cls = tool_catalogue.get(name)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}" if where else str(exc)) from None
    return cls()


async def _rewrite(
    ctx: Refining, tool: str, draft: str, outcome: Outcome, template: str, **variables: Any
) -> tuple[str, Outcome]:
    text, raw = await ctx.ask_text(f"refine_{tool}", template, draft=draft, **variables)
    if not text:
        outcome.error, outcome.raw = "empty rewrite; the draft was kept", raw
        return draft, outcome
    outcome.refined = True
    return text, outcome


@refinement_tool("length")
class LengthTool(RefinementTool):
    """Rule judge (word count against the thresholds), LLM refiner."""

    async def judge(self, ctx: Refining, text: str) -> Outcome:
        words = count_words(text)
        found = ctx.thresholds.length(words)
        return Outcome(tool="length", target=ctx.traits.sentence_length, found=found, measure=words)

    async def refine(self, ctx: Refining, text: str, judged: Outcome) -> tuple[str, Outcome]:
        limits = ctx.thresholds
        goal = {
            "short": f"at most {limits.short_max} words",
            "medium": f"between {limits.short_max + 1} and {limits.medium_max} words",
            "long": f"more than {limits.medium_max} words (about {limits.medium_max + 15})",
        }[judged.target]
        return await _rewrite(
            ctx, "length", text, judged, "refine_length.j2", words=judged.measure, target=goal
        )


class FormalityAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(max_length=160)
    level: Literal["formal", "neutral", "informal"]


@refinement_tool("formality")
class FormalityTool(RefinementTool):
    """LLM judge with one example per level, LLM refiner."""

    async def judge(self, ctx: Refining, text: str) -> Outcome:
        target = ctx.traits.formality
        answer = await ctx.ask_json("judge_formality", "judge_formality.j2", FormalityAnswer, draft=text)
        if answer.value is None:
            return Outcome(tool="formality", target=target, found=None, error=answer.error, raw=answer.raw)
        return Outcome(tool="formality", target=target, found=answer.value.level)

    async def refine(self, ctx: Refining, text: str, judged: Outcome) -> tuple[str, Outcome]:
        return await _rewrite(
            ctx, "formality", text, judged, "refine_formality.j2", found=judged.found, target=judged.target
        )


class KeyPoints(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key_points: list[str] = Field(max_length=10)


@refinement_tool("richness")
class RichnessTool(RefinementTool):
    """LLM judge listing the key points (their number against the threshold), LLM refiner."""

    async def judge(self, ctx: Refining, text: str) -> Outcome:
        target = ctx.traits.information_richness
        answer = await ctx.ask_json("judge_richness", "count_points.j2", KeyPoints, draft=text)
        if answer.value is None:
            return Outcome(tool="richness", target=target, found=None, error=answer.error, raw=answer.raw)
        count = len([p for p in answer.value.key_points if p.strip()])
        return Outcome(tool="richness", target=target, found=ctx.thresholds.richness(count), measure=count)

    async def refine(self, ctx: Refining, text: str, judged: Outcome) -> tuple[str, Outcome]:
        return await _rewrite(
            ctx,
            "richness",
            text,
            judged,
            "refine_richness.j2",
            count=judged.measure,
            target=judged.target,
            low_max=ctx.thresholds.low_richness_max,
        )


#: Default order: content first, then tone, then length (whose refiner keeps content and tone).
DEFAULT_TOOLS = ("richness", "formality", "length")
