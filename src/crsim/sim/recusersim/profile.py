"""The profile module: four-part user profiles sampled from a domain's dictionary, and conflict resolution.

A profile dictionary (YAML, one per domain, `profiles/*.yaml` shipped for movies and restaurants)
gives every attribute of the four parts (basic information, environment, preferences, behaviour
traits) its values with prior weights. `sample_profile` draws one profile with a seeded rng.
Random combinations can contradict each other ("dislikes graphic violence" with "favourite genre:
war"), so `resolve_conflicts` asks an LLM for the changes that make the profile coherent, as JSON
under a schema listing the attributes it may change; each change is applied only if it names a
value the profile holds and a value of the dictionary, and every proposal is recorded, applied
or rejected with the reason. Behaviour traits are never changed: they are the experimental
condition of the controllability analysis.
"""

from __future__ import annotations

import math
import random
import re
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator

from crsim.core.errors import ConfigError
from crsim.core.yaml_files import read_yaml_mapping, validate_located
from crsim.sim.recusersim.actions import action_names

PROFILES = "crsim.sim.recusersim.profiles"
PARTS = ("basic", "environment", "preferences")
PART_TITLES = {"basic": "About you", "environment": "Your situation", "preferences": "Your tastes"}
Tendency = Literal["often", "sometimes", "rarely"]
Length = Literal["short", "medium", "long"]
Formality = Literal["informal", "neutral", "formal"]
Richness = Literal["low", "high"]
#: The values removing an attribute's value (or all of it) in a conflict fix.
REMOVE = "none"


def _check_weights(values: dict[Any, float]) -> dict[Any, float]:
    for value, weight in values.items():
        if not math.isfinite(weight) or weight <= 0:
            raise ValueError(f"weight of {value!r} is {weight}; expected a positive number")
    return values


class Attribute(BaseModel):
    """One attribute: its values with prior weights; `pick` distinct values are drawn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str | None = Field(None, description="How prompts name the attribute (default: its key).")
    pick: int = Field(1, ge=1, description="How many distinct values a profile gets.")
    values: dict[str, float] = Field(min_length=1, description="Value -> prior weight (normalised).")

    @field_validator("values")
    @classmethod
    def _weights(cls, values: dict[str, float]) -> dict[str, float]:
        return _check_weights(values)

    @model_validator(mode="after")
    def _enough_values(self) -> Attribute:
        if self.pick > len(self.values):
            raise ValueError(f"pick is {self.pick} but only {len(self.values)} values are given")
        return self


class TraitPriors(BaseModel):
    """Priors of the behaviour traits: the linguistic pattern (three parts) and the action pattern."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sentence_length: dict[Length, float] = Field(min_length=1)
    formality: dict[Formality, float] = Field(min_length=1)
    information_richness: dict[Richness, float] = Field(min_length=1)
    action_pattern: dict[str, float] = Field(min_length=1)

    @field_validator("sentence_length", "formality", "information_richness", "action_pattern")
    @classmethod
    def _weights(cls, values: dict[str, float]) -> dict[str, float]:
        return _check_weights(values)


class ActionPattern(BaseModel):
    """How a kind of user tends to act: a description and how often they choose each action."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = Field(min_length=1)
    tendencies: dict[str, Tendency] = Field(default_factory=dict)


class ProfileDictionary(BaseModel):
    """A domain's profile dictionary (the YAML file's content)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    domain: str = Field(min_length=1)
    basic: dict[str, Attribute] = Field(min_length=1)
    environment: dict[str, Attribute] = Field(min_length=1)
    preferences: dict[str, Attribute] = Field(min_length=1)
    traits: TraitPriors
    action_patterns: dict[str, ActionPattern] = Field(min_length=1)

    def part(self, name: str) -> dict[str, Attribute]:
        attributes: dict[str, Attribute] = getattr(self, name)
        return attributes

    def label(self, part: str, key: str) -> str:
        attribute = self.part(part).get(key)
        return (attribute.label if attribute and attribute.label else key.replace("_", " ")) or key

    def attribute_paths(self) -> list[str]:
        """`part.key` of every attribute a conflict fix may change."""
        return [f"{part}.{key}" for part in PARTS for key in self.part(part)]


