"""Template-based generation of user utterances from dialogue acts: the agenda templates.

`abus` speaks them (`nlg: templates`); the LLM users' guidance words its questions with them, and
`recusersim` says its actions plainly in them when no draft is the user's. Templates live in YAML
(`templates/<name>.yaml` in this package, or any file path): intent -> variant -> phrasings. Each
act becomes one sentence drawn with a seeded `random.Random`, so a seed fixes the wording. The item
under discussion is referred to as "it"/"that one", any other item by its display title ("Title
(Year)").
"""

from __future__ import annotations

import random
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any, Protocol

import yaml

from crsim.core.errors import DataError
from crsim.core.yaml_files import describe_yaml_error, load_yaml
from crsim.model.acts import DialogueAct, Intent
from crsim.model.domain import Domain, Slot, SlotKind, indefinite

_PLACEHOLDERS = frozenset(
    {"value", "a_value", "amount", "Amount", "ref", "Ref", "noun", "a_noun", "nouns", "label"}
)
_PRONOUNS = ("it", "that one")
_ITEM_INTENTS = frozenset({Intent.ACCEPT, Intent.REJECT, Intent.SEEN, Intent.INQUIRE})


@dataclass(frozen=True)
class NLGContext:
    """What the NLG needs beyond the acts: the item asked about (`focus_title`), the item under
    discussion that "it" can refer to (`topic_title`), and the intents the CRS just used.

    Generators that write free text also get the CRS's last words (`crs_text`), the user's
    free-form `persona`, and the policy's notes on the turn (`annotations`, e.g. `outcome`)."""

    focus_title: str | None = None
    topic_title: str | None = None
    acknowledge: bool = False
    crs_intents: frozenset[str] = field(default_factory=frozenset)
    crs_text: str | None = None
    persona: Mapping[str, Any] = field(default_factory=dict)
    annotations: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class NLGResult:
    """The utterance text, plus `notes` for the record (e.g. an LLM's raw answer)."""

    text: str
    notes: dict[str, Any] = field(default_factory=dict)


class NLG(Protocol):
    """Turns the user's dialogue acts into the text of one utterance.

    Async because a generator may call a language model."""

    async def realize(self, acts: list[DialogueAct], context: NLGContext) -> NLGResult: ...


@dataclass(frozen=True)
class Templates:
    """Parsed template file: phrasings per intent and variant, and display forms of slot values."""

    source: str
    phrases: dict[str, dict[str, tuple[str, ...]]]
    values: dict[str, dict[str, str]]

    def choose(self, intent: str, variant: str, rng: random.Random, fallback: str = "default") -> str | None:
        """A phrasing of `variant`, else of `fallback`, else of "default"."""
        variants = self.phrases.get(intent)
        if not variants:
            return None
        options = variants.get(variant) or variants.get(fallback) or variants.get("default")
        return rng.choice(options) if options else None


@cache
def load_templates(name: str) -> Templates:
    """A packaged template set by name ("movies") or a YAML file by path; parsed once per process."""
    if name.endswith((".yaml", ".yml")):
        path = Path(name)
        if not path.is_file():
            raise DataError("file not found; expected a YAML template file", path=name)
        text, source = path.read_text(encoding="utf-8"), str(path)
    else:
        resource = files("crsim.sim.shared").joinpath(f"templates/{name}.yaml")
        if not resource.is_file():
            raise DataError(
                f"no packaged template set {name!r}", path=f"crsim/sim/shared/templates/{name}.yaml"
            )
        text, source = resource.read_text(encoding="utf-8"), f"templates/{name}.yaml"
    try:
        raw = load_yaml(text)
    except yaml.YAMLError as exc:
        raise DataError(describe_yaml_error(exc), path=source) from None
    return _parse(raw, source)


def domain_template_set(domain: Domain) -> str:
    """The name of the domain's own template set (its `phrasings.nlg`), else "generic"."""
    own = domain.phrasings.get("nlg")
    return own if isinstance(own, str) else "generic"


def _parse(raw: Any, source: str) -> Templates:
    if not isinstance(raw, dict):
        raise DataError("expected a mapping of intents to phrasings", path=source)
    values = raw.pop("values", None) or {}
    phrases: dict[str, dict[str, tuple[str, ...]]] = {}
    for intent, body in raw.items():
        variants = body if isinstance(body, dict) else {"default": body}
        phrases[str(intent)] = {}
        for variant, options in variants.items():
            where = f"{intent}.{variant}"
            if not isinstance(options, list) or not options or not all(isinstance(o, str) for o in options):
                raise DataError("expected a non-empty list of strings", path=source, field=where)
            for option in options:
                used = {f for _, f, _, _ in string.Formatter().parse(option) if f}
                if used - _PLACEHOLDERS:
                    unknown = ", ".join(sorted(used - _PLACEHOLDERS))
                    raise DataError(f"unknown placeholder {unknown} in {option!r}", path=source, field=where)
            phrases[str(intent)][str(variant)] = tuple(options)
    if not isinstance(values, dict):
        raise DataError("expected a mapping slot -> value -> display form", path=source, field="values")
    display = {str(s): {str(k).lower(): str(v) for k, v in (m or {}).items()} for s, m in values.items()}
    return Templates(source, phrases, display)


