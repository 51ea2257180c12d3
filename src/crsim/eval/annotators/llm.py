"""The LLM act annotator (`llm`): a language model labels each utterance, held to a fixed vocabulary.

For each utterance the model sees a system message (the task, the intents each role may use with
their meanings, the slots), a few worked examples as earlier chat turns, then the last few
utterances before it and the utterance itself. Its answer is decoded under a GBNF grammar that
admits only `intent(slot="value")|...` lines over the allowed intents of the speaker's role and
the allowed slots (`crsim.llm.grammar.acts_grammar`), and is checked against the same vocabulary
after parsing, for providers that cannot apply a grammar. An answer that cannot be read, even
after the one repair `crsim.llm.structured` allows, gives no acts: the utterance keeps an empty
act list and records the failure and the raw answer in `annotations["acts_error"]`.

The vocabulary (`scheme`): `crsim` uses the intents crsim's own components produce; a dataset
name (`iard`, `moviebot`) uses the intents that dataset's labels map to, per role, and the
dataset slot names, so annotations can be scored against that dataset's gold labels without
predicting intents the gold data can never contain.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import jinja2
from pydantic import Field, field_validator

from crsim.core.components import BuildContext
from crsim.core.errors import ConfigError
from crsim.core.plugins import Params as ComponentParams
from crsim.core.seeding import derive_seed
from crsim.datasets.intents import INTENT_TABLES, SLOTS
from crsim.eval.annotators.base import ACTS_SOURCE, ActAnnotator, AnnotationReport, annotator
from crsim.llm.client import LLM, LLMHub
from crsim.llm.config import LLMSettings
from crsim.llm.grammar import acts_grammar
from crsim.llm.prompts import load_template, render, template_check
from crsim.llm.structured import Structured, generate_structured, parse_act_answer
from crsim.llm.types import GenerationConfig, Message, assistant, system, user
from crsim.model import annotations as keys
from crsim.model.acts import DialogueAct, Intent, is_act_name
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.domain import Domain

#: Annotation key of an utterance whose acts the annotator could not read: error, raw answer, annotator.
ACTS_ERROR = keys.ACTS_ERROR.name
#: Package holding the shipped templates; a `prompt` argument may also be a path to a file.
PROMPTS = "crsim.eval.annotators.prompts"
USER_LABEL, CRS_LABEL = "User", "Recommender"
LABELS = {Role.USER: USER_LABEL, Role.CRS: CRS_LABEL}

#: What each of crsim's intents means, as the prompt explains it.
INTENT_MEANINGS: dict[str, str] = {
    Intent.GREETING: "says hello",
    Intent.GOODBYE: "ends the conversation (bye, that is all)",
    Intent.REQUEST_RECOMMENDATION: "asks for a recommendation; slots hold the wishes stated with it",
    Intent.DISCLOSE: "states a preference (a genre, a person, a title they like) or answers a question",
    Intent.INQUIRE: "asks about a recommended item; the slot asked about has no value",
    Intent.ACCEPT: "likes a recommendation or says they will watch it",
    Intent.REJECT: "turns a recommendation down or says what they do not want",
    Intent.SEEN: "says they have already seen an item",
    Intent.ELICIT: "asks the user about their preferences; the slot asked about has no value",
    Intent.RECOMMEND: "suggests an item (title slot)",
    Intent.INFORM: "tells something about an item: its plot, people, why it fits",
    Intent.ASK: "asks a yes/no question, e.g. whether to continue",
    Intent.AFFIRM: "says yes",
    Intent.DENY: "says no",
    Intent.OTHER: "anything else: thanks, chit-chat, opinions",
}
#: What each slot means, as the prompts explain it (slots not listed are shown without a meaning).
SLOT_MEANINGS: dict[str, str] = {
    "title": "an item's title",
    "genre": "a genre, e.g. comedy",
    "actor": "an actor's name",
    "director": "a director's name",
    "keyword": "a theme, mood or audience, e.g. time travel, family",
    "decade": "a period, e.g. 1990s",
    "year": "a year or period",
    "plot": "what happens in the story",
    "rating": "how good an item is",
    "other": "any other property",
}


@dataclass(frozen=True)
class Vocabulary:
    """The intents each role may use and the slots any act may carry."""

    intents: dict[Role, tuple[str, ...]]
    slots: tuple[str, ...]

    def check(self, acts: list[DialogueAct], role: Role, max_acts: int) -> list[DialogueAct]:
        """`acts` if they keep to the vocabulary; ValueError naming the first thing that does not."""
        if len(acts) > max_acts:
            raise ValueError(f"{len(acts)} acts, at most {max_acts} allowed")
        for act in acts:
            if act.intent not in self.intents[role]:
                allowed = ", ".join(self.intents[role])
                raise ValueError(f"intent {act.intent!r} is not one of {allowed} ({role.value} side)")
            for slot, _ in act.slots:
                if slot not in self.slots:
                    raise ValueError(f"slot {slot!r} is not one of {', '.join(self.slots)}")
        return acts


#: Intents of crsim's own components, per role (see `crsim.model.acts.Intent`).
_CRSIM_INTENTS: dict[Role, tuple[str, ...]] = {
    Role.USER: (
        Intent.GREETING,
        Intent.REQUEST_RECOMMENDATION,
        Intent.DISCLOSE,
        Intent.INQUIRE,
        Intent.ACCEPT,
        Intent.REJECT,
        Intent.SEEN,
        Intent.AFFIRM,
        Intent.DENY,
        Intent.OTHER,
        Intent.GOODBYE,
    ),
    Role.CRS: (
        Intent.GREETING,
        Intent.ELICIT,
        Intent.RECOMMEND,
        Intent.INFORM,
        Intent.ASK,
        Intent.AFFIRM,
        Intent.DENY,
        Intent.OTHER,
        Intent.GOODBYE,
    ),
}
SCHEMES = ("crsim", *INTENT_TABLES)


def _in_order(intents: set[str], role: Role) -> tuple[str, ...]:
    """`intents` in the order crsim lists its own for `role` (others after them, alphabetically)."""
    order = {intent: n for n, intent in enumerate(_CRSIM_INTENTS[role])}
    return tuple(sorted(intents, key=lambda i: (order.get(i, len(order)), i)))


def vocabulary(scheme: str, domain: Domain, slots: Sequence[str] | None = None) -> Vocabulary:
    """The vocabulary of a scheme; `slots` replaces the scheme's slots when given.

    `crsim`: crsim's intents, slots `title` plus the domain's informable and requestable slots.
    A dataset: the intents its labels map to (ordered as crsim's), the annotated datasets' slots.
    """
    if scheme == "crsim":
        intents = dict(_CRSIM_INTENTS)
        default_slots = ["title", *domain.informable_slots, *domain.requestable_slots]
    elif scheme in INTENT_TABLES:
        intents = {
            role: _in_order(set(table.values()), role) for role, table in INTENT_TABLES[scheme].items()
        }
        default_slots = list(SLOTS.values())
    else:
        raise ConfigError(f"unknown act scheme {scheme!r}; expected one of: {', '.join(SCHEMES)}")
    chosen = list(slots) if slots is not None else default_slots
    return Vocabulary(intents, tuple(dict.fromkeys(chosen)))


@dataclass(frozen=True)
class Example:
    """A worked example: the utterances before, the utterance, its acts in the string form."""

    context: tuple[tuple[Role, str], ...]
    role: Role
    text: str
    acts: str


#: Few-shot examples shown before each utterance (those outside the vocabulary are skipped).
EXAMPLES: tuple[Example, ...] = (
    Example(
        (), Role.USER, "Hey! Could you suggest a good sci-fi film?", 'request_recommendation(genre="sci-fi")'
    ),
    Example(
        ((Role.USER, "Hey! Could you suggest a good sci-fi film?"),),
        Role.CRS,
        "Sure, have you seen Arrival (2016)? It is smart and moving.",
        'recommend(title="Arrival")',
    ),
    Example(
        ((Role.CRS, "Sure, have you seen Arrival (2016)? It is smart and moving."),),
        Role.USER,
        "Yes, I loved it. Something with Tom Hanks maybe?",
        'seen(title="Arrival")|disclose(actor="Tom Hanks")',
    ),
    Example((), Role.CRS, "What kind of movies do you usually enjoy?", "elicit(genre)"),
    Example(
        ((Role.CRS, "You could try Cast Away (2000)."),),
        Role.USER,
        "Not really into survival stories. Got a comedy instead?",
        'reject(keyword="survival stories")|request_recommendation(genre="comedy")',
    ),
    Example(
        ((Role.USER, "What is The Terminal about?"),),
        Role.CRS,
        "A man gets stuck living in an airport. Great fun for a family night.",
        'inform(plot="a man gets stuck living in an airport",keyword="family")',
    ),
    Example(
        ((Role.CRS, "The Terminal (2004) might suit you."),),
        Role.USER,
        "That sounds perfect, I'll watch it tonight. Thanks, bye!",
        "accept()|goodbye()",
    ),
)


def _fits(example: Example, words: Vocabulary, max_acts: int) -> bool:
    try:
        words.check(parse_act_answer(example.acts), example.role, max_acts)
    except ValueError:
        return False
    return True


#: A template argument, checked when the arguments are validated.
TemplateName = Annotated[str, template_check(PROMPTS)]
_act_errors: ContextVar[dict[int, dict[str, str]] | None] = ContextVar("crsim_act_errors", default=None)


@annotator("llm")
class LLMAnnotator(ActAnnotator):
    """Acts from a language model (the `annotator` role), constrained to a scheme's intents and slots."""

    description = "LLM (role 'annotator'): acts decoded under a grammar of the scheme's intents and slots"
    needs_llm: ClassVar[bool] = True

    class Params(ComponentParams):
        role: str = Field(
            "annotator", min_length=1, description="Model role whose LLM labels the utterances."
        )
        scheme: str = Field(
            "crsim",
            description="Intent and slot vocabulary: crsim (crsim's intents, the domain's slots) or a "
            "dataset whose labels crsim maps (iard, moviebot), to be comparable with its gold acts.",
        )
        slots: list[str] | None = Field(None, description="Slot names allowed; default: the scheme's.")
        context: int = Field(
            3, ge=0, le=50, description="Utterances before the labelled one shown to the model."
        )
        examples: int = Field(
            len(EXAMPLES), ge=0, description="Built-in worked examples shown (those fitting the vocabulary)."
        )
        max_acts: int = Field(3, ge=1, le=10, description="Most acts per utterance.")
        prompt: TemplateName = Field(
            "acts.j2",
            description="Template shipped in crsim.eval.annotators.prompts, or a path to a jinja2 file "
            "rendering the parts 'system' and 'utterance'.",
        )
        temperature: float = Field(0.0, ge=0.0, le=2.0, description="Sampling temperature.")
        max_tokens: int = Field(80, ge=8, description="Token cap per answer.")

        @field_validator("scheme")
        @classmethod
        def _known_scheme(cls, value: str) -> str:
            if value not in SCHEMES:
                raise ValueError(f"unknown scheme {value!r}; expected one of: {', '.join(SCHEMES)}")
            return value

        @field_validator("slots")
        @classmethod
        def _slot_names(cls, value: list[str] | None) -> list[str] | None:
            if value is not None and not value:
                raise ValueError("give at least one slot name, or leave slots out for the scheme's")
            bad = [s for s in value or [] if not is_act_name(s)]
            if bad:
                raise ValueError(f"slot names must be non-empty words (letters, digits, _ . -), got {bad}")
            return value

    @classmethod
    def llm_roles(cls, params: Params) -> list[str]:
        return [params.role]

    def __init__(self, params: ComponentParams, ctx: BuildContext) -> None:
        """Calls `ctx.llms`; without one, the local model with default settings and no response cache."""
        super().__init__(params, ctx)
        assert isinstance(params, LLMAnnotator.Params)
        self.settings = params
        self.llm: LLM = (ctx.llms if ctx.llms is not None else LLMHub(LLMSettings())).role(params.role)
        self.words = vocabulary(params.scheme, self.domain, params.slots)
        self.template: jinja2.Template = load_template(PROMPTS, params.prompt)
        self.grammars = {
            role: acts_grammar(list(intents), list(self.words.slots), max_acts=params.max_acts)
            for role, intents in self.words.intents.items()
        }
        fitting = [e for e in EXAMPLES if _fits(e, self.words, params.max_acts)]
        self.examples = fitting[: params.examples]
        self._preamble = self.preamble()
        self.failed = 0  # utterances whose answer could not be read

    def _render(self, part: str, **variables: Any) -> str:
        text = render(self.template, part=part, user_label=USER_LABEL, crs_label=CRS_LABEL, **variables)
        if not text:
            raise ConfigError(f"prompt template {self.settings.prompt!r} renders nothing for part {part!r}")
        return text

    def _query(self, context: Sequence[tuple[Role, str]], role: Role, text: str, omitted: bool) -> Message:
        lines = [f"{LABELS[r]}: {' '.join(t.split())}" for r, t in context]
        return user(
            self._render(
                "utterance",
                transcript="\n".join(lines),
                omitted=omitted,
                speaker=LABELS[role],
                text=" ".join(text.split()),
            )
        )

    def preamble(self) -> list[Message]:
        """The messages every query starts with: the system message, then the worked examples."""
        intents = {
            LABELS[role]: [(i, INTENT_MEANINGS.get(i, "")) for i in names]
            for role, names in self.words.intents.items()
        }
        slots = [(s, SLOT_MEANINGS.get(s, "")) for s in self.words.slots]
        variables = {"domain": self.domain.name, "max_acts": self.settings.max_acts}
        messages = [system(self._render("system", intents=intents, slots=slots, **variables))]
        for example in self.examples:
            messages += [
                self._query(example.context, example.role, example.text, False),
                assistant(example.acts),
            ]
        return messages

    def messages(self, utterance: Utterance, history: Sequence[Utterance]) -> list[Message]:
        """The chat messages asking for the acts of `utterance`: the preamble, then the query with
        the last `context` utterances before it."""
        shown = list(history)[len(history) - self.settings.context :] if self.settings.context else []
        context = [(u.role, u.text) for u in shown]
        query = self._query(context, utterance.role, utterance.text, len(shown) < len(history))
        return [*self._preamble, query]

    async def label(
        self, utterance: Utterance, history: Sequence[Utterance]
    ) -> Structured[list[DialogueAct]]:
        """The model's acts for `utterance`, or the reason they could not be read (with the raw answer)."""
        role = utterance.role
        config = GenerationConfig(
            temperature=self.settings.temperature,
            max_tokens=self.settings.max_tokens,
            seed=derive_seed("annotate", role.value, len(history), utterance.text) % 2**31,
            grammar=self.grammars[role],
        )
        allowed = f"intents: {' '.join(self.words.intents[role])}; slots: {' '.join(self.words.slots)}"
        return await generate_structured(
            self.llm,
            self.messages(utterance, history),
            lambda raw: self.words.check(parse_act_answer(raw), role, self.settings.max_acts),
            config,
            describe=f'one line of acts like intent(slot="value")|intent() ({allowed})',
        )

    async def utterance_acts(self, utterance: Utterance, history: Sequence[Utterance]) -> list[DialogueAct]:
        """The acts, or none when the answer is unreadable (the failure is recorded by `annotate`)."""
        result = await self.label(utterance, history)
        if result.ok and result.value is not None:
            return result.value
        self.failed += 1
        errors = _act_errors.get()
        if errors is not None:
            errors[len(history)] = {"annotator": self.name, "error": result.error or "", "raw": result.raw}
        return []

    async def annotate(
        self, dialogue: Dialogue, *, overwrite: bool = False, report: AnnotationReport | None = None
    ) -> Dialogue:
        """As `ActAnnotator.annotate`; an unreadable utterance gets `acts_error` and no `acts_source`."""
        errors: dict[int, dict[str, str]] = {}
        token = _act_errors.set(errors)
        try:
            done = await super().annotate(dialogue, overwrite=overwrite, report=report)
        finally:
            _act_errors.reset(token)
        utterances = []
        for position, (before, after) in enumerate(zip(dialogue.utterances, done.utterances, strict=True)):
            if after is not before:  # annotated in this pass: record the failure, or drop an old one
                annotations = {k: v for k, v in after.annotations.items() if k != ACTS_ERROR}
                if position in errors:
                    annotations.pop(ACTS_SOURCE, None)
                    keys.ACTS_ERROR.put(annotations, errors[position])
                after = after.model_copy(update={"annotations": annotations})
            utterances.append(after)
        return done.model_copy(update={"utterances": utterances})
