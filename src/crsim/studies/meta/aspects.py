"""The seven CRSArena-Eval aspects, their level (turn or dialogue), and the names accepted for them.

Gold files, run files and evaluators spell some aspects differently (`dialogue_overall`,
`dialog_overall`, `overall_impression`); everything in `crsim.studies.meta` uses the canonical names below.
"""

from __future__ import annotations

from typing import Literal

Level = Literal["turn", "dialogue"]

#: Rated on every assistant utterance.
TURN_ASPECTS: tuple[str, ...] = ("relevance", "interestingness")
#: Rated once per conversation.
DIALOGUE_ASPECTS: tuple[str, ...] = (
    "understanding",
    "task_completion",
    "interest_arousal",
    "efficiency",
    "overall",
)
ASPECTS: tuple[str, ...] = TURN_ASPECTS + DIALOGUE_ASPECTS

#: Other spellings -> canonical name (after lower-casing and turning spaces and hyphens into "_").
ALIASES: dict[str, str] = {
    "dialogue_overall": "overall",
    "dialog_overall": "overall",
    "overall_impression": "overall",
}

#: Column names in Markdown tables.
TITLES: dict[str, str] = {
    "relevance": "Relevance",
    "interestingness": "Interestingness",
    "understanding": "Understanding",
    "task_completion": "Task completion",
    "interest_arousal": "Interest arousal",
    "efficiency": "Efficiency",
    "overall": "Overall",
}
#: Short column names for 80-column terminal tables.
SHORT_TITLES: dict[str, str] = {
    "relevance": "Rel.",
    "interestingness": "Int.",
    "understanding": "Und.",
    "task_completion": "Task",
    "interest_arousal": "Arous.",
    "efficiency": "Eff.",
    "overall": "Overall",
}


def canonical_aspect(name: str) -> str | None:
    """The canonical aspect a name stands for ("Task completion" -> task_completion), else None."""
    key = name.strip().lower().replace("-", "_").replace(" ", "_")
    key = ALIASES.get(key, key)
    return key if key in ASPECTS else None


def level_of(aspect: str) -> Level:
    """Whether the gold labels of a canonical aspect are per assistant turn or per dialogue."""
    return "turn" if aspect in TURN_ASPECTS else "dialogue"