@dataclass(frozen=True)
class DomainWords:
    """The domain's words the templates may use: the item noun, each slot's name in words, and the
    numeric slots (whose values are said with their unit: "8 cylinders", "20 pounds")."""

    noun: str = "item"
    nouns: str = "items"
    labels: Mapping[str, str] = field(default_factory=dict)
    numeric: Mapping[str, Slot] = field(default_factory=dict)

    @classmethod
    def of(cls, domain: Domain) -> DomainWords:
        labels = {s.name: s.label for s in domain.slots.values()}
        numeric = {s.name: s for s in domain.slots.values() if s.kind is SlotKind.NUMERIC}
        return cls(domain.item_noun, domain.item_noun_plural, labels, numeric)


class TemplateNLG:
    """One sentence per act from the YAML templates, chosen with a seeded generator."""

    def __init__(self, templates: Templates, rng: random.Random, words: DomainWords | None = None) -> None:
        self.templates, self.rng, self.words = templates, rng, words or DomainWords()

    def generate(self, acts: list[DialogueAct], context: NLGContext) -> str:
        sentences = []
        if context.acknowledge:
            sentences.append(self._render(Intent.OTHER, "acknowledge", "default", {}))
        intents = {a.intent for a in acts}
        for act in acts:
            variant = self._variant(act, intents, context)
            fallback = (
                "numeric" if act.intent == Intent.DISCLOSE and variant in self.words.numeric else "default"
            )
            fill = self._fill(act, context)
            sentences.append(self._render(act.intent, act.intent, variant, fill, fallback))
        return " ".join(s for s in sentences if s)

    async def realize(self, acts: list[DialogueAct], context: NLGContext) -> NLGResult:
        """`generate` behind the async `NLG` interface."""
        return NLGResult(self.generate(acts, context))

    def _variant(self, act: DialogueAct, intents: set[str], context: NLGContext) -> str:
        first_slot = act.slots[0][0] if act.slots else None
        if act.intent == Intent.DISCLOSE:
            return first_slot if act.slots and act.slots[0][1] is not None and first_slot else "none"
        if act.intent == Intent.INQUIRE:
            return first_slot or "default"
        if act.intent == Intent.SEEN:
            liked = act.value("liked")
            return "default" if liked is None else ("liked" if liked == "yes" else "disliked")
        if act.intent == Intent.REQUEST_RECOMMENDATION:
            if intents & {Intent.REJECT, Intent.SEEN} or Intent.ASK in context.crs_intents:
                return "more"
            return "open" if Intent.ELICIT in context.crs_intents else "default"
        if (
            act.intent == Intent.GOODBYE
            and Intent.ACCEPT not in intents
            and intents & {Intent.REJECT, Intent.SEEN}
        ):
            return "unsatisfied"
        return "default"

    def _fill(self, act: DialogueAct, context: NLGContext) -> dict[str, str]:
        fill: dict[str, str] = {}
        values = [v for _, v in act.slots if v is not None]
        if act.intent == Intent.DISCLOSE and values:
            slot = act.slots[0][0]
            shown = [self.templates.values.get(slot, {}).get(v.lower(), v) for v in values]
            fill["value"] = _join(shown)
            fill["a_value"] = indefinite(fill["value"])
            numeric = self.words.numeric.get(slot)
            fill["amount"] = _join([numeric.amount(v) for v in values]) if numeric else fill["value"]
            fill["Amount"] = fill["amount"][:1].upper() + fill["amount"][1:]
        ref = "it"
        if act.intent in _ITEM_INTENTS:
            title = act.value("title") or context.focus_title
            if title is not None and title != context.topic_title:
                ref = title
            elif act.intent != Intent.INQUIRE:
                ref = self.rng.choice(_PRONOUNS)
        fill["ref"], fill["Ref"] = ref, ref[:1].upper() + ref[1:]
        fill["noun"], fill["nouns"] = self.words.noun, self.words.nouns
        fill["a_noun"] = indefinite(self.words.noun)
        slot = act.slots[0][0] if act.slots else ""
        fill["label"] = self.words.labels.get(slot, slot.replace("_", " ")) or "details"
        return fill

    def _render(
        self, intent: str, key: str, variant: str, fill: dict[str, str], fallback: str = "default"
    ) -> str:
        template = self.templates.choose(key, variant, self.rng, fallback)
        if template is None:
            return ""
        try:
            return template.format_map(fill)
        except KeyError as exc:
            raise DataError(
                f"placeholder {exc} has no value for act {intent!r}", path=self.templates.source, field=key
            ) from None


def _join(values: list[str]) -> str:
    if len(values) <= 1:
        return "".join(values)
    return ", ".join(values[:-1]) + " and " + values[-1]
