"""Act annotators: fill in the dialogue acts of converted dialogues, recording who made them.

An annotator is a class registered with `@annotator("name")` with a nested `Params` model and an
`utterance_acts` method that sees one utterance and the (already annotated) utterances before
it. `annotate` walks a dialogue, asks for acts where an utterance has none (or everywhere with
`overwrite`) and marks each annotated utterance with `annotations["acts_source"] = <name>`, so
machine-made acts are never mistaken for a dataset's own labels.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from crsim.core.components import BuildContext, build
from crsim.core.errors import ConfigError
from crsim.core.plugins import ComponentSpec, Registry
from crsim.core.plugins import Params as ComponentParams
from crsim.llm.client import LLMHub
from crsim.model import annotations as keys
from crsim.model.acts import DialogueAct
from crsim.model.dialogue import Dialogue, Utterance
from crsim.model.domain import Domain
from crsim.model.items import ItemCollection

#: Annotation key naming the annotator that produced an utterance's acts.
#: Annotation key of the annotator that wrote the acts (declared in model/annotations.py).
ACTS_SOURCE = keys.ACTS_SOURCE.name


@dataclass
class AnnotationReport:
    """Counts of one annotation pass."""

    dialogues: int = 0
    annotated: int = 0
    kept: int = 0


class ActAnnotator:
    """Base class: subclasses set `Params` and implement `utterance_acts`.

    Built as `Class(params, ctx)` like every component (`crsim.core.components`), over `ctx.domain`;
    one that calls a language model sets `needs_llm` and names its roles in `llm_roles(params)`.
    """

    Params: ClassVar[type[ComponentParams]] = ComponentParams
    #: One line on how the annotator works.
    description: ClassVar[str] = ""
    needs_llm: ClassVar[bool] = False

    def __init__(self, params: ComponentParams, ctx: BuildContext) -> None:
        self.params = params
        self.domain = ctx.require_domain(f"annotator {type(self).__name__}")

    @classmethod
    def llm_roles(cls, params: Any) -> list[str]:
        """The model roles the annotator calls (none unless `needs_llm`)."""
        return []

    @property
    def name(self) -> str:
        """The registry name, stored in `annotations["acts_source"]`."""
        return str(getattr(type(self), "registry_name", type(self).__name__))

    async def utterance_acts(self, utterance: Utterance, history: Sequence[Utterance]) -> list[DialogueAct]:
        """Acts of `utterance` given the utterances before it (whose acts may be annotated already)."""
        raise NotImplementedError

    async def annotate(
        self, dialogue: Dialogue, *, overwrite: bool = False, report: AnnotationReport | None = None
    ) -> Dialogue:
        """A copy of `dialogue` with acts for every utterance that has none (all with `overwrite`)."""
        report = report if report is not None else AnnotationReport()
        report.dialogues += 1
        done: list[Utterance] = []
        for utterance in dialogue.utterances:
            if utterance.acts and not overwrite:
                report.kept += 1
                done.append(utterance)
                continue
            acts = await self.utterance_acts(utterance, done)
            annotations = {**utterance.annotations, **keys.ACTS_SOURCE.entry(self.name)}
            done.append(utterance.model_copy(update={"acts": acts, "annotations": annotations}))
            report.annotated += 1
        return dialogue.model_copy(update={"utterances": done})

    async def annotate_all(
        self,
        dialogues: Iterable[Dialogue],
        *,
        overwrite: bool = False,
        report: AnnotationReport | None = None,
    ) -> AsyncIterator[Dialogue]:
        """Annotate a stream of dialogues one by one (nothing is held in memory)."""
        for dialogue in dialogues:
            yield await self.annotate(dialogue, overwrite=overwrite, report=report)


#: The act-annotator registry (entry points `crsim.annotator`).
annotator_registry: Registry[type[ActAnnotator]] = Registry("annotator")

_AnnotatorClass = TypeVar("_AnnotatorClass", bound=type[ActAnnotator])


def annotator(name: str) -> Callable[[_AnnotatorClass], _AnnotatorClass]:
    """Register an act annotator class under `name` (`@annotator("rules")`)."""
    return annotator_registry.register(name)  # type: ignore[return-value]


def build_annotator(
    name: str, args: dict[str, Any], domain: Domain, llms: LLMHub | None = None, *, where: str = "annotator"
) -> ActAnnotator:
    """A registered annotator built as `Class(params, ctx)` over `domain`; an annotator that calls a
    language model needs `llms`. Unknown names, arguments or a wrong signature raise ConfigError."""
    instance = build(
        annotator_registry, ComponentSpec(name=name, args=args), BuildContext(domain, llms), where
    )
    if not isinstance(instance, ActAnnotator):
        raise ConfigError(f"{where}: annotator {name!r} does not derive from ActAnnotator")
    return instance


def annotation_domain(items: Path | None = None, domain: str = "movies") -> Domain:
    """The domain `domain` names (shipped, installed or a file; `crsim.domains.domain_named`), or
    its slots and vocabulary over another item collection (`--items`)."""
    from crsim.domains import domain_named

    chosen = domain_named(domain)
    if items is None:
        return chosen
    collection = ItemCollection.from_jsonl(items)
    return dataclasses.replace(chosen, name=collection.name, items=collection)