def load_dictionary(ref: str) -> ProfileDictionary:
    """A shipped dictionary by name (`movies`, `restaurants`) or a YAML file by path; errors name the
    file and the field (`traits.action_pattern.x`, `action_patterns.p.tendencies.a`)."""
    path = Path(ref)
    if path.suffix in (".yaml", ".yml", ".json") and path.exists():
        return _load(str(path.resolve()), path.stat().st_mtime_ns)
    resource = files(PROFILES).joinpath(f"{ref}.yaml")
    if not resource.is_file():
        shipped = sorted(
            p.name.removesuffix(".yaml") for p in files(PROFILES).iterdir() if p.name.endswith(".yaml")
        )
        raise ConfigError(
            f"profile dictionary {ref!r}: neither a YAML file nor a shipped dictionary "
            f"(shipped: {', '.join(shipped)})"
        )
    return _load(str(resource), 0)


@cache
def _load(path: str, _version: int) -> ProfileDictionary:
    data = read_yaml_mapping(Path(path), "a profile dictionary")
    dictionary = validate_located(ProfileDictionary, data, path)
    name = path
    for pattern in dictionary.traits.action_pattern:
        if pattern not in dictionary.action_patterns:
            raise ConfigError(
                f"{name}: field 'traits.action_pattern.{pattern}': no such entry in action_patterns "
                f"(expected one of: {', '.join(dictionary.action_patterns)})"
            )
    known = action_names()
    for pattern, spec in dictionary.action_patterns.items():
        for action in spec.tendencies:
            if action not in known:
                raise ConfigError(
                    f"{name}: field 'action_patterns.{pattern}.tendencies.{action}': unknown user action "
                    f"{action!r}; expected one of: {', '.join(known)}"
                )
    return dictionary


class Traits(BaseModel):
    """Behaviour traits: the linguistic pattern and the action pattern."""

    model_config = ConfigDict(extra="forbid")

    sentence_length: Length
    formality: Formality
    information_richness: Richness
    action_pattern: str


ProfileValue = str | list[str]


class Profile(BaseModel):
    """One sampled (and possibly corrected) user profile."""

    model_config = ConfigDict(extra="forbid")

    domain: str
    basic: dict[str, ProfileValue] = Field(default_factory=dict)
    environment: dict[str, ProfileValue] = Field(default_factory=dict)
    preferences: dict[str, ProfileValue] = Field(default_factory=dict)
    traits: Traits

    def part(self, name: str) -> dict[str, ProfileValue]:
        values: dict[str, ProfileValue] = getattr(self, name)
        return values

    def values_of(self, path: str) -> list[str]:
        part, key = path.split(".", 1)
        value = self.part(part).get(key)
        if value is None:
            return []
        return [value] if isinstance(value, str) else list(value)

    def preference_values(self) -> list[str]:
        return [v for key in self.preferences for v in self.values_of(f"preferences.{key}")]


def _draw(attribute: Attribute, rng: random.Random) -> ProfileValue:
    names, weights = list(attribute.values), list(attribute.values.values())
    if attribute.pick == 1:
        return rng.choices(names, weights)[0]
    chosen: list[str] = []
    for _ in range(attribute.pick):  # weighted, without replacement
        index = rng.choices(range(len(names)), weights)[0]
        chosen.append(names.pop(index))
        weights.pop(index)
    return chosen


def _pick(weights: dict[Any, float], rng: random.Random) -> Any:
    return rng.choices(list(weights), list(weights.values()))[0]


def sample_profile(dictionary: ProfileDictionary, rng: random.Random) -> Profile:
    """One profile: every attribute drawn from its prior, in the dictionary's order."""
    parts = {part: {key: _draw(a, rng) for key, a in dictionary.part(part).items()} for part in PARTS}
    priors = dictionary.traits
    traits = Traits(
        sentence_length=_pick(priors.sentence_length, rng),
        formality=_pick(priors.formality, rng),
        information_richness=_pick(priors.information_richness, rng),
        action_pattern=_pick(priors.action_pattern, rng),
    )
    return Profile(domain=dictionary.domain, traits=traits, **parts)


# --- conflict resolution ------------------------------------------------------------------------


