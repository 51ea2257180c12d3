"""Rule-based understanding of CRS text: the dialogue acts a simulated user reads out of a reply.

The simulator is a black-box user, so it understands the CRS only from its text. Rules:

* `recommend(title=..., item=id)`: item titles linked by the collection's `ItemLinker`, unless
  the sentence is an answer about an item already under discussion (an `inform` whose titles
  are all in `items_hint`), the title is the item in focus (`items_hint[-1]`: "I don't have
  details about X"), or it lies inside a plot description. Mentions whose surface is a
  function word or a single character without a year ("It", "S") are ignored.
* `elicit(slot)`: a question (or "tell me ...") with cue words: genre/kind/type/sort or a genre
  name -> genre; actor/actress/star/cast -> actor; director/directed -> director;
  decade/era/period/old/recent/year -> decade; topic/theme/plot/story/"be about" -> keyword.
  A preference question without cue ("What are you looking for?") is `elicit()` without slot,
  dropped when the same reply also elicits a particular slot.
* `ask()`: other yes/no questions ("Would you like something else?"); `ask(seen)` for
  "Have you seen it?".
* `inform(slot="value")`: answers about an item: "directed by X", "It stars X, Y", "It came
  out in 1995", "Here's the plot: ...". Failing a pattern, names or the year of the item in
  focus (`items_hint[-1]`) found in a reply that recommends nothing count as an answer.
* `greeting` and `goodbye` (including "Enjoy the movie!").

Several acts may come out of one utterance; garbage yields an empty list, never an error.
"""

from __future__ import annotations

import itertools
import re
import weakref
from dataclasses import dataclass, field
from typing import Any, Protocol

from crsim.model.acts import DialogueAct, Intent
from crsim.model.domain import Domain
from crsim.model.items import ItemCollection
from crsim.model.linking import Mention
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


_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)|\n+")
_GREETING = re.compile(r"^\W*(hi|hello|hey|hiya|howdy|greetings|good (morning|afternoon|evening)|welcome)\b")
_GOODBYE = re.compile(
    r"\b(good ?bye|bye|see you|take care|farewell|thanks for (chatting|talking|stopping by)"
    r"|have an? (nice|great|good|lovely|wonderful) (day|evening|night|time|weekend))\b"
    r"|^\W*(enjoy (the|your) (movie|film|show|evening|night)|happy watching|have fun)\b"
)
_REQUEST_CUE = re.compile(
    r"\b(tell me|let me know|i'd (like|love) to know|i would (like|love) to know|share)\b"
)
_ANOTHER = re.compile(
    r"\b(another|something else|anything else|else|more|other (one|options?|suggestions?))\b"
)
_SEEN_QUESTION = re.compile(r"\b(have|had|did) you (already |ever )?(seen|watched|see|watch)\b")
_YES_NO_START = re.compile(
    r"^\W*(would|do|does|did|have|has|can|could|shall|should|is|are|was|were|will|want|may|need)\b"
)
_GENERIC_ELICIT = re.compile(
    r"\b(looking for|in the mood|mood for|feel like|you (like|love|enjoy|prefer|want)|interested in"
    r"|into|your (taste|tastes|preference|preferences|favou?rites?)|what (else )?do you)\b"
)
_SLOT_CUES: dict[str, re.Pattern[str]] = {
    "genre": re.compile(r"\b(genres?|kinds?|types?|sorts?|styles?|categor(y|ies))\b"),
    "actor": re.compile(r"\b(actors?|actress(es)?|stars?|starring|cast|performers?)\b"),
    "director": re.compile(r"\b(directors?|directed|filmmakers?|film makers?)\b"),
    "decade": re.compile(r"\b(decades?|eras?|period|old|older|recent|years?|classics?|release date)\b"),
    "keyword": re.compile(
        r"\b(topics?|themes?|plot|subject|story|storyline|keywords?)\b"
        r"|\b(be|is|movie|film|something|one|anything|stuff) about\b"
    ),
}
_YEAR = r"(?P<v>1[89]\d\d|20\d\d)(?![\ds])"
_NAMES_AFTER = r"\s*:?\s*(?P<v>[^.;!?]+)"
_INFORM: dict[str, list[re.Pattern[str]]] = {
    "director": [
        re.compile(r"\b(directed|helmed|made) by" + _NAMES_AFTER, re.I),
        re.compile(r"\bdirectors? (is|was|are|were)" + _NAMES_AFTER, re.I),
        re.compile(r"\bdirector\s*[:\-]" + _NAMES_AFTER, re.I),
        re.compile(r"(?P<v>[A-Z][^.;!?]*?) directed (it|this|that|the (movie|film))\b"),
    ],
    "actor": [
        re.compile(r"\b(stars|starring|starred|features|featuring)" + _NAMES_AFTER, re.I),
        re.compile(r"\bcast (includes|include|is|features|members are|:)" + _NAMES_AFTER, re.I),
        re.compile(r"\b(actors?|stars|leads?) (are|is|include|were|was)" + _NAMES_AFTER, re.I),
        re.compile(
            r"(?P<v>[A-Z][^.;!?]*?) (plays?|play|stars|star|appears?) in (it|this|the (movie|film))\b"
        ),
    ],
    "year": [
        re.compile(
            r"\b(came out|released|release date|premiered|was made|from|year)\b[^.;!?]*?\b" + _YEAR, re.I
        ),
        re.compile(r"\b" + _YEAR + r" (movie|film|release|picture|classic)\b", re.I),
    ],
}
_PLOT_CUE = re.compile(
    r"(here(?:'s| is) (?:the|a|its) (?:plot|story|storyline|synopsis|summary|premise)"
    r"|(?:the )?(?:plot|story|storyline|synopsis|summary|premise)(?: is| goes)?\s*[:\-]"
    r"|the (?:plot|story|movie|film) (?:follows|revolves around|cent(?:er|re)s on|is about|tells)"
    r"|(?:it|the movie|the film|this one|that one)(?:'s| is| was) about"
    r"|in (?:this|the|that) (?:movie|film),)\s*:?\s*",
    re.I,
)
_NAME = re.compile(r"[A-Z][\w'.\-]*(?:\s+(?:[A-Z][\w'.\-]*|de|van|von|da|del|di|du|la|le|der))*")
_NAME_STOP = {"It", "The", "This", "That", "He", "She", "They", "And", "A", "An", "I", "You"}


