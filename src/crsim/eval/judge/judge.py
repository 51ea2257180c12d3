"""The rubric judge: one constrained-JSON question per aspect (and per CRS turn for turn-level
aspects), answered as a justification followed by a score from the aspect's levels.

For every aspect the answer schema is built from the rubric: `{"justification": str, "score":
<integer enum of the levels>}`, with the justification first so the model explains before it
decides. Answers go through `crsim.llm.structured.generate_json` (constrained decoding where the
provider supports it, one repair). With `samples = n` each question is asked n times with distinct
seeds (so the response cache keeps n answers, not one); the value is the mean over the readable
samples and the explanation says how many of the n were readable. An unreadable answer or a failed
call is an error for that sample; when no sample is readable the value is None with the error and
the raw answers, never a number.

The judge is shown the facts of the record beside the transcript (`transcript.dialogue_facts`:
what was recommended at which turn, or that nothing was; how many messages asked a question), and
its answers are checked against them (`RubricJudge.check`): an aspect with `without_recommendation`
gets that level when nothing was recommended; a justification naming catalogue items the CRS
never recommended (nor the user named) is flagged, and so is the lowest level of an aspect marked
`lowest_means_no_questions` for a CRS that asked questions. Both are written at the start of the score's
explanation ("rubric rule: ...", "flag: ..."), followed by the judge's own justification.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, Literal, cast

import jinja2
from pydantic import BaseModel, ConfigDict, Field, create_model

from crsim.core.errors import ConfigError
from crsim.core.seeding import derive_seed
from crsim.eval.judge.rubric import Aspect, Rubric
from crsim.eval.judge.transcript import (
    CRSTurn,
    DialogueFacts,
    crs_turns,
    dialogue_facts,
    fit,
    general_preferences,
    lines,
)
from crsim.eval.metrics.base import NotApplicable
from crsim.eval.metrics.structure import recommends
from crsim.llm.client import LLM
from crsim.llm.errors import LLMError
from crsim.llm.prompts import load_template, render
from crsim.llm.structured import generate_json
from crsim.llm.types import GenerationConfig, Message, system, user
from crsim.model.dialogue import Dialogue, Role
from crsim.model.items import ItemCollection

#: Package holding the judges' templates; a `prompt` argument may also be a path to a file.
PROMPTS = "crsim.eval.judge.prompts"
DEFAULT_PROMPT = "rubric.j2"
#: Why a dialogue cannot be judged (`NotApplicable.reason`, counted in summaries).
NO_PREFERENCES = "no user preferences in the dialogue record (user_profile)"
NO_UTTERANCES = "dialogue without utterances to judge"
NO_CRS_TURN = "no CRS reply to a user utterance to judge"


class Grade(BaseModel):
    """A judge's answer for one aspect; `answer_schema` narrows `score` to the aspect's levels."""

    model_config = ConfigDict(extra="forbid")

    justification: str
    score: int


@cache
def _schema(scores: tuple[int, ...], max_justification_chars: int | None) -> type[Grade]:
    score_type: Any = cast(Any, Literal)[scores]
    justification: Any = Field(min_length=1, max_length=max_justification_chars)
    return create_model("Grade", __base__=Grade, justification=(str, justification), score=(score_type, ...))


def answer_schema(aspect: Aspect, max_justification_chars: int | None = None) -> type[Grade]:
    """The answer model of `aspect`: justification (first), then a score among its levels."""
    return _schema(tuple(aspect.scores), max_justification_chars)


@dataclass(frozen=True)
class Sample:
    """One answer to one question: its score and justification, or the error; `raw` is the text."""

    score: int | None
    justification: str | None
    raw: str | None
    error: str | None = None


@dataclass(frozen=True)
class Score:
    """The judged value of one aspect (for one turn, if turn-level) and how it came about.

    `value` is the mean score over the readable samples (None when none was readable; `error`
    then says why and `raw` keeps the answers). `samples` were asked, `readable` could be read.
    """

    value: float | None
    explanation: str | None = None
    raw: str | None = None
    error: str | None = None
    samples: int = 1
    readable: int = 0
    scores: tuple[int, ...] = ()


@dataclass(frozen=True)
class Judgement:
    """One aspect's score, for the whole dialogue (`turn` None) or for turn t."""

    aspect: str
    turn: int | None
    score: Score


