"""Information needs read from a whole dialogue by a language model (the `annotator` role).

The model sees the whole conversation as a transcript and answers with JSON: constraints as
(slot, value) pairs, requested slots, and the titles of accepted items. The answer is decoded
under a JSON schema whose slot names are enums of the domain's informable slots (constraints)
and of the slots a user may ask about (requests), validated by pydantic, and repaired once
(`crsim.llm.structured.generate_json`). Titles are linked to the domain's items with the item
linker (exact, else fuzzy); titles that link to nothing are kept in the dialogue's metadata for
inspection, never guessed. An answer that cannot be read gives no need: the dialogue records
`metadata["information_need_error"]` with the raw answer instead.

The extractor is the LLM counterpart of `need.NeedExtractor` (which reads the user's acts):
same `annotate` contract, `metadata["information_need_source"] = "llm"`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, cast

import jinja2
from pydantic import BaseModel, Field, create_model

from crsim.core.components import BuildContext
from crsim.core.errors import ConfigError
from crsim.core.plugins import Params as ComponentParams
from crsim.core.seeding import derive_seed
from crsim.eval.annotators.evaluate import value_key
from crsim.eval.annotators.llm import SLOT_MEANINGS
from crsim.eval.annotators.need import NeedReport
from crsim.eval.annotators.need_eval import NeedEval, gold_need, strip_acts, units
from crsim.llm.client import LLM, LLMHub
from crsim.llm.config import LLMSettings
from crsim.llm.errors import LLMOutputError
from crsim.llm.prompts import load_template, render, template_check
from crsim.llm.structured import generate_json
from crsim.llm.types import GenerationConfig, Message, system, user
from crsim.model import annotations as keys
from crsim.model.dialogue import Dialogue, Role
from crsim.model.domain import Domain
from crsim.model.user import InformationNeed

#: Metadata key of a dialogue whose need could not be read: error, raw answer, extractor.
NEED_ERROR = keys.NEED_ERROR.name
#: Metadata key listing target titles the model named that match no item of the domain.
UNLINKED_TITLES = keys.UNLINKED_TITLES.name
#: The extraction method this module implements (the value of `information_need_source`).
METHOD = "llm"
PROMPTS = "crsim.eval.annotators.prompts"
USER_LABEL, CRS_LABEL = "User", "Recommender"


class ConstraintAnswer(BaseModel):
    """One constraint as the model states it."""

    slot: str
    value: str = Field(min_length=1, max_length=100)


class NeedAnswer(BaseModel):
    """The model's answer; `need_schema` narrows the slot names to a domain's."""

    constraints: list[ConstraintAnswer]
    requests: list[str]
    targets: list[Annotated[str, Field(min_length=1, max_length=200)]]


def _choice(names: Iterable[str]) -> Any:
    """`Literal[...]` of the given names (an enum in the JSON schema)."""
    return cast(Any, Literal)[tuple(dict.fromkeys(names))]


def need_schema(domain: Domain, *, max_constraints: int, max_targets: int) -> type[NeedAnswer]:
    """The answer schema of `domain`: constraint slots from its informable slots, request slots from
    its requestable and informable ones; list lengths capped so a small model cannot run on."""
    if not domain.informable_slots:
        raise ConfigError(f"domain {domain.name!r} has no informable slots to extract constraints for")
    constraint: Any = create_model(
        "Constraint", __base__=ConstraintAnswer, slot=(_choice(domain.informable_slots), ...)
    )
    requestable = list(dict.fromkeys([*domain.requestable_slots, *domain.informable_slots]))
    title: Any = Annotated[str, Field(min_length=1, max_length=200)]
    request: Any = _choice(requestable)
    schema = create_model(
        "InformationNeedAnswer",
        __base__=NeedAnswer,
        constraints=(list[constraint], Field(max_length=max_constraints)),
        requests=(list[request], Field(max_length=len(requestable))),
        targets=(list[title], Field(max_length=max_targets)),
    )
    return schema


@dataclass(frozen=True)
class NeedResult:
    """What one extraction gave: the need (None when unreadable), the raw answer, the error, and
    the titles that linked to no item."""

    need: InformationNeed | None
    raw: str
    error: str | None = None
    unlinked: tuple[str, ...] = ()


@dataclass
class LLMNeedReport(NeedReport):
    """Counts of one pass; `failed`: dialogues whose answer could not be read (no need written)."""

    failed: int = 0


class LLMNeedExtractor:
    """Extracts a dialogue's information need with one LLM call over the whole conversation."""

    name: ClassVar[str] = METHOD
    needs_llm: ClassVar[bool] = True

    class Params(ComponentParams):
        role: str = Field("annotator", min_length=1, description="Model role whose LLM reads the dialogues.")
        prompt: Annotated[str, template_check(PROMPTS)] = Field(
            "need.j2",
            description="Template shipped in crsim.eval.annotators.prompts, or a path to a jinja2 file "
            "rendering the parts 'system' and 'dialogue'.",
        )
        temperature: float = Field(0.0, ge=0.0, le=2.0, description="Sampling temperature.")
        max_tokens: int = Field(300, ge=16, description="Token cap per answer.")
        max_constraints: int = Field(8, ge=1, le=50, description="Most constraints the answer may list.")
        max_targets: int = Field(5, ge=1, le=50, description="Most target titles the answer may list.")

    @classmethod
    def llm_roles(cls, params: Params) -> list[str]:
        return [params.role]

    def __init__(self, params: Params | None, ctx: BuildContext) -> None:
        """Built like a component, over `ctx.domain`; `params` default: the defaults above; the model
        is `ctx.llms`, default the local model with no response cache."""
        self.params = params if params is not None else self.Params()
        self.domain = domain = ctx.require_domain("the llm need extractor")
        llms = ctx.llms if ctx.llms is not None else LLMHub(LLMSettings())
        self.llm: LLM = llms.role(self.params.role)
        self.template: jinja2.Template = load_template(PROMPTS, self.params.prompt)
        self.schema = need_schema(
            domain, max_constraints=self.params.max_constraints, max_targets=self.params.max_targets
        )
        self.failed = 0  # dialogues whose answer could not be read

    def _render(self, part: str, **variables: Any) -> str:
        text = render(self.template, part=part, user_label=USER_LABEL, crs_label=CRS_LABEL, **variables)
        if not text:
            raise ConfigError(f"prompt template {self.params.prompt!r} renders nothing for part {part!r}")
        return text

    def messages(self, dialogue: Dialogue) -> list[Message]:
        """System message (task and slots) and the transcript of the whole dialogue."""
        requestable = dict.fromkeys([*self.domain.requestable_slots, *self.domain.informable_slots])
        lines = [
            f"{USER_LABEL if u.role == Role.USER else CRS_LABEL}: {' '.join(u.text.split())}"
            for u in dialogue.utterances
            if u.text.strip()
        ]
        return [
            system(
                self._render(
                    "system",
                    domain=self.domain.name,
                    informable=[(s, SLOT_MEANINGS.get(s, "")) for s in self.domain.informable_slots],
                    requestable=[(s, SLOT_MEANINGS.get(s, "")) for s in requestable],
                )
            ),
            user(self._render("dialogue", transcript="\n".join(lines))),
        ]

    async def read(self, dialogue: Dialogue) -> NeedResult:
        """The model's need for `dialogue`, or why there is none."""
        config = GenerationConfig(
            temperature=self.params.temperature,
            max_tokens=self.params.max_tokens,
            seed=derive_seed("need", dialogue.id) % 2**31,
        )
        answer = await generate_json(self.llm, self.messages(dialogue), self.schema, config)
        if not answer.ok or answer.value is None:
            return NeedResult(None, answer.raw, answer.error or "no value")
        need, unlinked = answer_need(answer.value, self.domain)
        return NeedResult(need, answer.raw, unlinked=tuple(unlinked))

    async def extract(self, dialogue: Dialogue) -> InformationNeed:
        """The need of `dialogue`; an unreadable answer raises `LLMOutputError` with the raw text."""
        result = await self.read(dialogue)
        if result.need is None:
            raise LLMOutputError(f"dialogue {dialogue.id!r}: {result.error}", result.raw)
        return result.need

    async def annotate(
        self, dialogue: Dialogue, *, overwrite: bool = False, report: LLMNeedReport | None = None
    ) -> Dialogue:
        """A copy of `dialogue` with its extracted need (an existing one kept unless `overwrite`);
        an unreadable answer leaves the need as it was and records `information_need_error`."""
        report = report if report is not None else LLMNeedReport()
        report.dialogues += 1
        if dialogue.information_need is not None and not overwrite:
            report.kept += 1
            return dialogue
        result = await self.read(dialogue)
        metadata = {k: v for k, v in dialogue.metadata.items() if k not in (NEED_ERROR, UNLINKED_TITLES)}
        if result.need is None:
            self.failed += 1
            report.failed += 1
            keys.NEED_ERROR.put(
                metadata, {"extractor": METHOD, "error": result.error or "", "raw": result.raw}
            )
            return dialogue.model_copy(update={"metadata": metadata})
        report.extracted += 1
        keys.NEED_SOURCE.put(metadata, METHOD)
        if result.unlinked:
            keys.UNLINKED_TITLES.put(metadata, list(result.unlinked))
        return dialogue.model_copy(update={"information_need": result.need, "metadata": metadata})

    async def annotate_all(
        self, dialogues: Iterable[Dialogue], *, overwrite: bool = False, report: LLMNeedReport | None = None
    ) -> AsyncIterator[Dialogue]:
        """Annotate a stream of dialogues one by one."""
        for dialogue in dialogues:
            yield await self.annotate(dialogue, overwrite=overwrite, report=report)


