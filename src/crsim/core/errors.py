"""User-facing errors: each says where the problem is and what was expected."""

from __future__ import annotations

from collections.abc import Iterable


class CrsimError(Exception):
    """An error caused by input (a config, a file, a record), shown to the user in one line."""


class ConfigError(CrsimError):
    """A configuration names something unknown or gives a value of the wrong shape."""


class DataError(CrsimError):
    """A data file is missing, unreadable, or holds a record that does not validate."""

    def __init__(
        self, message: str, *, path: str | None = None, record: int | None = None, field: str | None = None
    ) -> None:
        where = []
        if path is not None:
            where.append(str(path))
        if record is not None:
            where.append(f"record {record}")
        if field:
            where.append(f"field '{field}'")
        self.path, self.record, self.field = path, record, field
        location = ", ".join(where)
        super().__init__(f"{location}: {message}" if location else message)


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest of `choices` to a misspelt `name`, or '' when none is close."""
    from rapidfuzz import fuzz, process

    known = [choice for choice in choices if choice != name]
    best = process.extractOne(name, known, scorer=fuzz.WRatio, score_cutoff=75) if known and name else None
    return f" (did you mean {best[0]!r}?)" if best else ""