def combine(samples: list[Sample]) -> Score:
    """The score of a question asked `len(samples)` times: the mean over the readable answers."""
    readable = [s for s in samples if s.error is None and s.score is not None]
    n = len(samples)
    if not readable:
        first = next((s.error for s in samples if s.error), "LLMOutputError: no score in the answer")
        kind, _, message = first.partition(": ")
        error = first if n == 1 else f"{kind}: no readable answer in {n} samples; first: {message}"
        raws = [s.raw for s in samples if s.raw]
        raw = raws[0] if n == 1 and raws else _numbered([s.raw or "" for s in samples]) if raws else None
        return Score(None, None, raw, error, samples=n, readable=0)
    scores = tuple(cast(int, s.score) for s in readable)
    value = sum(scores) / len(scores)
    if n == 1:
        return Score(value, readable[0].justification, readable[0].raw, None, 1, 1, scores)
    notes = [f"mean of {len(readable)} of {n} readable samples ({', '.join(map(str, scores))})"]
    notes += [f"sample {i}: {s.error}" for i, s in enumerate(samples, start=1) if s.error is not None]
    notes += [
        f"[{i}] {s.justification}"
        for i, s in enumerate(samples, start=1)
        if s.error is None and s.justification
    ]
    raw = _numbered([s.raw or "" for s in samples])
    return Score(value, "; ".join(notes), raw, None, n, len(readable), scores)


def _numbered(texts: list[str]) -> str:
    return "\n".join(f"[sample {i}] {text}" for i, text in enumerate(texts, start=1))


def derive(name: str, parts: list[str], found: dict[str, Score]) -> Score:
    """A derived aspect: the sum of its parts' values; None (with a part's error) if a part has none."""
    missing = [p for p in parts if found[p].value is None]
    if missing:
        part = found[missing[0]]
        error = part.error or "no value"
        kind, sep, message = error.partition(": ")
        text = f"{kind}: part {missing[0]!r} of {name!r} has no value: {message}" if sep else error
        return Score(None, None, None, text, samples=part.samples, readable=0)
    value = sum(cast(float, found[p].value) for p in parts)
    explanation = " + ".join(f"{p} {cast(float, found[p].value):g}" for p in parts)
    reasons = [f"{p}: {found[p].explanation}" for p in parts if found[p].explanation]
    return Score(
        value,
        f"{explanation} = {value:g}" + (f". {' | '.join(reasons)}" if reasons else ""),
        None,
        None,
        samples=min(found[p].samples for p in parts),
        readable=min(found[p].readable for p in parts),
    )


