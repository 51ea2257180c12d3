"""The domain words of the rule-based reading of CRS text (`crs_text.RuleNLU`): the `nlu` section
of a domain's phrasings (`NLUSpec`, every field with a generic default) compiled once per domain
into a `Vocabulary`: closings, "have you seen it" verbs, slot cues, value words, answer patterns."""

from __future__ import annotations

import re
import weakref
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from crsim.core.errors import DataError
from crsim.language.phrasings import phrasing
from crsim.model.domain import Domain, SlotKind
from crsim.model.items import ItemCollection
from crsim.model.text import STOPWORDS, fold, normalize

_GOODBYE = (
    r"\b(good ?bye|bye|see you|take care|farewell|thanks for (chatting|talking|stopping by)"
    r"|have an? (nice|great|good|lovely|wonderful) (day|evening|night|time|weekend))\b"
    r"|^\W*(enjoy (the|your) ({items}|evening|night)|{closings}have fun)\b"
)
_SEEN_QUESTION = r"\b(have|had|did) you (already |ever )?({verbs})\b"


class InformSpec(BaseModel):
    """Patterns of answers about one slot; group `v` is the value (`names`: a list of person names)."""

    model_config = ConfigDict(extra="forbid")
    patterns: list[str]
    names: bool = False


class DescriptionSpec(BaseModel):
    """Where a description of the item starts ("Here's the plot:"): the rest is the slot's value."""

    model_config = ConfigDict(extra="forbid")
    slot: str
    cue: str


class NLUSpec(BaseModel):
    """The `nlu` section of a domain's phrasings: the words of abus's rule NLU, and the attributes its
    preference model reads; every field has a generic default."""

    model_config = ConfigDict(extra="forbid")
    taste: list[str] | None = Field(
        None,
        description="Item attributes that carry taste in the rating prediction, in order (default: the "
        "attributes of the informable categorical, multi and ordinal slots).",
    )
    text_match: dict[str, str] = Field(
        default_factory=dict,
        description="Slot -> text attribute: a constraint on the slot is also met by its value appearing "
        "in that text (a topic in a plot).",
    )
    item_words: list[str] | None = Field(
        None, description="Nouns for an item in 'Enjoy the ...!' (default: the noun)."
    )
    closings: list[str] = Field(default_factory=list, description="More closing phrases ('enjoy your meal').")
    seen_verbs: list[str] = Field(
        default_factory=lambda: ["been to", "been there", "tried", "visited", "stayed at"],
        description="Verbs of 'Have you ... it?' questions.",
    )
    value_cued: list[str] | None = Field(
        None,
        description="Slots a question elicits by naming one of their values (default: small vocabularies).",
    )
    informs: dict[str, InformSpec] | None = Field(
        None, description="Slot -> answer patterns (default: cues)."
    )
    item_informs: list[str] | None = Field(
        None,
        description="Slots whose values, found in a reply, answer about the item in focus "
        "(default: the requestable ones).",
    )
    description: DescriptionSpec | None = None
    inform_examples: list[str] | None = Field(
        None, description="Two slots the LLM NLU prompt shows as inform examples (default: requestable ones)."
    )


#: Largest vocabulary of a slot whose values, named in a question, elicit it (by default).
SMALL_VOCABULARY = 60