class RuleNLU:
    """Cue words and patterns over sentences plus item linking over the whole text."""

    def __init__(self, domain: Domain) -> None:
        self._items = domain.items
        self._genre_words = _genre_words(domain.items)
        self._informable = set(domain.informable_slots) or set(_SLOT_CUES)

    def parse(self, text: str, items_hint: list[str]) -> list[DialogueAct]:
        """All acts found in `text`, in the order greeting, recommend, inform, elicit, ask, goodbye."""
        if not text or not text.strip():
            return []
        mentions = [m for m in self._items.linker.link(text) if _is_title_like(m)]
        plot_start, plot_value = _find_plot(text)
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
        if plot_value:
            found["inform"].append(_inform("plot", [plot_value]))
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
        if _GOODBYE.search(folded):
            found["bye"].append(DialogueAct(intent=Intent.GOODBYE))
        informs = _informs(_without_mentions(sentence, mentions))
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
        if _SEEN_QUESTION.search(folded):
            found["ask"].append(DialogueAct(intent=Intent.ASK, slots=[("seen", None)]))
        elif not mentions:
            for act in self._question(folded):
                found["elicit" if act.intent == Intent.ELICIT else "ask"].append(act)

    def _question(self, folded: str) -> list[DialogueAct]:
        """Elicitations (with the cued slots, or none) or a yes/no `ask()` for one question."""
        another = _ANOTHER.search(folded) is not None
        slots = [s for s, cue in _SLOT_CUES.items() if s in self._informable and cue.search(folded)]
        if not slots and not another and self._mentions_genre(folded):
            slots = ["genre"]
        if slots:
            return [DialogueAct(intent=Intent.ELICIT, slots=[(s, None)]) for s in slots]
        yes_no = _YES_NO_START.search(folded) is not None
        if _GENERIC_ELICIT.search(folded) and not another and not yes_no:
            return [DialogueAct(intent=Intent.ELICIT)]
        return [DialogueAct(intent=Intent.ASK)] if yes_no or another else []

    def _mentions_genre(self, folded: str) -> bool:
        words = normalize(folded).split()
        pairs = {f"{a} {b}" for a, b in itertools.pairwise(words)}
        return any(w in self._genre_words for w in words) or any(p in self._genre_words for p in pairs)

    def _informs_from_item(self, text: str, item_id: str, mentions: list[Mention]) -> list[DialogueAct]:
        """Answers recognised by the focus item's own attribute values appearing in the text."""
        item = self._items.get(item_id)
        if item is None:
            return []
        folded = fold(_without_mentions(text, mentions))
        acts = []
        for slot, names in (("director", item.directors), ("actor", item.actors)):
            hits = [n for n in names if len(n) > 3 and fold(n) in folded]
            if hits:
                acts.append(_inform(slot, hits))
        if item.year and re.search(rf"\b{item.year}\b", folded):
            acts.append(_inform("year", [str(item.year)]))
        if item.plot and len(item.plot) > 30 and fold(item.plot[:30]) in folded:
            acts.append(_inform("plot", [item.plot]))
        return acts


_GENRE_WORDS: weakref.WeakKeyDictionary[ItemCollection, frozenset[str]] = weakref.WeakKeyDictionary()


def _genre_words(items: ItemCollection) -> frozenset[str]:
    """Genre names and their plurals in normalised form, computed once per item collection."""
    words = _GENRE_WORDS.get(items)
    if words is None:
        genres = set(items.vocabulary("genres"))
        plurals = {g + "s" for g in genres} | {g[:-1] + "ies" for g in genres if g.endswith("y")}
        words = _GENRE_WORDS[items] = frozenset({normalize(g) for g in genres | plurals} - STOPWORDS)
    return words


def _is_title_like(mention: Mention) -> bool:
    """Drop links of pronouns and single letters ("It", "S") unless written with a year."""
    if re.search(r"\(\s*\d{4}\s*\)\s*$", mention.surface):
        return True
    words = normalize(mention.surface).split()
    return not (len(words) == 1 and (len(words[0]) < 2 or words[0] in STOPWORDS))


def _sentences(text: str, mentions: list[Mention]) -> list[tuple[int, int]]:
    """Sentence spans; never split inside a linked title ("L.A. Confidential")."""
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        end = match.end()
        if any(m.start < match.start() < m.end for m in mentions):
            continue
        if text[start:end].strip():
            spans.append((start, end))
        start = end
    if text[start:].strip():
        spans.append((start, len(text)))
    return spans


def _is_question(sentence: str, folded: str) -> bool:
    return sentence.rstrip().endswith("?") or bool(_REQUEST_CUE.search(folded))


def _find_plot(text: str) -> tuple[int | None, str | None]:
    """Where a plot description starts and its text (up to a closing question)."""
    match = _PLOT_CUE.search(text)
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


def _informs(sentence: str) -> list[DialogueAct]:
    acts = []
    for slot, patterns in _INFORM.items():
        for pattern in patterns:
            match = pattern.search(sentence)
            if match is None:
                continue
            raw = match.group("v")
            values = [raw] if slot == "year" else _names(raw)
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