def answer_need(answer: NeedAnswer, domain: Domain) -> tuple[InformationNeed, list[str]]:
    """The need an answer states, and the target titles that link to no item of `domain`.

    Equivalent constraint values of one slot (`evaluate.value_key`) are kept once; several values
    make a list. Requests keep their first mention. Titles go through `ItemLinker.match_title`.
    """
    constraints: dict[str, list[str]] = {}
    for pair in answer.constraints:
        values = constraints.setdefault(pair.slot, [])
        if all(value_key(v) != value_key(pair.value) for v in values):
            values.append(pair.value.strip())
    targets: list[str] = []
    unlinked: list[str] = []
    for title in answer.targets:
        match = domain.items.linker.match_title(title)
        if match is None:
            unlinked.append(title)
        elif match.item_id not in targets:
            targets.append(match.item_id)
    need = InformationNeed(
        constraints={s: vs[0] if len(vs) == 1 else vs for s, vs in constraints.items()},
        requests=list(dict.fromkeys(answer.requests)),
        targets=targets,
    )
    return need, unlinked


class LLMNeedEval(NeedEval):
    """`NeedEval` plus the dialogues whose answer could not be read (scored as an empty need)."""

    failed: int = 0

    def summary(self) -> dict[str, Any]:
        return {**super().summary(), "failed": self.failed}


async def evaluate_llm_needs(extractor: LLMNeedExtractor, dialogues: Iterable[Dialogue]) -> LLMNeedEval:
    """As `need_eval.evaluate_needs`, from the text: an unreadable answer counts as predicting nothing
    (every gold unit missed) and is counted in `failed`, so failures lower recall instead of vanishing."""
    result = LLMNeedEval(annotator=extractor.name, from_text=True)
    for dialogue in dialogues:
        gold = gold_need(dialogue, extractor.domain)
        if gold is None:
            continue
        read = await extractor.read(strip_acts(dialogue))
        if read.need is None:
            result.failed += 1
            extractor.failed += 1  # the extractor's running count, as when it annotates (progress reads it)
        predicted = read.need if read.need is not None else InformationNeed()
        result.dialogues += 1
        for part in gold[1]:
            result.scored[part] += 1
            result.scores[part].add(units(predicted, part), units(gold[0], part))
    return result
