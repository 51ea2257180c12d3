"""LLM generation of user utterances (`nlg: llm`): the policy's acts, worded by a language model.

As in UserSimCRS v2, a jinja2 prompt carries the dialogue acts chosen by the interaction model and
optional annotations: a speaking `style` (e.g. an emotion), the user's persona, and the policy's
notes on the turn (e.g. `outcome` when the user gives up). Item titles are written into the prompt
exactly as the acts give them, and the model is told to copy them; whether it did is recorded
(`nlg_missing_titles`). A few IARD user utterances with their acts show how people phrase them.
The answer is cut to its first non-empty line, without a speaker label or quotes
(`crsim.sim.shared.utterance`); an empty answer, after one repair, is an `LLMOutputError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crsim.core.seeding import derive_seed
from crsim.llm.client import LLM
from crsim.llm.prompts import render
from crsim.llm.structured import generate_structured
from crsim.llm.types import GenerationConfig, Message, user
from crsim.model.acts import DialogueAct, Intent, format_acts
from crsim.model.text import fold
from crsim.sim.agenda.iard_examples import EXAMPLE_FILES, load_examples
from crsim.sim.agenda.llm_nlu import prompt_template
from crsim.sim.shared.nlg import NLGContext, NLGResult
from crsim.sim.shared.utterance import clean_utterance


def parse_utterance(raw: str) -> str:
    """The first line of the user's words in an answer (`clean_utterance` with `first_line`); a
    ValueError when nothing is left, so that the structured call repairs once, then fails."""
    text = clean_utterance(raw, first_line=True).text
    if not text:
        raise ValueError("the answer is empty; expected the user's message")
    return text


class LLMNLG:
    """User utterances from a language model; call n samples with `derive_seed(seed, "nlg", n)`."""

    def __init__(
        self,
        llm: LLM,
        seed: int,
        *,
        style: str | None = None,
        examples: int = 6,
        prompt: str = "nlg.jinja2",
        example_file: str = EXAMPLE_FILES["user"],
        words: Mapping[str, str] | None = None,
    ) -> None:
        self.llm, self.seed, self.style = llm, seed, style
        #: The domain's words the prompt names items with (`crsim.language.domain_cues.prompt_words`).
        self.words = dict(words or {"item": "item", "items": "items", "consume": "try", "seen": "tried"})
        self.template = prompt_template(prompt)
        self.examples = load_examples(example_file).examples[:examples]
        self._calls = 0

    def messages(self, acts: list[DialogueAct], context: NLGContext) -> list[Message]:
        """The prompt for one utterance (a single user message)."""
        prompt = render(
            self.template,
            acts=[_act_view(a, context) for a in acts],
            acts_text=format_acts(acts),
            intents=[str(a.intent) for a in acts],
            titles=titles_of(acts, context),
            acknowledge=context.acknowledge,
            crs_text=context.crs_text,
            persona=dict(context.persona),
            annotations=dict(context.annotations),
            style=self.style,
            examples=self.examples,
            **self.words,
        )
        return [user(prompt)]

    async def realize(self, acts: list[DialogueAct], context: NLGContext) -> NLGResult:
        """The utterance for `acts`; notes keep the raw answer when it was cleaned, and missing titles."""
        self._calls += 1
        config = GenerationConfig(seed=derive_seed(self.seed, "nlg", self._calls) % 2**31, stop=("\n\n",))
        result = await generate_structured(
            self.llm,
            self.messages(acts, context),
            parse_utterance,
            config,
            describe="the user's message as plain text on one line",
        )
        text = result.unwrap()
        notes: dict[str, Any] = {}
        if result.raw.strip() != text:
            notes["nlg_raw"] = result.raw
        if result.repaired:
            notes["nlg_repaired"] = True
        missing = [t for t in titles_of(acts, context) if fold(t) not in fold(text)]
        if missing:
            notes["nlg_missing_titles"] = missing
        return NLGResult(text, notes)


def titles_of(acts: list[DialogueAct], context: NLGContext) -> list[str]:
    """The item titles the utterance is to name: those in the acts, and the item an inquiry is about."""
    titles = [v for a in acts for s, v in a.slots if s == "title" and v]
    if context.focus_title and any(a.intent == Intent.INQUIRE and not a.value("title") for a in acts):
        titles.append(context.focus_title)
    return list(dict.fromkeys(titles))


def _act_view(act: DialogueAct, context: NLGContext) -> dict[str, Any]:
    """What the template needs of one act: intent, slot names, values per slot, title, string form."""
    values: dict[str, list[str]] = {}
    for slot, value in act.slots:
        if slot != "title":
            values.setdefault(slot, [])
            if value is not None:
                values[slot].append(value)
    title = act.value("title")
    if title is None and act.intent == Intent.INQUIRE:
        title = context.focus_title
    return {"intent": str(act.intent), "slots": values, "title": title, "text": str(act)}
