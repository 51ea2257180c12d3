"""The structured values of declared record keys (`crsim.model.annotations`): typed declared fields,
other fields kept."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, NonNegativeInt


class OpenValue(BaseModel):
    """A structured value whose declared fields are typed; other fields are kept."""

    model_config = ConfigDict(extra="allow")


class TurnRatings(OpenValue):
    """A rating simulator's ratings of the CRS turn it answers; each aspect is a dict with `score`
    (a number, or absent with an `error`), `justification` and aspect-specific fields."""

    turn: NonNegativeInt
    language: dict[str, Any] | None = None
    action: dict[str, Any] | None = None
    recommendation: dict[str, Any] | None = None


class TargetSplit(OpenValue):
    """PEPPER's split of the targets into the ones the user is told about and the rest."""

    selected: list[str]
    residual: list[str] = []


class HTTPExchange(OpenValue):
    """Retries behind one CRS reply of an HTTP adapter."""

    retries: list[dict[str, Any]]
    message_possibly_resent: bool


class ShownItem(OpenValue):
    item: str
    seen: bool


class DraftCheck(OpenValue):
    """One check of an LLM user's draft: which check (`role_flip`, `target_named`, ...), what was done
    (`retried`, `fallback`, ...), the rejected draft and a detail."""

    check: str
    action: str
    draft: str | None = None
    detail: str | None = None


class CatalogueAnswer(OpenValue):
    """A request the CRS's own text left unanswered, answered from the catalogue: the item, the slot."""

    item: str
    slot: str


class ExtractionError(OpenValue):
    """A failed LLM annotation: the annotator or extractor, the error, the model's raw answer."""

    error: str
    raw: str | None = None
