"""Descriptive statistics of a dialogues file: sizes, words and acts per utterance, items mentioned.

Computed in one streaming pass, so a converted dataset of any size can be described. Words are
whitespace-separated tokens of the utterance text; an item counts as mentioned when it is in an
utterance's `recommended_items` or its `mentioned_items` (format 1.2; in files converted before it,
`annotations["mentioned_items"]`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.io import iter_dialogues
from crsim.model.mentions import named_items


class RoleStats(BaseModel):
    """Utterance-level figures for one role (user or crs)."""

    utterances: int = 0
    words: int = 0
    acts: int = 0
    with_acts: int = Field(0, description="Utterances carrying at least one dialogue act.")

    @property
    def words_per_utterance(self) -> float:
        return self.words / self.utterances if self.utterances else 0.0

    @property
    def acts_per_utterance(self) -> float:
        return self.acts / self.utterances if self.utterances else 0.0


class DatasetStats(BaseModel):
    """What `crsim data stats` reports for one file."""

    dialogues: int = 0
    utterances: int = 0
    empty_dialogues: int = 0
    by_role: dict[str, RoleStats] = Field(default_factory=dict)
    intents: dict[str, int] = Field(default_factory=dict, description="Act count per intent.")
    items_mentioned: int = Field(0, description="Distinct item ids recommended or mentioned.")
    items_recommended: int = Field(0, description="Distinct item ids in `recommended_items`.")

    @property
    def words_per_utterance(self) -> float:
        words = sum(r.words for r in self.by_role.values())
        return words / self.utterances if self.utterances else 0.0

    @property
    def acts_per_utterance(self) -> float:
        acts = sum(r.acts for r in self.by_role.values())
        return acts / self.utterances if self.utterances else 0.0

    def summary(self) -> dict[str, Any]:
        """The figures as a flat JSON-ready dict (derived ratios included, rounded to 2 decimals)."""
        roles = {
            role: {
                "utterances": s.utterances,
                "words_per_utterance": round(s.words_per_utterance, 2),
                "acts_per_utterance": round(s.acts_per_utterance, 2),
                "utterances_with_acts": s.with_acts,
            }
            for role, s in self.by_role.items()
        }
        return {
            "dialogues": self.dialogues,
            "empty_dialogues": self.empty_dialogues,
            "utterances": self.utterances,
            "utterances_per_dialogue": round(self.utterances / self.dialogues, 2) if self.dialogues else 0.0,
            "words_per_utterance": round(self.words_per_utterance, 2),
            "acts_per_utterance": round(self.acts_per_utterance, 2),
            "by_role": roles,
            "intents": dict(sorted(self.intents.items(), key=lambda kv: (-kv[1], kv[0]))),
            "items_mentioned": self.items_mentioned,
            "items_recommended": self.items_recommended,
        }


def mentioned_items(utterance: Utterance) -> list[str]:
    """Item ids an utterance recommends or mentions (`crsim.model.mentions.named_items`)."""
    return named_items(utterance)


def dataset_stats(dialogues: Iterable[Dialogue]) -> DatasetStats:
    """Stream over dialogues once and collect the figures."""
    stats = DatasetStats(by_role={role.value: RoleStats() for role in Role})
    intents: Counter[str] = Counter()
    mentioned: set[str] = set()
    recommended: set[str] = set()
    for dialogue in dialogues:
        stats.dialogues += 1
        stats.empty_dialogues += not dialogue.utterances
        for utterance in dialogue.utterances:
            stats.utterances += 1
            role = stats.by_role[utterance.role.value]
            role.utterances += 1
            role.words += len(utterance.text.split())
            role.acts += len(utterance.acts)
            role.with_acts += bool(utterance.acts)
            intents.update(act.intent for act in utterance.acts)
            mentioned.update(mentioned_items(utterance))
            recommended.update(utterance.recommended_items)
    stats.intents = dict(intents)
    stats.items_mentioned = len(mentioned)
    stats.items_recommended = len(recommended)
    return stats


def file_stats(path: str | Path) -> DatasetStats:
    """Statistics of a dialogues JSONL file; a bad record raises DataError naming line and field."""
    path = Path(path)
    return dataset_stats(iter_dialogues(path))