class Vocabulary:
    """The compiled domain words of the rule NLU (one per domain, shared read-only)."""

    def __init__(self, domain: Domain) -> None:
        spec = _spec(phrasing(domain, "nlu"))
        kinds = (SlotKind.CATEGORICAL, SlotKind.MULTI, SlotKind.ORDINAL)
        taste = [s.attribute for s in domain.informable if s.kind in kinds]
        self.taste = tuple(spec.taste if spec.taste is not None else dict.fromkeys(taste))
        self.text_match = dict(spec.text_match)
        items = spec.item_words or [domain.item_noun]
        closings = "".join(f"{re.escape(c)}|" for c in spec.closings)
        self.goodbye = re.compile(_GOODBYE.format(items=_alternation(items), closings=closings))
        self.seen_question = re.compile(_SEEN_QUESTION.format(verbs=_alternation(spec.seen_verbs)))
        self.slot_cues = {
            slot.name: re.compile(rf"\b({_alternation(_forms(slot.cues))})\b")
            for slot in domain.informable
            if slot.cues
        }
        cued = spec.value_cued if spec.value_cued is not None else _small_slots(domain)
        nouns = {normalize(domain.item_noun), normalize(domain.item_noun_plural)}
        self.value_words = {slot: _value_words(domain, slot) - nouns for slot in cued if slot in domain.slots}
        self.informs = _compile_informs(spec.informs, domain)
        self.item_informs = [
            domain.slot(s) for s in (spec.item_informs or list(domain.requestable_slots)) if s in domain.slots
        ]
        self.description = (
            (spec.description.slot, _compile(spec.description.cue)) if spec.description else None
        )
        self.slot_questions = {
            normalize(slot.question): slot.name for slot in domain.informable if slot.question
        }
        examples = spec.inform_examples or list(domain.requestable_slots)[:2]
        self.inform_examples = [f'inform({slot}="...")' for slot in examples]


_VOCABULARIES: weakref.WeakKeyDictionary[ItemCollection, tuple[weakref.ref[Domain], Vocabulary]] = (
    weakref.WeakKeyDictionary()
)


def vocabulary_for(domain: Domain) -> Vocabulary:
    """The rule NLU's vocabulary of a domain, compiled once per domain (keyed by its item collection)."""
    cached = _VOCABULARIES.get(domain.items)
    if cached is None or cached[0]() is not domain:
        cached = _VOCABULARIES[domain.items] = (weakref.ref(domain), Vocabulary(domain))
    return cached[1]


def _spec(raw: Any) -> NLUSpec:
    try:
        return NLUSpec.model_validate(dict(raw or {}))
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise DataError(err["msg"], path="phrasings.nlu", field=field) from None


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise DataError(f"not a regular expression ({exc}): {pattern!r}", field="phrasings.nlu") from None


def _alternation(phrases: list[str]) -> str:
    return "|".join(re.escape(p) for p in phrases)


def _forms(cues: tuple[str, ...]) -> list[str]:
    """Cue phrases and their plurals ("genre" -> "genres", "category" -> "categories")."""
    forms: list[str] = []
    for cue in cues:
        forms += [cue, cue + "s", cue + "es"] + ([cue[:-1] + "ies"] if cue.endswith("y") else [])
    return list(dict.fromkeys(fold(f) for f in forms))


def _small_slots(domain: Domain) -> list[str]:
    """Informable value slots with a small vocabulary: naming a value asks about the slot."""
    kinds = (SlotKind.CATEGORICAL, SlotKind.MULTI, SlotKind.ORDINAL)
    return [
        s.name
        for s in domain.informable
        if s.kind in kinds and 0 < len(domain.values(s.name)) <= SMALL_VOCABULARY
    ]


def _value_words(domain: Domain, slot: str) -> frozenset[str]:
    """A slot's values and their plurals in normalised form (stopwords left out)."""
    values = set(domain.values(slot))
    plurals = {v + "s" for v in values} | {v[:-1] + "ies" for v in values if v.endswith("y")}
    return frozenset({normalize(v) for v in values | plurals} - STOPWORDS)


def _compile_informs(
    informs: dict[str, InformSpec] | None, domain: Domain
) -> list[tuple[str, list[re.Pattern[str]], bool]]:
    """(slot, patterns, names) per slot: the domain's patterns, else "<cue> ... is <value>"."""
    if informs is not None:
        return [(slot, [_compile(p) for p in spec.patterns], spec.names) for slot, spec in informs.items()]
    found = []
    for slot in domain.requestable:
        if slot.cues:
            cue = _alternation(_forms(slot.cues))
            pattern = (
                rf"(?i)\b({cue})\b[^.;!?]{{0,30}}?(\b(is|are|was|were)\b|:)\s*:?\s*"
                r"(?P<v>[^;!?]+?)(?=\.(\s|$)|[;!?]|$)"
            )
            found.append((slot.name, [re.compile(pattern)], False))
    return found
