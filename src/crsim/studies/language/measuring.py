"""Measuring the user utterances of recorded dialogues, by rules or by an LLM judge.

Length is always counted by rule. Formality and key points come from a `Measurer`: the rule
classifier and counter (`RuleMeasurer`, offline, the default) or the LLM judges (`LLMMeasurer`).
Dialogues are measured `concurrency` at a time; a judge answer that cannot be read leaves that
utterance's value None with the error, and the rest of the dialogue is still measured.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Protocol

from crsim.core.progress import Progress
from crsim.model import annotations as keys
from crsim.model.dialogue import Dialogue, Role
from crsim.model.domain import Domain
from crsim.studies.language.formality import FormalityRules, classify_formality
from crsim.studies.language.judge import LLMJudge
from crsim.studies.language.measures import (
    DialogueMeasures,
    Reading,
    Thresholds,
    UtteranceMeasures,
    word_count,
)
from crsim.studies.language.richness import RuleKeyPoints

#: Persona keys holding the linguistic pattern (written by the RecUserSim-style simulator).
PATTERN_KEYS = tuple(key.name for key in keys.PATTERN_KEYS)


class Measurer(Protocol):
    """Formality and key points of one utterance; `recommended` is the item under discussion."""

    @property
    def name(self) -> str: ...

    async def formality(self, text: str) -> Reading[str]: ...

    async def key_points(self, text: str, recommended: str | None) -> Reading[int]: ...


class RuleMeasurer:
    """The offline default: the cue-based formality classifier and the rule-based key-point counter."""

    name = "rules"

    def __init__(self, domain: Domain | None = None, rules: FormalityRules | None = None) -> None:
        self.counter = RuleKeyPoints(domain)
        self.rules = rules or FormalityRules()

    async def formality(self, text: str) -> Reading[str]:
        return classify_formality(text, self.rules)

    async def key_points(self, text: str, recommended: str | None) -> Reading[int]:
        return self.counter.count(text, recommended)


class LLMMeasurer:
    """The LLM judges (role "judge"); the item under discussion is not shown to them."""

    name = "llm"

    def __init__(self, judge: LLMJudge) -> None:
        self.judge = judge

    async def formality(self, text: str) -> Reading[str]:
        return await self.judge.formality(text)

    async def key_points(self, text: str, recommended: str | None) -> Reading[int]:
        return await self.judge.key_points(text)


def persona_pattern(dialogue: Dialogue) -> dict[str, str]:
    """The linguistic pattern in `user_profile.persona`: the `PATTERN_KEYS` present, as lower-case text."""
    values = {key.name: keys.persona(key, dialogue) for key in keys.PATTERN_KEYS}
    return {
        name: value.strip().lower() for name, value in values.items() if value is not None and value.strip()
    }


def _recommended_before(dialogue: Dialogue, index: int) -> str | None:
    """The last item the CRS recommended before utterance `index`, if any."""
    for utterance in reversed(dialogue.utterances[:index]):
        if utterance.role is Role.CRS and utterance.recommended_items:
            return utterance.recommended_items[-1]
    return None


async def measure_utterance(
    dialogue_id: str,
    turn: int,
    text: str,
    measurer: Measurer,
    thresholds: Thresholds,
    recommended: str | None = None,
) -> UtteranceMeasures:
    words = word_count(text)
    formality, points = await asyncio.gather(measurer.formality(text), measurer.key_points(text, recommended))
    raw = {name: r.raw for name, r in (("formality", formality), ("key_points", points)) if r.raw is not None}
    return UtteranceMeasures(
        dialogue_id=dialogue_id,
        turn=turn,
        text=text,
        words=words,
        length=thresholds.length_category(words),
        formality=formality.value,
        formality_error=formality.error,
        formality_details=list(formality.details),
        key_points=points.value,
        key_points_error=points.error,
        key_points_found=list(points.details),
        richness=None if points.value is None else thresholds.richness_category(points.value),
        raw=raw,
    )


async def measure_dialogue(
    dialogue: Dialogue, measurer: Measurer, thresholds: Thresholds, *, run: str = ""
) -> DialogueMeasures:
    """Every user utterance of `dialogue` (turn t = the t-th user utterance)."""
    jobs = []
    turn = 0
    for index, utterance in enumerate(dialogue.utterances):
        if utterance.role is not Role.USER:
            continue
        turn += 1
        recommended = _recommended_before(dialogue, index)
        jobs.append(measure_utterance(dialogue.id, turn, utterance.text, measurer, thresholds, recommended))
    utterances = list(await asyncio.gather(*jobs))
    return DialogueMeasures(
        dialogue_id=dialogue.id,
        group=dialogue.simulator_id or "unknown",
        simulator_id=dialogue.simulator_id,
        run=run,
        pattern=persona_pattern(dialogue),
        utterances=utterances,
    )


async def measure_dialogues(
    dialogues: Iterable[Dialogue],
    measurer: Measurer,
    thresholds: Thresholds | None = None,
    *,
    run: str = "",
    concurrency: int = 8,
    progress: Progress | None = None,
) -> list[DialogueMeasures]:
    """All dialogues, in input order, `concurrency` at a time; `progress` advances as each is done
    (an error when a value of it could not be read)."""
    thresholds = thresholds or Thresholds()
    limit = asyncio.Semaphore(max(1, concurrency))
    dialogues = list(dialogues)  # a reading error surfaces here, before any coroutine exists

    async def one(dialogue: Dialogue) -> DialogueMeasures:
        async with limit:
            measured = await measure_dialogue(dialogue, measurer, thresholds, run=run)
        if progress is not None:
            progress.advance(error=sum(error_counts([measured]).values()) > 0)
        return measured

    return list(await asyncio.gather(*(one(d) for d in dialogues)))


def name_groups(measured: Sequence[DialogueMeasures]) -> list[DialogueMeasures]:
    """Groups are simulator ids; a simulator id found in more than one run becomes `id@run` per run,
    so two runs of one simulator (say, on two base models) are compared, not pooled."""
    runs: dict[str, set[str]] = {}
    for item in measured:
        runs.setdefault(item.simulator_id or "unknown", set()).add(item.run)
    shared = {sim for sim, names in runs.items() if len(names) > 1}
    named = []
    for item in measured:
        sim = item.simulator_id or "unknown"
        named.append(item.model_copy(update={"group": f"{sim}@{item.run}" if sim in shared else sim}))
    return named


def error_counts(measured: Sequence[DialogueMeasures]) -> Counter[str]:
    """Unreadable values per measure ("formality", "richness")."""
    counts: Counter[str] = Counter()
    for item in measured:
        for utterance in item.utterances:
            counts["formality"] += utterance.formality_error is not None
            counts["richness"] += utterance.key_points_error is not None
    return counts
