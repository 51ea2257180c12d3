"""Phrasing of the built-in CRSs: generic sentences naming the domain's item noun and slots, which a
domain overrides with its own (`phrasings.crs` of the domain file; the movie domain ships its own).

Every method returns plain text; when several wordings exist one is picked with the session's
`random.Random`, so a dialogue is reproducible from its seed. Titles are passed in already
formatted ("Heat (1995)"). `sentences_for(domain)` builds the sentences once per domain.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from crsim.crs.phrasings import phrasing
from crsim.errors import DataError
from crsim.model.domain import Domain, SlotKind, indefinite, per_domain
from crsim.model.domain import article as domain_article

Options = tuple[str, ...]

#: Generic sentences; `{noun}`/`{nouns}` become the item noun (`{a_noun}` with "a"/"an"), `{label}` a
#: slot's name in words. `generic_answer` is what `popular` says to a question when it ranks by rating
#: counts, `generic_answer_ranked` when it ranks by another field the domain declares (`{field}`), and
#: `generic_answer_unranked` when it keeps the catalogue's order.
GENERIC: dict[str, Any] = {
    "greeting": (
        "Hi! I can help you find {a_noun}. What are you looking for?",
        "Hello! I'm here to help you pick {a_noun}. What kind of {noun} would you like?",
        "Hi there! Tell me what kind of {noun} you are looking for.",
    ),
    "question": ("Which {label} would you like?", "Do you have a preference for the {label}?"),
    "repeat": "Is there a particular {label} you would like?",
    "default_question": ("What are you looking for?",),
    "recommend_one": ("You might like {0}.", "How about {0}?", "I'd suggest {0}.", "Have a look at {0}."),
    "recommend_many": (
        "How about {0} or {1}?",
        "You might like {0} or {1}.",
        "Here are some ideas: {0} or {1}.",
    ),
    "reject": ("No problem.", "Okay, let's try something else.", "Fair enough."),
    "seen": ("Ah, you know that one already.", "Okay, you already know that one."),
    "accept": ("Great choice!", "Glad you like it!", "Wonderful!"),
    "not_understood": ("Sorry, I didn't quite get that.", "Hmm, I'm not sure I understood."),
    "no_item": ("I haven't suggested anything yet.",),
    "noted": ("Got it.", "Okay.", "Noted."),
    "offer_more": ("Would you like something else?", "Would you like another suggestion?"),
    "anything_else": ("Enjoy! Can I help you with anything else?", "Great! Anything else I can do?"),
    "closing_accepted": ("Enjoy! Goodbye.", "Have a good time! Bye."),
    "closing": ("Okay, goodbye! Come back any time.", "Thanks for chatting, bye!"),
    "exhausted": "I'm afraid I have no more suggestions that fit. Would you like to change something?",
    "generic_answer": "I don't have details about {title}, but it's one of the most popular {nouns} around.",
    "generic_answer_ranked": "I don't have details about {title}; I suggest {nouns} by their {field}, "
    "highest first.",
    "generic_answer_unranked": "I don't have details about {title}; I suggest the {nouns} that fit what you "
    "asked for, in the order of my list.",
    "answer": "Its {label}: {values}.",
    "unknown": "Sorry, I don't know its {label}.",
    "explanation": "It matches what you asked for: {matches}.",
}
_ACKNOWLEDGE = ("reject", "seen", "accept", "not_understood", "no_item", "noted")


@dataclass(frozen=True)
class Sentences:
    """The sentences of one domain: generic ones with the domain's words filled in, then its overrides."""

    noun: str
    nouns: str
    labels: Mapping[str, str]
    table: Mapping[str, Any]
    questions: Mapping[str, Options] = field(default_factory=dict)
    repeats: Mapping[str, str] = field(default_factory=dict)
    answers: Mapping[str, str] = field(default_factory=dict)
    unknowns: Mapping[str, str] = field(default_factory=dict)
    #: Numeric slots' units ("weight" -> "lbs"), said after the values in answers.
    units: Mapping[str, str] = field(default_factory=dict)

    def options(self, key: str) -> Options:
        value = self.table[key]
        return (value,) if isinstance(value, str) else tuple(value)

    def fill(self, template: str, **more: str) -> str:
        return template.format_map(
            {"noun": self.noun, "a_noun": indefinite(self.noun), "nouns": self.nouns, **more}
        )

    def pick(self, rng: random.Random, key: str) -> str:
        return self.fill(pick(rng, self.options(key)))

    def label(self, slot: str) -> str:
        return self.labels.get(slot, slot.replace("_", " "))

    # --- the sentences the CRSs say --------------------------------------------------------------

    def greeting(self, rng: random.Random) -> str:
        return self.pick(rng, "greeting")

    def question(self, slot: str, rng: random.Random, repeat: bool = False) -> str:
        """A preference question about `slot`; `repeat` gives a plainer rewording."""
        if repeat and slot in self.repeats:
            return self.fill(self.repeats[slot], label=self.label(slot))
        options = self.questions.get(slot) or self.options("default_question")
        return self.fill(pick(rng, options), label=self.label(slot))

    def recommendation(self, titles: list[str], rng: random.Random) -> str:
        if len(titles) == 1:
            return pick(rng, self.options("recommend_one")).format(titles[0])
        return pick(rng, self.options("recommend_many")).format(", ".join(titles[:-1]), titles[-1])

    def acknowledge(self, kind: str, rng: random.Random) -> str:
        """Short reaction to feedback on the last suggestion: 'reject', 'seen', 'accept', ..."""
        return self.pick(rng, kind) if kind in _ACKNOWLEDGE else pick(rng, ("Okay.",))

    def offer_more(self, rng: random.Random) -> str:
        return self.pick(rng, "offer_more")

    def anything_else(self, rng: random.Random) -> str:
        return self.pick(rng, "anything_else")

    def closing(self, rng: random.Random, accepted: bool) -> str:
        return self.pick(rng, "closing_accepted" if accepted else "closing")

    def exhausted(self) -> str:
        return self.fill(self.options("exhausted")[0])

    def generic_answer(self, title: str, ranked_by: str | None = "num_ratings") -> str:
        """What a CRS without item knowledge says to an inquiry, true to how it ranks: by rating counts
        (`ranked_by` "num_ratings"), by another field, or (None) in catalogue order."""
        if ranked_by is None:
            return self.fill(self.options("generic_answer_unranked")[0], title=title)
        if ranked_by != "num_ratings":
            field = self.label(ranked_by) if ranked_by in self.labels else ranked_by.replace("_", " ")
            return self.fill(self.options("generic_answer_ranked")[0], title=title, field=field)
        return self.fill(self.options("generic_answer")[0], title=title)

    def answer(self, slot: str, values: list[str]) -> str:
        """An answer about the item under discussion, or an honest 'I don't know' when `values` is empty."""
        label = self.label(slot)
        if not values:
            return self.fill(self.unknowns.get(slot) or self.options("unknown")[0], label=label)
        first = values[0].strip()
        unit = self.units.get(slot)
        if unit:
            values = [f"{v} {unit}" for v in values]
        fills = {
            "label": label,
            "Label": slot.capitalize(),
            "values": ", ".join(values),
            "first": values[0],
            "text": first + ("" if first[-1:] in ".!?" else "."),
            "article": article(values[0]),
        }
        return self.fill(self.answers.get(slot) or self.options("answer")[0], **fills)

    def matches(self, matched: list[tuple[str, str]]) -> str:
        """Why an item was chosen, from the (slot, value) preferences it matches; '' for none."""
        if not matched:
            return ""
        listed = "; ".join(
            f"{self.label(slot)} {value} {self.units[slot]}"
            if slot in self.units
            else f"{self.label(slot)} {value}"
            for slot, value in matched
        )
        return self.fill(self.options("explanation")[0], matches=listed)

    def described(self, kinds: list[str], people: list[str], period: str | None) -> str:
        """The explanation of a domain whose `crs.explanation` is a mapping (kind, people and period
        phrases, e.g. "It's a comedy movie with Tom Hanks from the 1990s."); '' for nothing matched."""
        spec = self.table["explanation"]
        if not (kinds or people or period):
            return ""
        kind = (
            self.fill(spec["kind"], article=article(kinds[0]), values=" and ".join(kinds[:2]))
            if kinds
            else (self.fill(spec["no_kind"]))
        )
        parts = [self.fill(spec["sentence"], kind=kind)]
        if people:
            parts.append(self.fill(spec["people"], values=" and ".join(people[:2])))
        if period:
            parts.append(self.fill(spec["period"], value=period))
        return " ".join(parts) + "."


