"""Reading a CRS server's response body: bounded decoding of its content coding (a compressed body
costs at most the size cap) and parsing its JSON (lone surrogates replaced and counted)."""

from __future__ import annotations

import json
import zlib
from typing import Any

from crsim.crs.http.errors import CRSInvalidResponse
from crsim.model.text import JSONTextError, loads_clean

#: Content codings crsim asks for and decodes itself (with an output bound); others are refused.
ACCEPT_ENCODING = "gzip, deflate"


class BodyDecoder:
    """Incremental decoding of one `Content-Encoding` (identity, gzip or deflate) with bounded output."""

    def __init__(self, header: str) -> None:
        self._started = False
        if not header:  # the usual case: no Content-Encoding at all
            self.identity, self._deflate, self._zlib = True, False, None
            return
        codings = [c.strip().lower() for c in header.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if len(codings) > 1 or (codings and codings[0] not in ("gzip", "x-gzip", "deflate")):
            raise CRSInvalidResponse(f"unsupported Content-Encoding {header.strip()[:40]!r}")
        self.identity = not codings
        self._deflate = codings == ["deflate"]
        self._zlib = None if self.identity else zlib.decompressobj(zlib.MAX_WBITS | 32)

    def decode(self, data: bytes, max_out: int) -> bytes:
        """At most `max_out` decoded bytes of `data`; exactly `max_out` means there was more."""
        if self._zlib is None:
            return data
        try:
            out = self._zlib.decompress(data, max_out)
        except zlib.error:
            if not (self._deflate and not self._started):
                raise CRSInvalidResponse("response body could not be decoded (bad compressed data)") from None
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)  # "deflate" sent without its zlib header
            self._started = True
            return self.decode(data, max_out)
        self._started = True
        return out

    def finish(self) -> None:
        """A compressed body must end its stream; a cut one is not a complete reply."""
        if self._zlib is not None and self._started and not self._zlib.eof:
            raise CRSInvalidResponse("response body could not be decoded (compressed data ends early)")


def parse_json(body: bytes) -> tuple[Any, int]:
    """The JSON value of a body and how many lone surrogates in its strings were replaced.

    Every way a body can fail to be read is a CRSInvalidResponse: malformed JSON, bytes that are not
    text, nesting deeper than the parser goes, an integer longer than Python converts.
    """
    if not body.strip():
        return None, 0  # e.g. 204 No Content; callers that need an object reject None
    try:
        text = body.decode(json.detect_encoding(body))
        return loads_clean(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CRSInvalidResponse(
            f"response is not valid JSON ({exc.__class__.__name__} at byte {_pos(exc)})"
        ) from None
    except JSONTextError as exc:
        raise CRSInvalidResponse(f"response JSON cannot be read ({exc})") from None


def _pos(exc: Exception) -> int:
    return getattr(exc, "pos", getattr(exc, "start", 0))
