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
(`nlu_vocabulary.NLUSpec`, the `nlu` section); the defaults are built from the item noun and the slots.

Several acts may come out of one utterance; garbage yields an empty list, never an error.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from crsim.language.nlu_vocabulary import vocabulary_for
from crsim.language.sentences import sentence_ends
from crsim.model.acts import DialogueAct, Intent
from crsim.model.domain import Domain, SlotKind
from crsim.model.linking import Mention, heard_titles
from crsim.model.text import fold, normalize

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
_REQUEST_CUE = re.compile(
    r"\b(tell me|let me know|i'd (like|love) to know|i would (like|love) to know|share)\b"
)
_ANOTHER = re.compile(
    r"\b(another|something else|anything else|else|more|other (one|options?|suggestions?))\b"
)
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


def _sentences(text: str, mentions: list[Mention]) -> list[tuple[int, int]]:
    """Sentence spans (`crsim.language.sentences.sentence_ends`); never split inside a linked
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
