"""The domain's part of the cue words: what an item is called, what one does with it, how people
name the slots and ask about an item, from the domain's slots' cues and the `understanding` section
of its phrasings (`UnderstandingSpec`, with generic defaults built from the item noun and the
slots); `domain_cues(domain)` puts them together with the shared words of `crsim.language.cues`."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from crsim.core.errors import DataError
from crsim.language.cues import (
    ASKING,
    FILLER,
    accept_pattern,
    alternation,
    request_pattern,
    seen_patterns,
    word_set,
)
from crsim.language.phrasings import phrasing
from crsim.model.domain import Domain, SlotKind, per_domain
from crsim.model.text import normalize


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PeopleSpec(_Spec):
    """Slots whose values are person names, told apart by the words just before a name."""

    slots: list[str] = Field(default_factory=list, description="People slots; ties go to the first.")
    cues: dict[str, list[str]] = Field(default_factory=dict, description="Slot -> words before a name.")
    title_after: tuple[str, str] | None = Field(
        None, description="(word, slot): 'tom hanks in big' names an item of that person's after the word."
    )


class PeriodSpec(_Spec):
    """A slot of release periods, read from years, decades and words like 'recent'."""

    slot: str | None = None
    decade_words: dict[str, int] = Field(default_factory=dict)
    recent: list[str] = Field(default_factory=list)
    classic: list[str] = Field(default_factory=list)
    new_before: list[str] = Field(default_factory=list, description="'new' means recent before these.")
    before: list[str] = Field(default_factory=list)
    since: list[str] = Field(default_factory=list)
    relative: list[str] = Field(default_factory=list, description="'newer'/'older' than the item shown.")
    degree: list[str] = Field(default_factory=list, description="'more'/'less' before a period word.")
    recent_years: int = Field(8, ge=0)
    classic_until: int = 1979


class TopicSpec(_Spec):
    slot: str | None = None


class UnderstandingSpec(_Spec):
    """The `understanding` section of a domain's phrasings; every field has a generic default."""

    item_words: list[str] | None = Field(None, description="Singular nouns for an item (default: the noun).")
    item_words_plural: list[str] | None = None
    consume: list[str] = Field(
        default_factory=lambda: ["book", "visit", "go for"], description="What one does with an item."
    )
    seen: list[str] = Field(
        default_factory=lambda: ["been there", "tried", "visited", "stayed"],
        description="Words saying one knows an item already.",
    )
    request_phrases: list[str] = Field(default_factory=list)
    filler: str | None = Field(None, description="More filler words (default: the words of the slots' cues).")
    slot_words: dict[str, str] | None = Field(
        None, description="Slot -> words naming it ('any cuisine is fine')."
    )
    inquiries: dict[str, str] | None = Field(None, description="Slot -> regex of questions asking for it.")
    inquiry_unless_stated: list[str] | None = Field(
        None, description="Inquiries dropped when the same text states a value of the slot (default: all)."
    )
    only_forms: dict[str, dict[str, list[str]]] = Field(
        default_factory=dict, description="Slot -> value -> the only phrases naming it (ambiguous labels)."
    )
    prompt_verbs: dict[str, str] = Field(
        default_factory=lambda: {"consume": "try", "consumed": "tried", "seen": "tried"},
        description="Verbs LLM prompts use for an item: what one does with it, did, has done.",
    )
    prompt_nouns: dict[str, str] = Field(
        default_factory=dict,
        description="Nouns LLM prompts use for the people of a domain: `user` (who uses the items, e.g. "
        "'reader'), `user_role` ('a book reader'), `expert` ('a literary critic'), `kind` (the noun after "
        "a kind of item: 'novel'), `aspects` (what one may come to like: 'a theme, an author'), "
        "`details` (examples of what one may ask about an item: 'its author, pages, ...'), `facts` (what "
        "the `llm` CRS's prompt says the candidates come with: 'author, pages, price') and "
        "`contradiction` (an example of a contradictory profile, for RecUserSim's profile check); "
        "defaults from the item noun and the slots.",
    )
    item_text: list[str] | None = Field(
        None, description="Attributes (after the title) of an item's text for candidate retrieval."
    )
    chat_words: str | None = Field(
        None, description="Words retrieval ignores (default: the slots' cue words)."
    )
    people: PeopleSpec = Field(default_factory=PeopleSpec)
    period: PeriodSpec = Field(default_factory=PeriodSpec)
    topics: TopicSpec = Field(default_factory=TopicSpec)


@dataclass(frozen=True)
class Cues:
    """The cue words and patterns of one domain (generic ones plus the domain's)."""

    spec: UnderstandingSpec
    filler: frozenset[str]
    slot_words: Mapping[str, frozenset[str]]
    request: re.Pattern[str]
    accept: re.Pattern[str]
    seen: re.Pattern[str]
    not_seen: re.Pattern[str]
    inquiries: Mapping[str, re.Pattern[str]]
    inquiry_unless_stated: frozenset[str] | None
    people_cues: Mapping[str, frozenset[str]]
    period_words: frozenset[str]


