"""Act annotators: fill in the dialogue acts of converted dialogues, recording who made them.

An annotator is a class registered with `@annotator("name")` with a nested `Params` model and an
`utterance_acts` method that sees one utterance and the (already annotated) utterances before
it. `annotate` walks a dialogue, asks for acts where an utterance has none (or everywhere with
`overwrite`) and marks each annotated utterance with `annotations["acts_source"] = <name>`, so
machine-made acts are never mistaken for a dataset's own labels.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from crsim.model import annotations as keys
from crsim.model.acts import DialogueAct
from crsim.model.dialogue import Dialogue, Utterance
from crsim.model.domain import Domain
from crsim.model.items import ItemCollection
from crsim.registry import Params as ComponentParams
from crsim.registry import Registry

annotator_registry: Registry[Any] = Registry("annotator")
annotator = annotator_registry.register

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
    """Base class: subclasses set `Params` and implement `utterance_acts`."""

    Params: ClassVar[type[ComponentParams]] = ComponentParams
    #: One line on how the annotator works.
    description: ClassVar[str] = ""

    def __init__(self, params: ComponentParams, domain: Domain) -> None:
        self.params = params
        self.domain = domain

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


def build_annotator(name: str, args: dict[str, Any], domain: Domain) -> ActAnnotator:
    """A registered annotator with validated arguments; unknown names or arguments raise ConfigError."""
    import crsim.data.augment  # noqa: F401  (registers the built-in annotators)

    cls = annotator_registry.get(name)
    params = annotator_registry.params(name, args, where="annotator")
    instance = cls(params, domain)
    if not isinstance(instance, ActAnnotator):
        raise TypeError(f"annotator {name!r} does not derive from ActAnnotator")
    return instance


def annotation_domain(items: Path | None = None) -> Domain:
    """The shipped movie domain, or the same slots over another item collection (`--items`)."""
    from crsim.data.movies import movie_domain, movie_domain_over

    if items is None:
        return movie_domain()
    return movie_domain_over(ItemCollection.from_jsonl(items))
