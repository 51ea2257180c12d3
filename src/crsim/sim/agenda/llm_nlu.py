"""LLM understanding of CRS text (`nlu: llm`), and the IARD few-shot examples it is prompted with.

As in UserSimCRS v2, a language model reads the CRS utterance and answers with dialogue acts in
the `intent(slot="value")|intent()` form, prompted with examples from the augmented IARD
annotations. Unlike there, the model is asked for crsim's own CRS-side intents (the ones the
interaction model acts on), and, by default, decoding is constrained by a grammar of exactly those
intents and slots. Which items a `recommend` act refers to is not left to the model: titles it
names are resolved against the items the linker finds in the text (the `RuleNLU` contract:
`recommend(title=..., item=id)`, the item in focus excluded). An answer that cannot be read after
one repair is an `LLMOutputError` (the dialogue ends with an error that keeps the raw text).

The examples are a fixed, deterministic selection (`build_iard_examples`) shipped in
`data/iard_nlu_examples.json` (CRS side) and `data/iard_nlg_examples.json` (user side).
"""

from __future__ import annotations

import gzip
import html
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal

import jinja2
from pydantic import BaseModel, ConfigDict, Field

from crsim.crs.cues import prompt_words
from crsim.data.datasets.intents import IARD_CRS_INTENTS, IARD_USER_INTENTS, map_slot
from crsim.errors import ConfigError, DataError
from crsim.llm.client import LLM
from crsim.llm.grammar import acts_grammar
from crsim.llm.prompts import load_template, render
from crsim.llm.structured import generate_structured, parse_act_answer
from crsim.llm.types import GenerationConfig, Message, user
from crsim.model.acts import DialogueAct, Intent, SlotValue, format_acts, parse_acts
from crsim.model.domain import Domain
from crsim.model.linking import heard_titles
from crsim.model.text import fold, normalize, split_title_year, unarticle
from crsim.seeding import derive_seed
from crsim.sim.agenda.nlu import MAX_VALUE_CHARS, NLUResult, RuleNLU, vocabulary_for

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

Side = Literal["crs", "user"]

# --- few-shot examples from IARD ----------------------------------------------------------------

IARD_SOURCE = (
    "iai-group/UserSimCRS (HEAD), data/datasets/iard/formatted_IARD_annotated_gold.json "
    "(also tests/fixtures/iard/formatted_IARD_annotated_gold.json.gz)"
)
IARD_LICENCE = (
    "UserSimCRS data: Apache-2.0. IARD labels (Cai and Chen, UMAP 2020, wanlingcai1997/umap_2020_IARD): "
    "MIT, with research-use conditions. Utterances from ReDial (Li et al., NeurIPS 2018): CC BY 4.0."
)
#: An IARD `OTH` utterance (greetings, thanks, chit-chat) opening like this is a greeting.
_GREETING_START = re.compile(r"^\W*(hi+|hel+o+|hey+|hiya|howdy|greetings|good (morning|afternoon|evening))\b")
#: IARD slot (as crsim names it) -> the slot of an elicitation or a disclosure (a year range is a decade).
_PREFERENCE_SLOTS = {
    "genre": "genre",
    "actor": "actor",
    "director": "director",
    "keyword": "keyword",
    "year": "decade",
}
#: Slots kept on other acts (`inform`, `reject`, ...); IARD's RATING and OTHER have no crsim counterpart.
_VALUE_SLOTS = frozenset({"title", "genre", "actor", "director", "keyword", "plot", "year"})


class FewShotExample(BaseModel):
    """One annotated utterance: its text and its acts in crsim's vocabulary (string form)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="'<conversation id>:<utterance index>' in the source file.")
    labels: list[str] = Field(description="The source's own intent labels, in order.")
    text: str
    acts: str

    def parsed(self) -> list[DialogueAct]:
        return parse_acts(self.acts)


class ExampleSet(BaseModel):
    """A shipped selection of few-shot examples with where it came from and how it was chosen."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Side = Field(description="Whose utterances: 'crs' (for the NLU) or 'user' (for the NLG).")
    source: str
    licence: str
    selection: str
    intent_mapping: dict[str, str]
    examples: list[FewShotExample]


