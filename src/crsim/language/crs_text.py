"""Rule-based understanding of CRS text: the dialogue acts a simulated user reads out of a reply.

The simulator is a black-box user, so it understands the CRS only from its text. Rules:

* `recommend(title=..., item=id)`: item titles heard in the text (`crsim.model.linking.heard_titles`,
  the rule every simulator shares), unless
  the sentence is an answer about an item already under discussion (an `inform` whose titles
  are all in `items_hint`), the title is the item in focus (`items_hint[-1]`: "I don't have
  details about X"), or it lies inside a plot description.
* `elicit(slot)`: a question (or "tell me ...") with one of the slot's cue words (the domain's
  slot cues, plural forms included: movies "genre"/"kind" -> genre, "actor"/"cast" -> actor; a
  restaurant domain "food"/"cuisine" -> food), or naming one of the values of a slot with a small
  vocabulary ("Do you like comedies?" -> genre). A preference question without cue ("What are you
  looking for?") is `elicit()` without slot, dropped when the same reply also elicits a slot.
  A question that is a slot's own `question` in the domain file elicits that slot.
* `ask(alternatives="...")`: a question offering alternatives ("Would you like an American,
  European or Japanese car?"), the question as its value: the user picks one or has no preference,
  it never answers a bare yes.
* `ask()`: other yes/no questions ("Would you like something else?"); `ask(seen)` for
  "Have you seen it?" (the domain's words for knowing an item).
* `inform(slot="value")`: answers about an item: a requestable slot's cue followed by "is ..."
  ("The phone number is ..."), the domain's own patterns (movies: "directed by X", "It stars X, Y",
  "It came out in 1995", "Here's the plot: ..."). Failing a pattern, values of the item in focus
  (`items_hint[-1]`) found in a reply that recommends nothing count as an answer.
* `greeting` and `goodbye` (including "Enjoy the <item>!").

Domain words come from the domain: the slots' cues and the `nlu` section of its phrasings
(`NLUSpec`, the `nlu` section); the defaults are built from the item noun and the slots.

Several acts may come out of one utterance; garbage yields an empty list, never an error.
"""

from __future__ import annotations

import itertools
import re
import weakref
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from crsim.core.errors import DataError
from crsim.language.message_rules import sentence_ends
from crsim.language.phrasings import phrasing
from crsim.model.acts import DialogueAct, Intent
from crsim.model.domain import Domain, SlotKind
from crsim.model.items import ItemCollection
from crsim.model.linking import Mention, heard_titles
from crsim.model.text import STOPWORDS, fold, normalize

#: Longest value kept for an `inform` (plots can be long; acts end up in annotations).
MAX_VALUE_CHARS = 200


@dataclass(frozen=True)
class NLUResult:
    """The acts read from one CRS utterance, plus `notes` for the record (e.g. an LLM's raw answer)."""

    acts: list[DialogueAct]
    notes: dict[str, Any] = field(default_factory=dict)


class NLU(Protocol):
    """Turns one CRS utterance into dialogue acts; `items_hint` are ids under discussion, focus last.

    Async because an understanding component may call a language model."""

    async def understand(self, text: str, items_hint: list[str]) -> NLUResult: ...


_GREETING = re.compile(r"^\W*(hi|hello|hey|hiya|howdy|greetings|good (morning|afternoon|evening)|welcome)\b")
_GOODBYE = (
    r"\b(good ?bye|bye|see you|take care|farewell|thanks for (chatting|talking|stopping by)"
    r"|have an? (nice|great|good|lovely|wonderful) (day|evening|night|time|weekend))\b"
    r"|^\W*(enjoy (the|your) ({items}|evening|night)|{closings}have fun)\b"
)
_REQUEST_CUE = re.compile(
    r"\b(tell me|let me know|i'd (like|love) to know|i would (like|love) to know|share)\b"
)
_ANOTHER = re.compile(
    r"\b(another|something else|anything else|else|more|other (one|options?|suggestions?))\b"
)
_SEEN_QUESTION = r"\b(have|had|did) you (already |ever )?({verbs})\b"
_YES_NO_START = re.compile(
    r"^\W*(would|do|does|did|have|has|can|could|shall|should|is|are|was|were|will|want|may|need)\b"
)
_GENERIC_ELICIT = re.compile(
    r"\b(looking for|in the mood|mood for|feel like|you (like|love|enjoy|prefer|want)|interested in"
    r"|into|your (taste|tastes|preference|preferences|favou?rites?)|what (else )?do you)\b"
)
#: Alternatives offered in a question: "x, y or z", "x or y" (not "or not", "or something else").
_ALTERNATIVES = re.compile(
    r"\b[\w'-]+(?:,\s*[\w' -]+)*,?\s+or\s+(?!not\b|something\b|anything\b|else\b)[\w'-]+"
)
_NAME = re.compile(r"[A-Z][\w'.\-]*(?:\s+(?:[A-Z][\w'.\-]*|de|van|von|da|del|di|du|la|le|der))*")
_NAME_STOP = {"It", "The", "This", "That", "He", "She", "They", "And", "A", "An", "I", "You"}


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


