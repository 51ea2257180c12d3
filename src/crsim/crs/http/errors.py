"""What can go wrong with a CRS server's reply: the error kinds (the class name is the kind recorded),
and the fields of a JSON reply read with an error naming what the server sent instead."""

from __future__ import annotations

from typing import Any


class CRSHTTPError(Exception):
    """A CRS server failed to give a usable reply. The class name is the error kind in records."""


class CRSConnectionError(CRSHTTPError):
    """The connection could not be opened or was lost before a complete reply."""


class CRSTimeoutError(CRSHTTPError):
    """No complete reply within `timeout_s`."""


class CRSStatusError(CRSHTTPError):
    """The server answered with an error status."""


class CRSInvalidResponse(CRSHTTPError):
    """The body is not the JSON the protocol prescribes (or its text is empty)."""


class CRSResponseTooLarge(CRSHTTPError):
    """The body exceeded `max_response_bytes`; it was not read further."""


class CRSRedirectError(CRSHTTPError):
    """The server redirected to another host (or redirected too often); not followed."""


def sent(value: Any, limit: int = 8) -> str:
    """What a server sent, for an error message: `an object with fields 'a', 'b'`, `a list of 3`,
    `the string 'no'`, `null`. Names and strings are the server's (untrusted): quoted, printable
    characters only, cut short, and at most `limit` fields listed."""

    def short(text: str, width: int = 40) -> str:
        text = "".join(c if c.isprintable() else "?" for c in text)
        return repr(text if len(text) <= width else text[: width - 1] + "…")

    if isinstance(value, dict):
        if not value:
            return "an empty object"
        names = [short(str(key)) for key in list(value)[:limit]]
        more = f" and {len(value) - limit} more" if len(value) > limit else ""
        return f"an object with field{'s' if len(value) > 1 else ''} {', '.join(names)}{more}"
    if isinstance(value, list):
        return f"a list of {len(value)}" if value else "an empty list"
    if isinstance(value, str):
        return f"the string {short(value)}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null (or no body)"
    if isinstance(value, int | float):
        return f"the number {value!r}"[:60]
    return type(value).__name__


def field_of(data: Any, *path: str | int, what: str) -> Any:
    """`data[path[0]][path[1]]...`, or a CRSInvalidResponse naming the missing field and what the
    server sent where it was expected."""
    current = data
    for key in path:
        try:
            current = current[key]
        except (KeyError, IndexError, TypeError):
            dotted = ".".join(str(p) for p in path)
            raise CRSInvalidResponse(
                f"{what}: response has no field '{dotted}'; it sent {sent(current)}"
            ) from None
    return current