@dataclass
class RubricJudge:
    """Judges dialogues against a rubric with one LLM role; see the module docstring.

    `aspects` limits judging to some of the rubric's aspects (a derived aspect brings its parts);
    `max_chars` bounds each transcript shown (whole utterances are left out, see `transcript.fit`).
    `items`, the run's catalogue when known, names recommended items in the facts and lets
    justifications be checked for titles never recommended (without it, titles come from the
    `recommend` acts and justifications are not checked).
    """

    rubric: Rubric
    llm: LLM
    samples: int = 1
    temperature: float | None = None
    max_tokens: int | None = None
    max_chars: int = 12000
    max_justification_chars: int | None = None
    aspects: list[str] | None = None
    prompt: str = DEFAULT_PROMPT
    items: ItemCollection | None = None
    template: jinja2.Template = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise ConfigError(f"judge: samples must be at least 1, got {self.samples}")
        self.template = load_template(PROMPTS, self.prompt)
        unknown = [a for a in self.aspects or [] if a not in self.rubric.aspect_names]
        if unknown:
            known = ", ".join(self.rubric.aspect_names)
            raise ConfigError(
                f"rubric {self.rubric.name!r} has no aspect {unknown[0]!r}; expected one of: {known}"
            )

    # --- which aspects -------------------------------------------------------------------------

    def derived(self) -> list[str]:
        """Derived aspects reported: all, or those selected."""
        return [d for d in self.rubric.derived if self.aspects is None or d in self.aspects]

    def judged(self) -> list[str]:
        """Judged aspects asked about, in rubric order: the selection plus the parts of derived ones."""
        if self.aspects is None:
            return list(self.rubric.aspects)
        wanted = set(self.aspects)
        for name in self.derived():
            wanted.update(self.rubric.derived[name].sum)
        return [a for a in self.rubric.aspects if a in wanted]

    def reported(self) -> list[str]:
        """Every aspect in the result, judged then derived."""
        return [*self.judged(), *self.derived()]

    # --- prompts -------------------------------------------------------------------------------

    def preferences(self, dialogue: Dialogue) -> str | None:
        """The general preferences shown to the judge, as the rubric asks; `NotApplicable` when required
        and the dialogue has none."""
        if self.rubric.user_preferences == "none":
            return None
        text = general_preferences(dialogue)
        if text is None and self.rubric.user_preferences == "required":
            raise NotApplicable(
                NO_PREFERENCES,
                f"dialogue {dialogue.id!r}: rubric {self.rubric.name!r} needs the user's general "
                "preferences (user_profile.persona['general_preferences'] or preference likes/dislikes)",
            )
        return text

    def facts(self, dialogue: Dialogue, turn: CRSTurn | None = None) -> DialogueFacts:
        """The record's facts of the dialogue, or of a turn's context and reply."""
        shown = dialogue.utterances if turn is None else [*turn.context, *turn.reply]
        return dialogue_facts(shown, self._title_of if self.items is not None else None)

    def _title_of(self, item_id: str) -> str | None:
        item = self.items.get(item_id) if self.items is not None else None
        return None if item is None else item.display_title

    def messages(
        self, dialogue: Dialogue, aspect: Aspect, turn: CRSTurn | None = None, preferences: str | None = None
    ) -> list[Message]:
        """The system and user messages asking for `aspect` (of the whole dialogue, or of `turn`)."""
        if turn is None:
            transcript = fit(lines(dialogue.utterances), self.max_chars, keep="ends")
            reply = None
        else:
            transcript = fit(lines(turn.context), self.max_chars, keep="last")
            reply = turn.reply_text()
        variables: dict[str, Any] = {
            "rubric_description": self.rubric.description,
            "aspect": aspect,
            "levels": aspect.described_levels(),
            "scores": aspect.scores,
            "turn": None if turn is None else turn.turn,
            "preferences": preferences,
            "transcript": transcript,
            "reply": reply,
            "facts": self.facts(dialogue, turn).text(),
        }
        return [system(self._render("system", variables)), user(self._render("task", variables))]

    def _render(self, part: str, variables: dict[str, Any]) -> str:
        text = render(self.template, part=part, **variables)
        if not text:
            raise ConfigError(f"prompt template {self.prompt!r} renders nothing for part {part!r}")
        return text

    # --- judging -------------------------------------------------------------------------------

    async def judge(self, dialogue: Dialogue) -> list[Judgement]:
        """Every reported aspect of `dialogue`: dialogue-level ones once, turn-level ones per CRS turn.

        Raises `NotApplicable` for a dialogue without utterances or without the preferences the
        rubric requires. Failed calls and unreadable answers become error scores, never exceptions.
        """
        if not any(u.text.strip() for u in dialogue.utterances):
            raise NotApplicable(NO_UTTERANCES, f"dialogue {dialogue.id!r}")
        preferences = self.preferences(dialogue)
        turns = crs_turns(dialogue)
        questions: list[tuple[str, CRSTurn | None]] = []
        for name in self.judged():
            if self.rubric.aspects[name].level == "dialogue":
                questions.append((name, None))
            else:
                questions.extend((name, turn) for turn in turns)
        scores = await asyncio.gather(
            *(self.grade(dialogue, name, turn, preferences) for name, turn in questions)
        )
        found = [
            Judgement(name, None if t is None else t.turn, s)
            for (name, t), s in zip(questions, scores, strict=True)
        ]
        for name in self.judged():
            if self.rubric.aspects[name].level == "turn" and not turns:
                found.append(Judgement(name, None, Score(None, NO_CRS_TURN, samples=self.samples)))
        found.extend(self._derived(found))
        order = {name: i for i, name in enumerate(self.reported())}
        return sorted(found, key=lambda j: (order[j.aspect], j.turn or 0))

    def _derived(self, found: list[Judgement]) -> list[Judgement]:
        results = []
        for name in self.derived():
            parts = self.rubric.derived[name].sum
            units = sorted({j.turn for j in found if j.aspect in parts}, key=lambda t: t or 0)
            for unit in units:
                scores = {j.aspect: j.score for j in found if j.aspect in parts and j.turn == unit}
                if len(scores) == len(parts):
                    results.append(Judgement(name, unit, derive(name, parts, scores)))
        return results

    async def grade(
        self, dialogue: Dialogue, name: str, turn: CRSTurn | None = None, preferences: str | None = None
    ) -> Score:
        """Ask about one aspect `samples` times and combine the answers."""
        aspect = self.rubric.aspects[name]
        messages = self.messages(dialogue, aspect, turn, preferences)
        schema = answer_schema(aspect, self.max_justification_chars)
        where = (self.rubric.name, name, dialogue.id, 0 if turn is None else turn.turn)
        samples = await asyncio.gather(
            *(
                self._ask(messages, schema, derive_seed("judge", *where, k) % 2**31)
                for k in range(self.samples)
            )
        )
        return self.check(aspect, combine(list(samples)), dialogue, turn)

    # --- checks against the record -------------------------------------------------------------

    def check(self, aspect: Aspect, score: Score, dialogue: Dialogue, turn: CRSTurn | None = None) -> Score:
        """`score` checked against the record: the rubric's `without_recommendation` level applied
        when nothing was recommended, and titles in the justification that were never recommended
        flagged; both noted at the start of the explanation (see the module docstring)."""
        notes: list[str] = []
        value, error = score.value, score.error
        rule = aspect.without_recommendation
        scope = dialogue.utterances if turn is None else turn.reply
        if rule is not None and not any(recommends(u) for u in scope):
            answered = (
                f"{score.value:g}" if score.value is not None else f"no readable answer ({score.error})"
            )
            where = "the conversation" if turn is None else f"the reply of turn {turn.turn}"
            notes.append(
                f"rubric rule: nothing was recommended in {where}, so {aspect.title} is {rule} "
                f"(the judge answered {answered})"
            )
            value, error = float(rule), None
        if aspect.lowest_means_no_questions and value == aspect.scale[0]:
            facts = self.facts(dialogue, turn)
            if facts.questions:
                notes.append(
                    f"flag: the lowest level of {aspect.title}, though the CRS asked a question in "
                    f"{facts.questions} of its {facts.replies} messages"
                )
        cited = self.unrecommended_titles(score.explanation or "", dialogue)
        if cited:
            notes.append(f"flag: the justification names {'; '.join(cited)}, which the CRS never recommended")
        if not notes:
            return score
        judged = f" Judge: {score.explanation}" if score.explanation else ""
        return replace(score, value=value, error=error, explanation="; ".join(notes) + "." + judged)

    def unrecommended_titles(self, text: str, dialogue: Dialogue) -> list[str]:
        """Titles of catalogue items `text` names that the CRS never recommended in `dialogue` and
        the user never named (empty without a catalogue)."""
        if self.items is None or not text:
            return []
        linker = self.items.linker
        allowed = {i for u in dialogue.utterances if u.role is Role.CRS for i in u.recommended_items}
        for utterance in dialogue.utterances:
            if utterance.role is Role.USER:
                allowed.update(m.item_id for m in linker.link(utterance.text))
        cited = dict.fromkeys(m.item_id for m in linker.link(text) if m.item_id not in allowed)
        return [self.items[i].display_title for i in cited]

    async def _ask(self, messages: list[Message], schema: type[Grade], seed: int) -> Sample:
        config = GenerationConfig(temperature=self.temperature, max_tokens=self.max_tokens, seed=seed)
        try:
            answer = await generate_json(self.llm, messages, schema, config)
        except LLMError as exc:
            return Sample(None, None, None, f"{type(exc).__name__}: {exc}")
        if not answer.ok or answer.value is None:
            return Sample(None, None, answer.raw, f"LLMOutputError: {answer.error or 'no value'}")
        return Sample(answer.value.score, answer.value.justification.strip(), answer.raw)