def pick(rng: random.Random, options: Options) -> str:
    return options[rng.randrange(len(options))]


def article(word: str) -> str:
    """ "a" or "an" before `word` (`crsim.model.domain.article`)."""
    return domain_article(word)


@per_domain
def sentences_for(domain: Domain) -> Sentences:
    """The sentences of a domain, built once per domain (`per_domain`)."""
    return build_sentences(domain)


def build_sentences(domain: Domain) -> Sentences:
    """Generic sentences for the domain's noun and slots, overridden by the domain's `crs` phrasings."""
    own = phrasing(domain, "crs")
    unknown = set(own) - {
        *GENERIC,
        "questions",
        "repeats",
        "answers",
        "unknowns",
        "labels",
        "elicitation_order",
    }
    if unknown:
        raise DataError(f"unknown CRS sentence(s) {', '.join(sorted(unknown))}", field="phrasings.crs")
    labels = {s.name: s.label for s in domain.slots.values()}
    labels.update({str(k): str(v) for k, v in (own.get("labels") or {}).items()})
    table = {**GENERIC, **{k: v for k, v in own.items() if k in GENERIC}}
    questions: dict[str, Options] = {}
    for slot in domain.informable:
        questions[slot.name] = (slot.question,) if slot.question else tuple(GENERIC["question"])
    questions.update({str(k): _options(v) for k, v in (own.get("questions") or {}).items()})
    repeats = {s.name: str(GENERIC["repeat"]) for s in domain.informable}
    repeats.update({str(k): str(v) for k, v in (own.get("repeats") or {}).items()})
    return Sentences(
        noun=domain.item_noun,
        nouns=domain.item_noun_plural,
        labels=labels,
        table=table,
        questions=questions,
        repeats=repeats,
        answers={str(k): str(v) for k, v in (own.get("answers") or {}).items()},
        unknowns={str(k): str(v) for k, v in (own.get("unknowns") or {}).items()},
        units={s.name: s.unit for s in domain.slots.values() if s.kind is SlotKind.NUMERIC and s.unit},
    )


def _options(value: Any) -> Options:
    return (str(value),) if isinstance(value, str) else tuple(str(v) for v in value)
