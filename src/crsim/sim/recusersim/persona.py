"""How a RecUserSim user is shown to the model: the system message's variables (the profile as
sections, the need, the traits, the action pattern), the writing style its traits ask for, and the
description of a recommended item."""

from __future__ import annotations

from typing import Any

from crsim.language.phrasings import item_details
from crsim.model.domain import Domain
from crsim.model.items import Item
from crsim.sim.recusersim.memory import Memory
from crsim.sim.recusersim.params import RecUserSimParams
from crsim.sim.recusersim.profile import PART_TITLES, PARTS, ProfileDictionary, Traits

_STYLE_LENGTH = {
    "short": "very brief messages of at most {short} words",
    "medium": "messages of one to three sentences, {short_1} to {medium} words",
    "long": "long, detailed messages of more than {medium} words",
}
_STYLE_FORMALITY = {
    "formal": "formal and polite, in complete sentences",
    "neutral": "plain and friendly, neither stiff nor slangy",
    "informal": "casual, with contractions and relaxed punctuation",
}
_STYLE_RICHNESS = {
    "low": "sharing only one or two things at a time",
    "high": "sharing plenty of details about what you want and why",
}


def style(traits: Traits, s: RecUserSimParams) -> str:
    """The writing style the traits ask for: length, formality, richness."""
    length = _STYLE_LENGTH[traits.sentence_length].format(
        short=s.short_max, short_1=s.short_max + 1, medium=s.medium_max
    )
    return f"{length}; {_STYLE_FORMALITY[traits.formality]}; {_STYLE_RICHNESS[traits.information_richness]}"


def persona_variables(
    dictionary: ProfileDictionary, domain: Domain, memory: Memory, params: RecUserSimParams
) -> dict[str, Any]:
    """The variables of the system message (`system.j2`)."""
    profile = memory.profile
    sections = []
    for part in PARTS:
        lines = [
            {
                "label": dictionary.label(part, key),
                "value": ", ".join(profile.values_of(f"{part}.{key}")),
            }
            for key in profile.part(part)
            if profile.values_of(f"{part}.{key}")
        ]
        if lines:
            sections.append({"title": PART_TITLES[part], "lines": lines})
    pattern = dictionary.action_patterns[profile.traits.action_pattern]
    return {
        "domain": domain.name,
        "sections": sections,
        "need": memory.need,
        "traits": profile.traits,
        "pattern": pattern.description,
        "style": style(profile.traits, params),
    }


def describe_item(domain: Domain, item: Item, plot_chars: int) -> str:
    """An item as the rating and excitation prompts show it: title, attributes, the plot cut short."""
    parts = [item.display_title]
    if item.genres:
        parts.append(", ".join(item.genres))
    if item.directors:
        parts.append("directed by " + ", ".join(item.directors[:2]))
    if item.actors:
        parts.append("with " + ", ".join(item.actors[:3]))
    details = item_details(domain, item, max(plot_chars, 1) * 2)
    text = "; ".join([*parts, details] if details else parts)
    if item.plot and plot_chars:
        plot = item.plot if len(item.plot) <= plot_chars else item.plot[:plot_chars] + "..."
        text += f". {plot}"
    return text