class RuleNLU:
    """Cue words and patterns over sentences plus item linking over the whole text."""

    def __init__(self, domain: Domain) -> None:
        self._domain = domain
        self._items = domain.items
        self._vocabulary = vocabulary_for(domain)
        self._informable = set(domain.informable_slots)

    def parse(self, text: str, items_hint: list[str]) -> list[DialogueAct]:
        """All acts found in `text`, in the order greeting, recommend, inform, elicit, ask, goodbye."""
        if not text or not text.strip():
            return []
        mentions = heard_titles(self._items, text)
        plot_start, plot_value = _find_description(text, self._vocabulary.description)
        sentences = _sentences(text, mentions)
        found: dict[str, list[DialogueAct]] = {
            k: [] for k in ("greet", "rec", "inform", "elicit", "ask", "bye")
        }
        for start, end in sentences:
            in_plot = (
                plot_start is not None and start >= plot_start and not text[start:end].rstrip().endswith("?")
            )
            if in_plot:
                continue
            own = [m for m in mentions if start <= m.start < end]
            self._sentence(text[start:end], own, items_hint, found)
        if plot_value and self._vocabulary.description:
            found["inform"].append(_inform(self._vocabulary.description[0], [plot_value]))
        if not found["inform"] and not found["rec"] and items_hint:
            found["inform"] = self._informs_from_item(text, items_hint[-1], mentions)
        if any(a.slots for a in found["elicit"]):
            found["elicit"] = [a for a in found["elicit"] if a.slots]
        return _dedupe([a for k in ("greet", "rec", "inform", "elicit", "ask", "bye") for a in found[k]])

    async def understand(self, text: str, items_hint: list[str]) -> NLUResult:
        """`parse` behind the async `NLU` interface (`parse` stays sync for the rule annotator)."""
        return NLUResult(self.parse(text, items_hint))

    def _sentence(
        self, sentence: str, mentions: list[Mention], hint: list[str], found: dict[str, list[DialogueAct]]
    ) -> None:
        folded = fold(sentence).strip()
        if _GREETING.search(folded):
            found["greet"].append(DialogueAct(intent=Intent.GREETING))
        if self._vocabulary.goodbye.search(folded):
            found["bye"].append(DialogueAct(intent=Intent.GOODBYE))
        informs = _informs(_without_mentions(sentence, mentions), self._vocabulary.informs)
        found["inform"].extend(informs)
        about_known = bool(informs) and all(m.item_id in hint for m in mentions)
        focus = hint[-1] if hint else None
        if mentions and not about_known:
            for mention in (m for m in mentions if m.item_id != focus):
                title = self._items[mention.item_id].display_title
                found["rec"].append(
                    DialogueAct(intent=Intent.RECOMMEND, slots=[("title", title), ("item", mention.item_id)])
                )
        if not _is_question(sentence, folded):
            return
        if self._vocabulary.seen_question.search(folded):
            found["ask"].append(DialogueAct(intent=Intent.ASK, slots=[("seen", None)]))
        elif not mentions:
            for act in self._question(folded):
                found["elicit" if act.intent == Intent.ELICIT else "ask"].append(act)

    def _question(self, folded: str) -> list[DialogueAct]:
        """Elicitations (with the cued slots, or none) or a yes/no `ask()` for one question."""
        another = _ANOTHER.search(folded) is not None
        own = self._vocabulary.slot_questions.get(normalize(folded))
        if own is not None and own in self._informable:
            return [DialogueAct(intent=Intent.ELICIT, slots=[(own, None)])]
        cues = self._vocabulary.slot_cues
        slots = [s for s, cue in cues.items() if s in self._informable and cue.search(folded)]
        if not slots and not another:
            slots = self._mentioned_value_slots(folded)
        if slots:
            return [DialogueAct(intent=Intent.ELICIT, slots=[(s, None)]) for s in slots]
        yes_no = _YES_NO_START.search(folded) is not None
        if yes_no and not another and _ALTERNATIVES.search(folded):
            return [DialogueAct(intent=Intent.ASK, slots=[("alternatives", folded[:MAX_VALUE_CHARS])])]
        if _GENERIC_ELICIT.search(folded) and not another and not yes_no:
            return [DialogueAct(intent=Intent.ELICIT)]
        return [DialogueAct(intent=Intent.ASK)] if yes_no or another else []

    def _mentioned_value_slots(self, folded: str) -> list[str]:
        """Slots one of whose values (or their plurals) the question names ("any comedies?")."""
        words = normalize(folded).split()
        pairs = {f"{a} {b}" for a, b in itertools.pairwise(words)}
        return [
            slot
            for slot, known in self._vocabulary.value_words.items()
            if slot in self._informable and (any(w in known for w in words) or any(p in known for p in pairs))
        ]

    def _informs_from_item(self, text: str, item_id: str, mentions: list[Mention]) -> list[DialogueAct]:
        """Answers recognised by the focus item's own attribute values appearing in the text: names
        and words (longer than 3 characters), numbers as whole words, long texts by their start."""
        item = self._items.get(item_id)
        if item is None:
            return []
        folded = fold(_without_mentions(text, mentions))
        acts = []
        for slot in self._vocabulary.item_informs:
            values = item.values(slot.attribute)
            hits = [v for v in values if _appears(v, folded, long_text=slot.kind is SlotKind.TEXT)]
            if hits:
                acts.append(_inform(slot.name, hits))
        return acts


