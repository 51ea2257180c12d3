"""The machinery of declared record keys: which open dictionary a key lives in (`Scope`), a declared
key (`Key`: name, type, writers, readers, meaning; checked writes, located reads) and the list of
every declared key in declaration order (`DECLARED`). The keys themselves are declared in
`crsim.model.annotations`."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, TypeVar

from pydantic import TypeAdapter, ValidationError

from crsim.core.errors import DataError

T = TypeVar("T")


class Scope(StrEnum):
    """Which open dictionary a key lives in."""

    ANNOTATION = "annotations"
    METADATA = "metadata"
    PERSONA = "persona"


_FIELD_OF_SCOPE = {
    Scope.ANNOTATION: "annotations",
    Scope.METADATA: "metadata",
    Scope.PERSONA: "user_profile.persona",
}


@dataclass(frozen=True)
class Key(Generic[T]):
    """One declared key: name, type, writers, readers and a one-line description."""

    name: str
    scope: Scope
    adapter: TypeAdapter[T] = field(repr=False)
    type_name: str
    writers: tuple[str, ...]
    readers: tuple[str, ...]
    description: str

    def check(self, value: Any) -> Any:
        """`value` unchanged if it has the declared type; a `DataError` (a producer's bug) if not."""
        try:
            self.adapter.validate_python(value)
        except ValidationError as error:
            raise DataError(
                f"writing {self.scope.value} key {self.name!r}: expected {self.type_name}: {_first(error)}"
            ) from None
        return value

    def put(self, mapping: MutableMapping[str, Any], value: Any) -> None:
        """Store a checked value under this key (as given: the record's JSON does not change)."""
        mapping[self.name] = self.check(value)

    def entry(self, value: Any) -> dict[str, Any]:
        """`{name: value}` checked, for building a dictionary literal (`{**KEY.entry(v), ...}`)."""
        return {self.name: self.check(value)}

    def present(self, mapping: Mapping[str, Any] | None) -> bool:
        return mapping is not None and self.name in mapping

    def pop(self, mapping: MutableMapping[str, Any]) -> Any:
        """Remove the key, returning its raw value (None when absent)."""
        return mapping.pop(self.name, None)

    def get(self, mapping: Mapping[str, Any] | None, *, where: str, field_prefix: str = "") -> T | None:
        """The parsed value, None when absent; a `DataError` located by `where` (e.g. "dialogue 'd1'")
        and the field path when the value does not have the declared type."""
        if mapping is None or self.name not in mapping:
            return None
        return self.parse(mapping[self.name], where=where, field_prefix=field_prefix)

    def parse(self, raw: Any, *, where: str, field_prefix: str = "") -> T:
        try:
            return self.adapter.validate_python(raw)
        except ValidationError as error:
            path = f"{field_prefix}{_FIELD_OF_SCOPE[self.scope]}.{self.name}"
            located = DataError(f"{where}, field '{path}': expected {self.type_name}: {_first(error)}")
            located.field = path
            raise located from None


def _first(error: ValidationError) -> str:
    """The first problem of a validation error, in one line."""
    detail = error.errors()[0]
    location = ".".join(str(p) for p in detail["loc"])
    return f"{location}: {detail['msg']}" if location else str(detail["msg"])


#: Every declared key, in the order of docs/data-format.md.
DECLARED: list[Key[Any]] = []


def declare(
    name: str,
    scope: Scope,
    annotation: Any,
    type_name: str,
    *,
    writers: tuple[str, ...],
    readers: tuple[str, ...],
    description: str,
) -> Key[Any]:
    """A new key, added to `DECLARED`."""
    key: Key[Any] = Key(name, scope, TypeAdapter(annotation), type_name, writers, readers, description)
    DECLARED.append(key)
    return key