def iard_intent(label: str, text: str, role: Side) -> str:
    """The crsim intent of an IARD label: the tables of `crsim.data.datasets.intents`, except that
    an `OTH` utterance opening with a greeting word is a `greeting` (IARD has no greeting label)."""
    table = IARD_CRS_INTENTS if role == "crs" else IARD_USER_INTENTS
    if label not in table:
        raise KeyError(f"unknown IARD {role} label {label!r}")
    if label == "OTH" and _GREETING_START.search(fold(text)):
        return Intent.GREETING
    return table[label]


def iard_acts(text: str, dialogue_acts: Iterable[dict[str, Any]], role: Side) -> list[DialogueAct]:
    """The crsim acts of one annotated IARD utterance (see `intent_mapping_notes` for the rules)."""
    acts: list[DialogueAct] = []
    for annotated in dialogue_acts:
        intent = iard_intent(str(annotated["intent"]), text, role)
        pairs = [(map_slot(str(sv[0])), sv[1]) for sv in annotated.get("slot_values") or []]
        acts.extend(_mapped_acts(intent, pairs))
    return list({str(a): a for a in acts}.values())


def _mapped_acts(intent: str, pairs: list[tuple[str, str | None]]) -> list[DialogueAct]:
    if intent == Intent.RECOMMEND:
        return [DialogueAct(intent=intent, slots=[("title", v)]) for s, v in pairs if s == "title" and v]
    if intent == Intent.ELICIT:
        slots = list(dict.fromkeys(_PREFERENCE_SLOTS[s] for s, _ in pairs if s in _PREFERENCE_SLOTS))
        return [DialogueAct(intent=intent, slots=[(s, None) for s in slots])]
    if intent == Intent.REQUEST_RECOMMENDATION:
        wanted = [(_PREFERENCE_SLOTS[s], v) for s, v in pairs if s in _PREFERENCE_SLOTS and v]
        request = DialogueAct(intent=intent)
        return [request, DialogueAct(intent=Intent.DISCLOSE, slots=wanted)] if wanted else [request]
    if intent == Intent.DISCLOSE:
        kept = [(_PREFERENCE_SLOTS.get(s, s), v) for s, v in pairs if s in _VALUE_SLOTS and v]
        return [DialogueAct(intent=intent, slots=kept)]
    if intent in (Intent.GREETING, Intent.GOODBYE, Intent.OTHER):
        return [DialogueAct(intent=intent)]
    others: list[SlotValue] = [(s, v[:MAX_VALUE_CHARS] if v else v) for s, v in pairs if s in _VALUE_SLOTS]
    return [DialogueAct(intent=intent, slots=others)]


def intent_mapping_notes(role: Side) -> dict[str, str]:
    """IARD label -> crsim intent, with the slot rules, as recorded in the shipped example files."""
    table = IARD_CRS_INTENTS if role == "crs" else IARD_USER_INTENTS
    notes = {label: str(intent) for label, intent in table.items()}
    notes["OTH"] = "greeting if the utterance opens with a greeting word, else other"
    notes["slots"] = (
        "recommend: one act per TITLE value, other slots dropped; elicit: slot names only, GENRE/ACTOR/"
        "DIRECTOR/KEYWORDS kept and YEAR read as decade, others (TITLE, OTHER) dropped; "
        "request_recommendation with preference values: followed by disclose(those values); "
        "disclose: YEAR read as decade; other acts keep TITLE/GENRE/ACTOR/DIRECTOR/KEYWORDS/PLOT/YEAR "
        "(KEYWORDS as keyword; RATING and OTHER dropped); greeting/goodbye/other carry no slots."
    )
    return notes


