"""Per-judge measures: how an LLM judge's scores spread over its scale, and whether they agree with
facts the record holds (what was recommended, how many questions the CRS asked)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from crsim.core.errors import ConfigError
from crsim.eval.judge.rubric import NAME, load_rubric, shipped_rubrics
from crsim.model.acts import Intent
from crsim.model.dialogue import Dialogue, Utterance
from crsim.model.run_folder import ScoreRecord
from crsim.studies.behaviour.observation import Kind, Observation

#: Aspect names holding one of these words grade how relevant the recommendations were.
RELEVANCE_WORDS = ("relevance",)
#: Aspect names holding one of these words grade how proactive the CRS was.
PROACTIVENESS_WORDS = ("proactiv",)
#: CRS questions from which the lowest proactiveness level contradicts the record.
MIN_QUESTIONS = 2


@dataclass(frozen=True)
class Scale:
    """A judged aspect's scale, and whether it comes from the rubric or only from the scores seen."""

    low: int | float
    high: int | float
    from_rubric: bool


def rubric_scale(label: str, rubrics: Mapping[str, str]) -> Scale | None:
    """The rubric scale of `judge/aspect`: the rubric the run's config named for the judge, or the
    shipped rubric the judge's label names; None when neither is known."""
    if "/" not in label:
        return None
    judge, aspect = label.split("/", 1)
    name = rubrics.get(judge, judge)
    if not NAME.match(name) or name not in shipped_rubrics():
        return None
    try:
        found = load_rubric(name).aspects.get(aspect)
    except ConfigError:
        return None
    return Scale(found.scale[0], found.scale[1], True) if found is not None else None


def _upto(dialogue: Dialogue, turn: int | None) -> list[Utterance]:
    """The utterances up to the CRS reply of turn `turn` (all of them for a dialogue-level score)."""
    if turn is None:
        return dialogue.utterances
    turns = dialogue.crs_turn_numbers()
    last = max((p for p, t in turns.items() if t <= turn), default=-1)
    return dialogue.utterances[: last + 1]


def crs_questions(utterances: Sequence[Utterance]) -> int:
    """CRS messages that ask the user something: a '?' in the text, or an elicit/ask act."""
    return sum(
        1
        for u in utterances
        if u.role == "crs" and ("?" in u.text or any(a.intent in (Intent.ELICIT, Intent.ASK) for a in u.acts))
    )


def _obs(label: str, measure: str, record: ScoreRecord, hit: bool | None, note: str = "") -> Observation:
    return Observation(Kind.JUDGE, label, measure, record.dialogue_id, hit, note)


def _consistency(
    label: str, record: ScoreRecord, scale: Scale, dialogue: Dialogue | None
) -> Iterator[Observation]:
    aspect = label.split("/", 1)[-1]
    relevance = any(w in aspect for w in RELEVANCE_WORDS)
    proactive = any(w in aspect for w in PROACTIVENESS_WORDS)
    if not (relevance or proactive) or record.value is None:
        return
    measure = "relevance_without_recommendation" if relevance else "proactiveness_lowest_despite_questions"
    if dialogue is None:
        yield _obs(label, measure, record, None, "the scored dialogue is not in the run")
        return
    if not scale.from_rubric:
        yield _obs(label, measure, record, None, "the rubric's lowest level is unknown")
        return
    seen = _upto(dialogue, record.turn)
    if relevance:
        if not any(u.role == "crs" and u.recommended_items for u in seen):
            yield _obs(label, measure, record, record.value > scale.low, f"score {record.value:g}")
        return
    asked = crs_questions(seen)
    if asked >= MIN_QUESTIONS:
        yield _obs(
            label, measure, record, record.value <= scale.low, f"score {record.value:g}, {asked} questions"
        )


def judge_observations(
    scores: Sequence[ScoreRecord], dialogues: Mapping[str, Dialogue], rubrics: Mapping[str, str]
) -> tuple[list[Observation], dict[str, str]]:
    """The judge measures of every LLM-judged score, and per judge label its score distribution
    ("level: count" from the lowest level up, and how many answers could not be read)."""
    found: list[Observation] = []
    spread: dict[str, str] = {}
    by_label: dict[str, list[ScoreRecord]] = {}
    for record in scores:
        if record.llm_judged:
            by_label.setdefault(record.metric, []).append(record)
    for label, records in by_label.items():
        values = [r.value for r in records if r.value is not None]
        scale = rubric_scale(label, rubrics) or Scale(min(values, default=0), max(values, default=0), False)
        counts = Counter(values)
        levels = range(int(scale.low), int(scale.high) + 1) if scale.from_rubric else sorted(counts)
        spread[label] = " ".join(f"{level:g}:{counts.get(level, 0)}" for level in levels)
        if not scale.from_rubric:
            spread[label] += " (scale: the scores seen; the rubric is unknown)"
        if len(values) < len(records):
            spread[label] += f" (unread: {len(records) - len(values)})"
        for record in records:
            if record.value is None:
                found.append(_obs(label, "score_at_max", record, None, record.missing_reason or "no value"))
                continue
            found.append(
                _obs(label, "score_at_max", record, record.value >= scale.high, f"score {record.value:g}")
            )
            found += _consistency(label, record, scale, dialogues.get(record.dialogue_id))
    return found, spread