#: Cues by domain, built once per domain object (keyed by its item collection, as `lexicon_for`).
@per_domain
def domain_cues(domain: Domain) -> Cues:
    """The domain's cue words: its `understanding` phrasings over generic defaults from noun and slots.

    Built once per domain object and shared (`per_domain`): an LLM user builds its policy per
    dialogue, and building the cues cost about as much as one of its LLM calls on the client side
    (bench/llm_overhead.py).
    """
    return _build_cues(domain)


def _build_cues(domain: Domain) -> Cues:
    spec = understanding_spec(phrasing(domain, "understanding"))
    nouns = spec.item_words or [domain.item_noun]
    plural = spec.item_words_plural or [domain.item_noun_plural]
    slot_names = {s.name: _slot_words(s.name, s.cues) for s in domain.informable}
    filler = word_set(spec.filler) if spec.filler is not None else frozenset().union(*slot_names.values())
    slot_words = (
        {k: word_set(v) for k, v in spec.slot_words.items()} if spec.slot_words is not None else slot_names
    )
    seen, not_seen = seen_patterns(spec.seen)
    period = spec.period
    return Cues(
        spec=spec,
        filler=FILLER | filler,
        slot_words=slot_words,
        request=request_pattern([*nouns, *plural], nouns, spec.request_phrases),
        accept=accept_pattern(spec.consume),
        seen=seen,
        not_seen=not_seen,
        inquiries=_inquiries(domain, spec),
        inquiry_unless_stated=None
        if spec.inquiry_unless_stated is None
        else frozenset(spec.inquiry_unless_stated),
        people_cues={k: frozenset(v) for k, v in spec.people.cues.items()},
        period_words=frozenset([*period.recent, *period.classic, *period.decade_words, "new"])
        if period.slot
        else frozenset(),
    )


def prompt_words(domain: Domain) -> dict[str, str]:
    """The words LLM prompts name a domain's items with: `item`, `items`, and the verbs `consume`,
    `consumed` and `seen` (what one does with an item, did, has done; movies: watch, watched, seen;
    the `understanding.prompt_verbs` phrasing)."""
    spec = understanding_spec(phrasing(domain, "understanding"))
    defaults = UnderstandingSpec().prompt_verbs
    return {"item": domain.item_noun, "items": domain.item_noun_plural, **defaults, **spec.prompt_verbs}


def prompt_nouns(domain: Domain) -> dict[str, str]:
    """The nouns LLM prompts name a domain's people and item features with (`user`, `user_role`,
    `expert`, `kind`, `aspects`, `details`, `facts`, `contradiction`; see `UnderstandingSpec.prompt_nouns`):
    the domain's `understanding.prompt_nouns` phrasing over generic ones made from the item noun and
    the slots."""
    spec = understanding_spec(phrasing(domain, "understanding"))
    slots = [s.name.replace("_", " ") for s in domain.informable if s.kind != SlotKind.TEXT][:3]
    aspects = ", ".join(f"{'an' if name[:1] in 'aeiou' else 'a'} {name}" for name in slots)
    requestable = [s.name.replace("_", " ") for s in domain.requestable][:4]
    defaults = {
        "user": "person",
        "user_role": "a person",
        "expert": f"an expert on {domain.item_noun_plural}",
        "kind": domain.item_noun,
        "aspects": aspects or f"something about the {domain.item_noun}",
        "details": "its " + ", ".join([*requestable, "..."]) if requestable else "anything about it",
        "facts": ", ".join(dict.fromkeys(s.label for s in domain.slots.values())) or "their details",
        "contradiction": f"disliking one kind of {domain.item_noun} while loving another that is "
        "much the same, or a wish that no item could meet",
    }
    return {**defaults, **spec.prompt_nouns}


def understanding_spec(raw: Mapping[str, Any] | None) -> UnderstandingSpec:
    """The `understanding` section, validated; errors name the field."""
    try:
        return UnderstandingSpec.model_validate(dict(raw or {}))
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise DataError(err["msg"], path="phrasings.understanding", field=field) from None


def _slot_words(name: str, cues: Iterable[str]) -> frozenset[str]:
    words = set(normalize(name.replace("_", " ")).split())
    for cue in cues:
        words.update(normalize(cue).split())
    return frozenset(words)


def _inquiries(domain: Domain, spec: UnderstandingSpec) -> dict[str, re.Pattern[str]]:
    """Questions about the item under discussion, by the slot they ask for: the domain's patterns,
    else a question word before one of a requestable slot's cues ("whats the phone number")."""
    if spec.inquiries is not None:
        try:
            return {slot: re.compile(pattern) for slot, pattern in spec.inquiries.items()}
        except re.error as exc:
            raise DataError(
                f"not a regular expression ({exc})", field="phrasings.understanding.inquiries"
            ) from None
    found = {}
    for slot in domain.requestable:
        names = sorted(
            _slot_words(slot.name, slot.cues) if not slot.cues else {normalize(c) for c in slot.cues}
        )
        found[slot.name] = re.compile(rf"{ASKING}.*\b({alternation(names)})\b")
    return found