def build_iard_examples(
    path: Path, role: Side, *, per_label: int = 4, min_chars: int = 12, max_chars: int = 160
) -> ExampleSet:
    """A deterministic selection of annotated IARD utterances of one side, mapped to crsim acts.

    Candidates: utterances of `role` (IARD's AGENT for 'crs', USER for 'user'; HTML entities
    decoded, whitespace collapsed) of `min_chars`..`max_chars` characters whose mapped acts are
    non-empty (for the user side also without `other`, which says nothing an NLG could express).
    They are visited in an order fixed by `derive_seed("iard-few-shot", conversation, index)`; one
    is kept while any of its labels has fewer than `per_label` examples. The kept ones are listed
    round-robin over the labels (alphabetical), so any prefix covers as many labels as it can.
    """
    participant = "AGENT" if role == "crs" else "USER"
    candidates: list[FewShotExample] = []
    for conversation in _read_json(path):
        for index, utterance in enumerate(conversation["conversation"]):
            text = " ".join(html.unescape(str(utterance["utterance"])).split())
            if utterance["participant"] != participant or not min_chars <= len(text) <= max_chars:
                continue
            annotated = utterance.get("dialogue_acts") or []
            acts = iard_acts(text, annotated, role)
            if not acts or (role == "user" and any(a.intent == Intent.OTHER for a in acts)):
                continue
            labels = [str(a["intent"]) for a in annotated]
            ident = f"{conversation['conversation_id']}:{index}"
            candidates.append(FewShotExample(id=ident, labels=labels, text=text, acts=format_acts(acts)))
    candidates.sort(key=lambda e: derive_seed("iard-few-shot", *e.id.split(":")))
    counts: Counter[str] = Counter()
    kept: list[FewShotExample] = []
    for example in candidates:
        if any(counts[label] < per_label for label in example.labels):
            kept.append(example)
            counts.update(set(example.labels))
    return ExampleSet(
        role=role,
        source=IARD_SOURCE,
        licence=IARD_LICENCE,
        selection=(
            f"crsim.sim.agenda.llm_nlu.build_iard_examples(path, {role!r}, per_label={per_label}, "
            f"min_chars={min_chars}, max_chars={max_chars})"
        ),
        intent_mapping=intent_mapping_notes(role),
        examples=_round_robin(kept),
    )


def _round_robin(examples: list[FewShotExample]) -> list[FewShotExample]:
    labels = sorted({label for e in examples for label in e.labels})
    ordered: list[FewShotExample] = []
    remaining = list(examples)
    while remaining:
        for label in labels:
            chosen = next((e for e in remaining if label in e.labels), None)
            if chosen is not None:
                ordered.append(chosen)
                remaining.remove(chosen)
    return ordered


def _read_json(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, list):
        raise DataError("expected a list of conversations", path=str(path))
    return data


#: Shipped example files, by role.
EXAMPLE_FILES: dict[Side, str] = {"crs": "iard_nlu_examples.json", "user": "iard_nlg_examples.json"}


def write_iard_examples(source: Path, folder: Path) -> list[Path]:
    """Rebuild the shipped example files from the IARD gold annotations (how they were made)."""
    written = []
    for role, name in EXAMPLE_FILES.items():
        per_label = 4 if role == "crs" else 3
        target = folder / name
        target.write_text(
            build_iard_examples(source, role, per_label=per_label).model_dump_json(indent=1) + "\n"
        )
        written.append(target)
    return written


@cache
def load_examples(name: str) -> ExampleSet:
    """A shipped example file (`data/<name>`) or a JSON file by path; parsed once per process."""
    path = Path(name)
    if path.suffix and path.is_file():
        text, where = path.read_text(encoding="utf-8"), str(path)
    else:
        resource = files("crsim.sim.agenda").joinpath(f"data/{name}")
        if not resource.is_file():
            raise ConfigError(
                f"few-shot examples {name!r}: neither a file nor shipped in crsim/sim/agenda/data"
            )
        text, where = resource.read_text(encoding="utf-8"), f"crsim/sim/agenda/data/{name}"
    try:
        return ExampleSet.model_validate_json(text)
    except ValueError as exc:
        raise DataError(f"not a few-shot example file: {exc}", path=where) from None


def usable_examples(
    examples: Sequence[FewShotExample], intents: Iterable[str], slots: Iterable[str]
) -> list[FewShotExample]:
    """The examples whose acts stay within `intents` and `slots` (a prompt must not show others)."""
    allowed_intents, allowed_slots = set(intents), set(slots)
    return [
        e
        for e in examples
        if all(
            a.intent in allowed_intents and all(s in allowed_slots for s, _ in a.slots) for a in e.parsed()
        )
    ]


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
