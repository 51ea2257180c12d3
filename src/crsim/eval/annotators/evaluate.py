"""Measure an act annotator against gold dialogue acts: intent and slot-value precision, recall, F1.

Scoring is per utterance, over utterances that carry gold acts (unannotated ones say nothing
about the annotator). Intents are compared as sets per utterance. A slot-value pair is an
(intent, slot, value) triple: it is correct when the same utterance has an act of the same intent
with that slot and an equivalent value. Values are compared case-, accent- and
punctuation-insensitively, ignoring a trailing "(year)", a leading article and a plural "s", so
"thrillers" matches "thriller" and "It (2017)" matches "It"; a slot asked about (no value) matches
only a slot asked about. `item` slots (ids) are left out: items are compared through their titles.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from collections.abc import Set as AbstractSet
from typing import Any

from pydantic import BaseModel, Field

from crsim.core.errors import DataError
from crsim.datasets.intents import map_slot
from crsim.eval.annotators.base import ActAnnotator
from crsim.model.acts import DialogueAct
from crsim.model.dialogue import Dialogue, Utterance
from crsim.model.text import normalize, split_title_year, unarticle

_IGNORED_SLOTS = frozenset({"item"})
_ARTICLES = ("the ", "a ", "an ")


class Scores(BaseModel):
    """Counts and the derived precision, recall and F1 (0 when undefined)."""

    correct: int = 0
    predicted: int = 0
    gold: int = 0

    @property
    def precision(self) -> float:
        return self.correct / self.predicted if self.predicted else 0.0

    @property
    def recall(self) -> float:
        return self.correct / self.gold if self.gold else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def add(self, predicted: AbstractSet[Hashable], gold: AbstractSet[Hashable]) -> None:
        self.correct += len(predicted & gold)
        self.predicted += len(predicted)
        self.gold += len(gold)

    def row(self) -> dict[str, float | int]:
        return {
            "precision": round(self.precision, 3),
            "recall": round(self.recall, 3),
            "f1": round(self.f1, 3),
            "correct": self.correct,
            "predicted": self.predicted,
            "gold": self.gold,
        }


class IntentScores(BaseModel):
    intent: Scores = Field(default_factory=Scores)
    slot_value: Scores = Field(default_factory=Scores)


class AnnotationEval(BaseModel):
    """Micro-averaged scores, per role and per intent, with the sizes they rest on."""

    annotator: str
    dialogues: int = 0
    utterances: int = Field(0, description="Utterances with gold acts, the ones scored.")
    micro: IntentScores = Field(default_factory=IntentScores)
    by_role: dict[str, IntentScores] = Field(default_factory=dict)
    per_intent: dict[str, IntentScores] = Field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """JSON-ready figures (rounded), per intent sorted by gold frequency."""

        def pair(s: IntentScores) -> dict[str, Any]:
            return {"intent": s.intent.row(), "slot_value": s.slot_value.row()}

        ordered = sorted(self.per_intent.items(), key=lambda kv: (-kv[1].intent.gold, kv[0]))
        return {
            "annotator": self.annotator,
            "dialogues": self.dialogues,
            "utterances": self.utterances,
            "micro": pair(self.micro),
            "by_role": {role: pair(s) for role, s in sorted(self.by_role.items())},
            "per_intent": {intent: pair(s) for intent, s in ordered},
        }


def slot_key(slot: str) -> str:
    """crsim's name for a slot, through the datasets' slot table (`KEYWORDS` -> `keyword`)."""
    return map_slot(slot.strip())


def value_key(value: str) -> str:
    """The comparable form of a slot value (see the module docstring)."""
    name, _ = split_title_year(value)
    text = normalize(unarticle(name))
    for article in _ARTICLES:
        if text.startswith(article) and len(text) > len(article):
            text = text[len(article) :]
            break
    return " ".join(_singular(w) for w in text.split())


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _triples(acts: list[DialogueAct]) -> set[tuple[str, ...]]:
    found: set[tuple[str, ...]] = set()
    for act in acts:
        for slot, value in act.slots:
            key = slot_key(slot)
            if key not in _IGNORED_SLOTS:
                # "?" marks a slot asked about; value_key never yields it for a given value
                found.add((act.intent, key, "?" if value is None else value_key(value) or ""))
    return found


def score_utterance(result: AnnotationEval, gold: Utterance, predicted: list[DialogueAct]) -> None:
    """Add one utterance's comparison to `result` (micro, its role, and each intent involved)."""
    result.utterances += 1
    role = result.by_role.setdefault(gold.role.value, IntentScores())
    gold_intents = {(a.intent,) for a in gold.acts}
    predicted_intents = {(a.intent,) for a in predicted}
    gold_slots, predicted_slots = _triples(gold.acts), _triples(predicted)
    for scores in (result.micro, role):
        scores.intent.add(predicted_intents, gold_intents)
        scores.slot_value.add(predicted_slots, gold_slots)
    for (intent,) in gold_intents | predicted_intents:
        own = result.per_intent.setdefault(intent, IntentScores())
        own.intent.add(predicted_intents & {(intent,)}, gold_intents & {(intent,)})
        own.slot_value.add(
            {t for t in predicted_slots if t[0] == intent}, {t for t in gold_slots if t[0] == intent}
        )


async def evaluate_annotator(annotator: ActAnnotator, gold: Iterable[Dialogue]) -> AnnotationEval:
    """Re-annotate every gold dialogue from scratch and compare with its gold acts."""
    result = AnnotationEval(annotator=annotator.name)
    for dialogue in gold:
        blank = [u.model_copy(update={"acts": []}) for u in dialogue.utterances]
        predicted = await annotator.annotate(
            dialogue.model_copy(update={"utterances": blank}), overwrite=True
        )
        result.dialogues += 1
        for gold_utterance, predicted_utterance in zip(
            dialogue.utterances, predicted.utterances, strict=True
        ):
            if gold_utterance.acts:
                score_utterance(result, gold_utterance, predicted_utterance.acts)
    if result.utterances == 0:
        raise DataError("no utterance of the gold file carries dialogue acts; nothing to compare against")
    return result