def _appears(value: str, folded: str, long_text: bool = False) -> bool:
    """Whether an item's value appears in folded text: long texts (over 30 characters) by their start."""
    if long_text and len(value) > 30:
        return fold(value[:30]) in folded
    if value.isdigit():
        return re.search(rf"\b{value}\b", folded) is not None
    return len(value) > 3 and fold(value) in folded


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


def _sentences(text: str, mentions: list[Mention]) -> list[tuple[int, int]]:
    """Sentence spans (`crsim.language.message_rules.sentence_ends`); never split inside a linked
    title ("L.A. Confidential")."""
    spans, start = [], 0
    for end in sentence_ends(text, [(m.start, m.end) for m in mentions]):
        if text[start:end].strip():
            spans.append((start, end))
        start = end
    if text[start:].strip():
        spans.append((start, len(text)))
    return spans


def _is_question(sentence: str, folded: str) -> bool:
    return sentence.rstrip().endswith("?") or bool(_REQUEST_CUE.search(folded))


def _find_description(
    text: str, description: tuple[str, re.Pattern[str]] | None
) -> tuple[int | None, str | None]:
    """Where a description of the item (a plot) starts and its text (up to a closing question)."""
    if description is None:
        return None, None
    match = description[1].search(text)
    if match is None:
        return None, None
    rest = text[match.end() :]
    question = re.search(r"(?<=[.!])\s+[^.!?]*\?\s*$", rest)
    value = (rest[: question.start()] if question else rest).strip()
    if not value or value.endswith("?"):
        return None, None
    return match.start(), value[:MAX_VALUE_CHARS]


def _without_mentions(text: str, mentions: list[Mention]) -> str:
    """The text with linked titles blanked, so "Heat (1995)" is not read as a release year."""
    for mention in sorted(mentions, key=lambda m: -m.start):
        if 0 <= mention.start < mention.end <= len(text):
            text = text[: mention.start] + " " * (mention.end - mention.start) + text[mention.end :]
    return text


def _informs(sentence: str, informs: list[tuple[str, list[re.Pattern[str]], bool]]) -> list[DialogueAct]:
    acts = []
    for slot, patterns, names in informs:
        for pattern in patterns:
            match = pattern.search(sentence)
            if match is None:
                continue
            raw = match.group("v")
            values = _names(raw) if names else [raw.strip()]
            if values:
                acts.append(_inform(slot, values))
                break
    return acts


def _names(raw: str) -> list[str]:
    """Person names (capitalised runs) in a list such as "Al Pacino, Robert De Niro and Val Kilmer"."""
    names = []
    for match in _NAME.finditer(raw):
        name = match.group().strip(" .'-")
        if name and name not in _NAME_STOP:
            names.append(name)
    return names[:8]


def _inform(slot: str, values: list[str]) -> DialogueAct:
    return DialogueAct(intent=Intent.INFORM, slots=[(slot, v[:MAX_VALUE_CHARS]) for v in values])


def _dedupe(acts: list[DialogueAct]) -> list[DialogueAct]:
    seen: set[str] = set()
    unique = []
    for act in acts:
        key = str(act)
        if key not in seen:
            seen.add(key)
            unique.append(act)
    return unique