class ProfileFix(BaseModel):
    """A proposed change, as recorded: applied, or rejected with the reason."""

    attribute: str
    old_value: str
    new_value: str
    reason: str
    applied: bool
    rejected: str | None = None


def fix_schema(dictionary: ProfileDictionary, max_changes: int, reason_chars: int) -> type[BaseModel]:
    """The answer schema: a reason first, then which attribute changes from what to what."""
    paths = cast(Any, Literal)[tuple(dictionary.attribute_paths())]
    change = create_model(
        "ProfileChange",
        __config__=ConfigDict(extra="forbid"),
        reason=(str, Field(max_length=reason_chars)),
        attribute=(paths, ...),
        old_value=(str, Field(max_length=80)),
        new_value=(str, Field(max_length=80)),
    )
    return create_model(
        "ProfileConflicts",
        __config__=ConfigDict(extra="forbid"),
        changes=(list[change], Field(max_length=max_changes)),
    )


def _same(a: str, b: str) -> bool:
    return a.strip().lower() == b.strip().lower()


def split_values(value: str, whole: list[str]) -> list[str]:
    """The values a proposal names: `value` itself when it is one of `whole` (the values held or
    allowed), else its comma- or semicolon-separated parts. The resolution prompt shows a list-valued
    attribute joined with commas ("comedy, action"), so a model copies it back that way."""
    if any(_same(value, v) for v in whole):
        return [value.strip()]
    return [part.strip() for part in re.split(r"[,;]", value) if part.strip()]


def _fix_problem(
    path: str, attribute: Attribute | None, held: list[str], old: list[str], new: list[str]
) -> str | None:
    """Why a proposal cannot be applied (None when it can): every old value must be held, every new
    value allowed (or `none` alone), a single-valued attribute gets one value, and something changes."""
    if attribute is None:
        return f"{path} is not an attribute of the profile"
    missing = [v for v in old if not any(_same(v, h) for h in held)]
    if not old or missing:
        holds = ", ".join(held) or "nothing"
        return f"{', '.join(missing or old)!r} is not a value of {path} (it holds {holds})"
    removing = len(new) == 1 and _same(new[0], REMOVE)
    unknown = [v for v in new if not any(_same(v, a) for a in attribute.values)]
    if not new or (unknown and not removing):
        return f"{', '.join(unknown or new)!r} is not in the dictionary of {path}"
    if attribute.pick == 1 and len(new) > 1:
        return f"{path} holds one value; {len(new)} were proposed"
    if {v.lower() for v in old} == {v.lower() for v in new}:
        return "the new value equals the old one"
    return None


def _changed_values(attribute: Attribute, held: list[str], old: list[str], new: list[str]) -> list[str]:
    """The values after replacing the `old` ones by the `new` ones (dictionary spelling)."""
    kept = [v for v in held if not any(_same(v, o) for o in old)]
    for value in new:
        canonical = next((a for a in attribute.values if _same(value, a)), None)
        if canonical is not None and canonical not in kept:
            kept.append(canonical)
    return kept


def apply_fixes(
    profile: Profile, dictionary: ProfileDictionary, proposals: list[dict[str, str]]
) -> tuple[Profile, list[ProfileFix]]:
    """The profile with the valid proposals applied, and every proposal recorded. A list-valued
    attribute's old or new value may name several values ("comedy, action"): each is checked."""
    fixed = profile.model_copy(deep=True)
    record: list[ProfileFix] = []
    for p in proposals:
        path, old, new, reason = p["attribute"], p["old_value"].strip(), p["new_value"].strip(), p["reason"]
        part, key = path.split(".", 1)
        attribute = dictionary.part(part).get(key)
        held = fixed.values_of(path)
        olds = split_values(old, held)
        news = split_values(new, [*attribute.values, REMOVE] if attribute else [])
        problem = _fix_problem(path, attribute, held, olds, news)
        if problem is None and attribute is not None:
            kept = _changed_values(attribute, held, olds, news)
            values = fixed.part(part)
            if attribute.pick == 1:
                if kept:
                    values[key] = kept[0]
                else:
                    values.pop(key, None)
            else:
                values[key] = kept
        record.append(
            ProfileFix(
                attribute=path,
                old_value=old,
                new_value=new,
                reason=reason,
                applied=problem is None,
                rejected=problem,
            )
        )
    return fixed, record
