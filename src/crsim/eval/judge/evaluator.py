"""`judge`: the rubric judge as an `Evaluator`, so `crsim evaluate` can score dialogues with it.

Registered as metric `judge`; its label is the rubric's name, and records are labelled
`<rubric>/<aspect>` (e.g. `quality5/fluency`). Dialogue-level aspects give one value per dialogue,
turn-level aspects one per CRS turn (`Value.turn`). A failed call or an unreadable answer gives
value None with the error and the raw answer; a dialogue the rubric cannot judge (no utterances,
or no user preferences for a rubric that needs them) raises `NotApplicable`.

The judge is given the run's catalogue when the context has a domain, or when it evaluates a run
folder whose manifest names one; it names the recommended items in the facts shown to the judge
and checks justifications for titles never recommended (`RubricJudge.items`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar

from pydantic import AfterValidator, Field, model_validator

from crsim.core.components import BuildContext
from crsim.core.errors import ConfigError, DataError
from crsim.core.plugins import Params as BaseParams
from crsim.eval.judge.judge import DEFAULT_PROMPT, PROMPTS, RubricJudge
from crsim.eval.judge.rubric import load_rubric
from crsim.eval.metrics.base import Evaluator, Value, metric
from crsim.llm.client import LLMHub
from crsim.llm.config import LLMSettings
from crsim.llm.prompts import template_check
from crsim.model.dialogue import Dialogue
from crsim.model.items import ItemCollection
from crsim.model.run_folder.manifest import load_manifest


def _rubric_check(ref: str) -> str:
    try:
        load_rubric(ref)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    return ref


def _catalogue(ctx: BuildContext | None) -> ItemCollection | None:
    """The run's items: the context's domain, else the domain a run folder's manifest names."""
    if ctx is None:
        return None
    if ctx.domain is not None:
        return ctx.domain.items
    if ctx.run_folder is None or not Path(ctx.run_folder).is_dir():
        return None
    from crsim.domains import domain_of

    try:
        return domain_of(load_manifest(Path(ctx.run_folder))).items
    except (ConfigError, DataError):  # no readable manifest or domain: the judge works without items
        return None


@metric("judge")
class JudgeEvaluator(Evaluator):
    """An LLM judge scoring every aspect of a rubric (see `crsim.eval.judge.judge`)."""

    direction = "higher"

    needs_llm: ClassVar[bool] = True

    class Params(BaseParams):
        rubric: Annotated[str, AfterValidator(_rubric_check)] = Field(
            "quality5",
            description="A shipped rubric (quality5, pepper3, recusersim3, crsarena7) or a rubric YAML file.",
        )
        samples: int = Field(
            1, ge=1, le=50, description="Answers per question (distinct seeds); the value is their mean."
        )
        role: str = Field("judge", min_length=1, description="Model role whose LLM judges.")
        temperature: float | None = Field(
            None, ge=0.0, le=2.0, description="Sampling temperature; None = the role's default."
        )
        max_tokens: int | None = Field(
            None, ge=16, description="Token cap per answer; None = the role's default."
        )
        aspects: list[str] | None = Field(
            None, min_length=1, description="Judge only these aspects of the rubric (default: all)."
        )
        max_chars: int = Field(
            12000,
            ge=200,
            description="Most transcript characters shown; whole utterances are left out beyond it.",
        )
        max_justification_chars: int | None = Field(
            None,
            ge=20,
            description="Cap on the justification's length in the answer schema (helps small local models "
            "finish their JSON; some hosted APIs reject length limits in strict schemas).",
        )
        prompt: Annotated[str, template_check(PROMPTS)] = Field(
            DEFAULT_PROMPT,
            description="Template shipped in crsim.eval.judge.prompts, or a path to a jinja2 file rendering "
            "the parts 'system' and 'task'.",
        )

        @model_validator(mode="after")
        def _known_aspects(self) -> JudgeEvaluator.Params:
            if self.aspects is not None:
                names = load_rubric(self.rubric).aspect_names
                unknown = [a for a in self.aspects if a not in names]
                if unknown:
                    raise ValueError(
                        f"aspects: {unknown[0]!r} is not an aspect of rubric {self.rubric!r} "
                        f"(expected one of: {', '.join(names)})"
                    )
            return self

    params: Params

    @classmethod
    def llm_roles(cls, params: BaseParams) -> list[str]:
        assert isinstance(params, cls.Params)
        return [params.role]

    def __init__(self, params: Params | None = None, ctx: BuildContext | None = None) -> None:
        """Calls `ctx.llms`; without one, the local model with default settings and no response cache."""
        super().__init__(params, ctx)
        p = self.params
        hub = ctx.llms if ctx is not None and ctx.llms is not None else LLMHub(LLMSettings())
        self.rubric = load_rubric(p.rubric)
        self.judge = RubricJudge(
            self.rubric,
            hub.role(p.role),
            samples=p.samples,
            temperature=p.temperature,
            max_tokens=p.max_tokens,
            max_chars=p.max_chars,
            max_justification_chars=p.max_justification_chars,
            aspects=p.aspects,
            prompt=p.prompt,
            items=_catalogue(ctx),
        )

    def default_label(self) -> str:
        return self.rubric.name

    async def evaluate(self, dialogue: Dialogue) -> list[Value]:
        """One value per aspect (per CRS turn for turn-level ones); see the module docstring."""
        return [
            Value(
                aspect=j.aspect,
                value=j.score.value,
                turn=j.turn,
                explanation=j.score.explanation,
                error=j.score.error,
                raw=j.score.raw,
            )
            for j in await self.judge.judge(dialogue)
        ]
