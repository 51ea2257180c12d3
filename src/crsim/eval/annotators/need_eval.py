"""Measure need extraction against gold needs: constraint, request and target P/R/F1, micro over dialogues.

No published dataset labels whole information needs, so gold comes from what can be trusted:

- a dialogue whose `information_need` was not extracted (no `information_need_source`), e.g. a
  simulated dialogue of `crsim run`, which records the simulator's true need: constraints and
  requests are scored (its targets are hidden goals the CRS may never reach, so they are not);
- a dialogue with accepted-recommendation labels (IARD original: metadata `accepted_recommendation`
  and the labelled seeker utterances): targets are scored, the gold being the items each labelled
  utterance accepts (`need.answered_items`; a dialogue without accepted recommendations has none).

Units: (slot, comparable value) pairs for constraints, slot names for requests, item ids for
targets. With `from_text` every act is stripped first, so the need is extracted from the text
(and the dataset's item links) alone; without it the dialogue's own acts are used.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field

from crsim.eval.annotators.evaluate import Scores, value_key
from crsim.eval.annotators.need import NEED_SOURCE, NeedExtractor, answered_items
from crsim.model import annotations as keys
from crsim.model.dialogue import Dialogue, Role
from crsim.model.domain import Domain
from crsim.model.user import InformationNeed

PARTS = ("constraints", "requests", "targets")


class NeedEval(BaseModel):
    """Micro-averaged scores per part of the need, with the number of dialogues each rests on."""

    annotator: str
    from_text: bool
    dialogues: int = Field(0, description="Dialogues with some gold part, the ones scored.")
    scored: dict[str, int] = Field(default_factory=lambda: dict.fromkeys(PARTS, 0))
    scores: dict[str, Scores] = Field(default_factory=lambda: {p: Scores() for p in PARTS})

    def summary(self) -> dict[str, Any]:
        """JSON-ready figures: per part, the dialogues scored and the rounded P/R/F1 with counts."""
        return {
            "annotator": self.annotator,
            "from_text": self.from_text,
            "dialogues": self.dialogues,
            "parts": {
                part: {"dialogues": self.scored[part], **self.scores[part].row()}
                for part in PARTS
                if self.scored[part]
            },
        }


def gold_need(dialogue: Dialogue, domain: Domain) -> tuple[InformationNeed, frozenset[str]] | None:
    """The gold need of a dialogue and which of its parts are trustworthy, or None (see module docstring)."""
    need = dialogue.information_need
    if need is not None and NEED_SOURCE not in dialogue.metadata:
        return need, frozenset({"constraints", "requests"})
    if keys.metadata(keys.ACCEPTED_RECOMMENDATION, dialogue) is None:
        return None
    targets: list[str] = []
    for position, utterance in enumerate(dialogue.utterances):
        labels = keys.annotation(keys.DATASET_LABELS, dialogue, position) or {}
        if utterance.role == Role.USER and labels.get(keys.LABEL_ACCEPTED):
            accepted = answered_items(utterance, dialogue.utterances[:position], domain)
            targets += [i for i in accepted if i not in targets]
    return InformationNeed(targets=targets), frozenset({"targets"})


def units(need: InformationNeed, part: str) -> set[tuple[str, ...]]:
    """The comparable units of one part of a need."""
    if part == "constraints":
        return {(slot, value_key(v)) for slot in need.constraints for v in need.constraint_values(slot)}
    if part == "requests":
        return {(slot,) for slot in need.requests}
    return {(item,) for item in need.targets}


def strip_acts(dialogue: Dialogue) -> Dialogue:
    """The dialogue without any act or need: only text, items and dataset annotations remain."""
    blank = [u.model_copy(update={"acts": []}) for u in dialogue.utterances]
    return dialogue.model_copy(update={"utterances": blank, "information_need": None})


async def evaluate_needs(
    extractor: NeedExtractor, dialogues: Iterable[Dialogue], *, from_text: bool = True
) -> NeedEval:
    """Extract the need of every dialogue with a gold need and compare part by part."""
    result = NeedEval(annotator=extractor.annotator.name, from_text=from_text)
    for dialogue in dialogues:
        gold = gold_need(dialogue, extractor.domain)
        if gold is None:
            continue
        source = strip_acts(dialogue) if from_text else dialogue.model_copy(update={"information_need": None})
        predicted = await extractor.extract(source)
        result.dialogues += 1
        for part in gold[1]:
            result.scored[part] += 1
            result.scores[part].add(units(predicted, part), units(gold[0], part))
    return result
