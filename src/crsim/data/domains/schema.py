"""The domain file (YAML) as pydantic models: what a user writes to bring a catalogue (docs/domains.md)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from crsim.model.domain import SlotKind


def _as_list(value: object) -> object:
    """A single phrase where a list is expected is a list of one."""
    return [value] if isinstance(value, str) else value


Phrases = Annotated[list[str], BeforeValidator(_as_list)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ItemsSpec(_Strict):
    """Where the items are and which fields hold their id and title."""

    path: str = Field(
        min_length=1, description="JSONL (.jsonl, .jsonl.gz) or CSV (.csv) file, relative to the domain file."
    )
    id: str = Field("id", min_length=1, description="Field (CSV: column) holding the item id.")
    title: str = Field("title", min_length=1, description="Field (CSV: column) holding the item title.")
    separator: str = Field(
        "|", min_length=1, description="CSV only: separator of the values of a multi-valued slot's column."
    )


class ComparisonsSpec(_Strict):
    """Words that bound a number, before it ('at least 4') or after it ('4 or more')."""

    at_least: Phrases = Field(default_factory=list, description="'at least', 'or more': the number or above.")
    at_most: Phrases = Field(default_factory=list, description="'at most', 'up to': the number or below.")
    above: Phrases = Field(default_factory=list, description="'more than', 'over': above the number.")
    below: Phrases = Field(default_factory=list, description="'under', 'cheaper than': below the number.")


class SlotSpec(_Strict):
    """One slot: the item attribute it maps to, its kind, and how people name it and its values."""

    attribute: str | None = Field(None, min_length=1, description="Item attribute; default: the slot name.")
    kind: SlotKind = SlotKind.CATEGORICAL
    informable: bool | None = Field(None, description="Users can state it (default: true unless kind text).")
    requestable: bool = Field(False, description="Users can ask about it for a recommended item.")
    cues: Phrases = Field(default_factory=list, description="Words that name the slot in a question.")
    synonyms: dict[str, Phrases] = Field(
        default_factory=dict, description="Canonical value -> other phrasings of it."
    )
    order: list[str] = Field(
        default_factory=list, description="Ordinal slots: values from lowest to highest."
    )
    question: str | None = Field(None, min_length=1, description="How a CRS asks for this slot.")
    unit: str | None = Field(
        None,
        min_length=1,
        description="Numeric slots: the unit users say after a number ('pounds': '20 pounds') and answers "
        "carry ('Its weight: 2489 lbs'); default: none (the slot's plural name, 'stars', or its name).",
    )
    comparisons: ComparisonsSpec | None = Field(
        None,
        description="Numeric slots: more words bounding a number ('cheaper than'), beside the generic ones.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> SlotSpec:
        if self.kind is SlotKind.ORDINAL and not self.order:
            raise ValueError("an ordinal slot needs `order`: its values from lowest to highest")
        if self.order and self.kind is not SlotKind.ORDINAL:
            raise ValueError(f"`order` is only for ordinal slots (this one is {self.kind.value})")
        if self.kind is SlotKind.TEXT and self.informable:
            raise ValueError("a text slot cannot be informable (free text is asked about, not matched)")
        if (self.unit or self.comparisons) and self.kind is not SlotKind.NUMERIC:
            raise ValueError(
                f"`unit` and `comparisons` are only for numeric slots (this one is {self.kind.value})"
            )
        return self


class RatingsSpec(_Strict):
    """A ratings table (CSV): users with rating histories come from it."""

    path: str = Field(min_length=1, description="CSV file (.csv or .csv.gz), relative to the domain file.")
    user: str = Field("user_id", min_length=1)
    item: str = Field("item_id", min_length=1)
    rating: str = Field("rating", min_length=1)
    name: str | None = Field(
        None, min_length=1, description="What messages call the ratings (default: '<domain> ratings')."
    )
    label: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="Prefix of the simulated users' ids (default: the domain name).",
    )


#: A phrasing section: an inline mapping, or the name of a YAML file (relative to the domain file).
Section = str | dict[str, Any] | None


class PhrasingsSpec(_Strict):
    """Phrasing overrides: the template NLG of `abus`, the built-in CRSs' sentences and the vocabulary of
    the rule-based understanding of the CRSs and of `abus` (docs/domains.md)."""

    nlg: str | None = Field(
        None, min_length=1, description="abus template set: a shipped name or a YAML path."
    )
    crs: Section = Field(None, description="Built-in CRS sentences: name -> text (mapping or YAML file).")
    understanding: Section = Field(None, description="Vocabulary of the built-in CRSs' understanding.")
    nlu: Section = Field(None, description="Vocabulary of the agenda simulator's rule NLU.")


class DomainFile(_Strict):
    """A domain file: the items, the slots, and optional ratings, profiles and phrasings."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str | None = None
    item_noun: str = Field("item", min_length=1)
    item_noun_plural: str | None = Field(None, min_length=1)
    items: ItemsSpec
    slots: dict[str, SlotSpec] = Field(min_length=1)
    requestable_order: list[str] | None = Field(
        None, description="Order in which components list the requestable slots (default: file order)."
    )
    ratings: RatingsSpec | None = None
    popularity: str | None = Field(
        None,
        min_length=1,
        description="Item field `popular` ranks by (a number, higher first: a count of ratings, a score); "
        "default: `num_ratings` when the items carry it, else the catalogue's order.",
    )
    profiles: str | None = Field(
        None, min_length=1, description="RecUserSim profile dictionary: a shipped name or a YAML path."
    )
    phrasings: PhrasingsSpec = Field(default_factory=PhrasingsSpec)
