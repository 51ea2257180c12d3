"""LLM understanding of CRS text (`nlu: llm`), prompted with IARD few-shot examples (`iard_examples`).

As in UserSimCRS v2, a language model reads the CRS utterance and answers with dialogue acts in
the `intent(slot="value")|intent()` form, prompted with examples from the augmented IARD
annotations. Unlike there, the model is asked for crsim's own CRS-side intents (the ones the
interaction model acts on), and, by default, decoding is constrained by a grammar of exactly those
intents and slots. Which items a `recommend` act refers to is not left to the model: titles it
names are resolved against the items the linker finds in the text (the `RuleNLU` contract:
`recommend(title=..., item=id)`, the item in focus excluded). An answer that cannot be read after
one repair is an `LLMOutputError` (the dialogue ends with an error that keeps the raw text).

The examples are a fixed, deterministic selection (`iard_examples.build_iard_examples`) shipped in
`data/iard_nlu_examples.json` (CRS side) and `data/iard_nlg_examples.json` (user side).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from crsim.core.seeding import derive_seed
from crsim.language.crs_text import MAX_VALUE_CHARS, NLUResult, RuleNLU
from crsim.language.domain_cues import prompt_words
from crsim.language.nlu_vocabulary import vocabulary_for
from crsim.llm.client import LLM
from crsim.llm.grammar import acts_grammar
from crsim.llm.prompts import load_template, render
from crsim.llm.structured import generate_structured, parse_act_answer
from crsim.llm.types import GenerationConfig, Message, user
from crsim.model.acts import DialogueAct, Intent
from crsim.model.domain import Domain
from crsim.model.linking import heard_titles
from crsim.model.text import normalize, split_title_year, unarticle
from crsim.sim.agenda.iard_examples import EXAMPLE_FILES, load_examples, usable_examples

#: The CRS-side intents the interaction model acts on: what the model may answer with.
CRS_INTENTS: tuple[str, ...] = (
    Intent.GREETING,
    Intent.ELICIT,
    Intent.RECOMMEND,
    Intent.INFORM,
    Intent.ASK,
    Intent.GOODBYE,
    Intent.OTHER,
)
#: Slots of CRS acts besides the domain's informable and requestable ones.
EXTRA_CRS_SLOTS: tuple[str, ...] = ("title", "seen")
#: Most acts the model may give for one utterance (the grammar's bound).
MAX_ACTS = 4
_ACTS_FORMAT = 'dialogue acts like intent(slot="value")|intent(slot), with the intents and slots listed'


# --- the NLU ------------------------------------------------------------------------------------


class LLMNLU:
    """Dialogue acts of CRS utterances from a language model, items from the linker.

    `seed` is the dialogue's: call n samples with `derive_seed(seed, "nlu", n)`, so a dialogue is
    reproducible on providers that honour seeds. `constrain` sends the acts grammar (GBNF) of
    `intents` and the domain's slots; without it the answer is checked against them afterwards.
    """

    def __init__(
        self,
        llm: LLM,
        domain: Domain,
        seed: int,
        *,
        examples: int = 24,
        constrain: bool = True,
        temperature: float | None = 0.0,
        prompt: str = "nlu.jinja2",
        example_file: str = EXAMPLE_FILES["crs"],
    ) -> None:
        self.llm, self.domain, self.seed = llm, domain, seed
        self.constrain, self.temperature = constrain, temperature
        self.intents = CRS_INTENTS
        self.slots = crs_slots(domain)
        self.template = prompt_template(prompt)
        shipped = load_examples(example_file).examples
        self.examples = usable_examples(shipped, self.intents, self.slots)[:examples]
        self.grammar = acts_grammar(self.intents, self.slots, max_acts=MAX_ACTS) if constrain else None
        self._linker_nlu = RuleNLU(domain)
        self._calls = 0

    def messages(self, text: str, items_hint: list[str]) -> list[Message]:
        """The prompt for one utterance (a single user message)."""
        focus = self.domain.items.get(items_hint[-1]) if items_hint else None
        prompt = render(
            self.template,
            intents=self.intents,
            slots=self.slots,
            informable=list(self.domain.informable_slots),
            examples=self.examples,
            focus_title=focus.display_title if focus else None,
            utterance=text,
            inform_examples=vocabulary_for(self.domain).inform_examples,
            **prompt_words(self.domain),
        )
        return [user(prompt)]

    async def understand(self, text: str, items_hint: list[str]) -> NLUResult:
        """The acts of `text`; an empty utterance has none (and costs no call)."""
        if not text or not text.strip():
            return NLUResult([])
        self._calls += 1
        config = GenerationConfig(
            temperature=self.temperature,
            seed=derive_seed(self.seed, "nlu", self._calls) % 2**31,
            grammar=self.grammar,
        )
        result = await generate_structured(
            self.llm,
            self.messages(text, items_hint),
            self._read,
            config,
            describe=_ACTS_FORMAT,
        )
        answer = result.unwrap()
        acts, unlinked = self._with_items(self._normalised(answer), text, items_hint)
        notes: dict[str, Any] = {"nlu_raw": result.raw}
        if result.repaired:
            notes["nlu_repaired"] = True
        if unlinked:
            notes["nlu_unlinked_titles"] = unlinked
        return NLUResult(acts, notes)

    def _read(self, raw: str) -> list[DialogueAct]:
        """Parse an answer; unknown intents or slots are errors (they trigger the one repair)."""
        acts = parse_act_answer(raw)
        if not acts:
            raise ValueError("no dialogue act in the answer")
        for act in acts:
            if act.intent not in self.intents:
                raise ValueError(f"unknown intent {act.intent!r}; expected one of {', '.join(self.intents)}")
            unknown = [s for s, _ in act.slots if s not in self.slots]
            if unknown:
                raise ValueError(
                    f"unknown slot {unknown[0]!r} in {act.intent}(); expected one of {', '.join(self.slots)}"
                )
        return acts

    def _normalised(self, acts: list[DialogueAct]) -> list[DialogueAct]:
        """Elicitations name informable slots only (an elicitation of anything else is a generic
        `elicit()`), without values; long values are cut; duplicates are dropped."""
        informable = set(self.domain.informable_slots)
        out: list[DialogueAct] = []
        for act in acts:
            if act.intent == Intent.ELICIT:
                slots = list(dict.fromkeys(s for s, _ in act.slots if s in informable))
                act = DialogueAct(intent=act.intent, slots=[(s, None) for s in slots])
            elif any(v is not None and len(v) > MAX_VALUE_CHARS for _, v in act.slots):
                act = DialogueAct(
                    intent=act.intent, slots=[(s, v[:MAX_VALUE_CHARS] if v else v) for s, v in act.slots]
                )
            out.append(act)
        return list({str(a): a for a in out}.values())

    def _with_items(
        self, acts: list[DialogueAct], text: str, items_hint: list[str]
    ) -> tuple[list[DialogueAct], list[str]]:
        """Replace the model's `recommend` acts by `recommend(title=..., item=id)` of linked items.

        A title the model gave is resolved against the items linked in `text`, or, failing that,
        to a catalogue item whose title is written in the text. A `recommend` without a title
        stands for the items the rule NLU would read as recommended. The item in focus is never a
        new recommendation. Titles that resolve to nothing are returned (for the record) and
        dropped, so the policy never acts on an unlinked guess.
        """
        given = [a for a in acts if a.intent == Intent.RECOMMEND]
        if not given:
            return acts, []
        focus = items_hint[-1] if items_hint else None
        mentioned = list(dict.fromkeys(m.item_id for m in heard_titles(self.domain.items, text)))
        ids: list[str] = []
        unlinked: list[str] = []
        for act in given:
            titles = [v for s, v in act.slots if s == "title" and v]
            if not titles:
                rule_acts = self._linker_nlu.parse(text, items_hint)
                ids.extend(i for a in rule_acts if a.intent == Intent.RECOMMEND and (i := a.value("item")))
            for title in titles:
                item_id = self._resolve(title, mentioned, text)
                if item_id is None:
                    unlinked.append(title)
                else:
                    ids.append(item_id)
        recommendations = [
            DialogueAct(
                intent=Intent.RECOMMEND, slots=[("title", self.domain.items[i].display_title), ("item", i)]
            )
            for i in dict.fromkeys(ids)
            if i != focus
        ]
        first = acts.index(given[0])
        rest = [a for a in acts if a.intent != Intent.RECOMMEND]
        return rest[:first] + recommendations + rest[first:], unlinked

    def _resolve(self, title: str, mentioned: list[str], text: str) -> str | None:
        """The item a title names: a linked mention with that title (and year, if given), else the
        catalogue's best match provided its title is written in the text."""
        name, year = split_title_year(title)
        key = normalize(unarticle(name))
        for item_id in mentioned:
            item = self.domain.items[item_id]
            if normalize(unarticle(item.title)) == key and (year is None or item.year == year):
                return item_id
        mention = self.domain.items.linker.match_title(title)
        if mention is None:
            return None
        written = normalize(unarticle(self.domain.items[mention.item_id].title))
        return mention.item_id if f" {written} " in f" {normalize(text)} " else None


def prompt_template(name: str) -> jinja2.Template:
    """A template shipped in `prompts/` by file name, or any template file by path."""
    return load_template("crsim.sim.agenda", name if Path(name).is_file() else f"prompts/{name}")


def crs_slots(domain: Domain) -> list[str]:
    """The slots of CRS acts: the informable and requestable slots, `title` and `seen`."""
    return list(dict.fromkeys([*domain.informable_slots, *domain.requestable_slots, *EXTRA_CRS_SLOTS]))
