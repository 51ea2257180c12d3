"""Secrets: read from the environment once, checked, and masked in everything crsim records or prints.

Keys are read only through `secret_from_env`, which strips surrounding whitespace (a CRLF `.env` file
leaves a trailing carriage return), refuses characters an HTTP header cannot carry with a
`ConfigError` that names the variable but never the value, and registers the value for masking.

`redact(text)` masks every registered value, the value of every set environment variable named like
a secret (`*_API_KEY`, `API_KEY`, `*_TOKEN`, `*SECRET*`, `*PASSWORD*`, plus every name read through
`secret_from_env`) and token shapes (`Bearer <token>`, `sk-...`, `hf_...`, `ghp_...`). The places where
text leaves crsim apply it: error records (`ErrorInfo`, `LLMError`), the run and evaluation writers,
the report, the export and the command line (its output streams and a logging filter).

This module sits at the bottom of the package (like `core/errors.py`), so every layer may use it.
"""

from __future__ import annotations

import html
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TextIO, cast

from crsim.core.errors import ConfigError

MASK = "[redacted]"
#: Shorter values are not masked: they are placeholders such as vLLM's `EMPTY`, not secrets, and
#: masking them would mangle ordinary words in dialogues.
MIN_SECRET_LENGTH = 8

_SECRET_NAME = re.compile(r"(^|_)API_?KEY$|(^|_)TOKEN$|SECRET|PASSWORD|PASSWD", re.IGNORECASE)
_HEADER_VALUE = re.compile(r"[\x21-\x7e]+")
#: Stripped from both ends of a key: ASCII whitespace only (a stray control character is an error).
_ASCII_SPACE = " \t\r\n\f\v"
#: Where a credential shape may start: not inside a word, or right after a JSON/repr escape (`\n`).
_START = r"(?:(?<![A-Za-z0-9])|(?<=\\[nrtbf]))"
#: Credential shapes masked wherever they appear, configured or not; `keep` is left in place.
_SHAPES = (
    _START + r"(?P<keep>(?i:bearer)[ \t]+)[A-Za-z0-9\-._~+/]{8,}=*",
    _START + r"sk-[A-Za-z0-9_\-]{16,}",
    _START + r"hf_[A-Za-z0-9]{20,}",
    _START + r"gh[pousr]_[A-Za-z0-9]{20,}",
)
_GITHUB = re.compile(r"gh[pousr]_")

_registered: set[str] = set()
_secret_names: set[str] = set()
_lock = threading.Lock()


def secret_from_env(name: str) -> str | None:
    """The value of environment variable `name`, stripped; None when unset or blank.

    Raises `ConfigError` (naming the variable, never the value) when the value holds characters an
    HTTP header cannot carry; registers the value so that `redact` masks it from now on.
    """
    with _lock:
        _secret_names.add(name)
    raw = os.environ.get(name)
    if raw is None:
        return None
    value = raw.strip(_ASCII_SPACE)
    if not value:
        return None
    if not _HEADER_VALUE.fullmatch(value):
        register_secret(value)  # it may still turn up in an error message: mask it there too
        raise ConfigError(
            f"environment variable {name}: the value has {_describe_bad(value)}, so it cannot go into an "
            "HTTP header (expected printable ASCII without spaces inside; surrounding whitespace is "
            "stripped); check how it was set, e.g. a copied line break"
        )
    register_secret(value)
    return value


def _describe_bad(value: str) -> str:
    for char in value:
        if ord(char) < 0x20 or ord(char) == 0x7F:
            return "a control character"
        if char == " ":
            return "a space"
        if ord(char) > 0x7E:
            return "a non-ASCII character"
    return "an unexpected character"  # pragma: no cover - only called when the pattern fails


def register_secret(value: str) -> None:
    """Mask `value` (and its stripped form) in everything redacted from now on."""
    with _lock:
        for candidate in {value, value.strip()}:
            if len(candidate) >= MIN_SECRET_LENGTH:
                _registered.add(candidate)


def register_config_secrets(config: Any) -> None:
    """Register the values of the variables named by every `api_key_env` field in a (manifest) config,
    so commands that read a run folder mask the keys it was made with, too."""
    if isinstance(config, dict):
        for key, value in config.items():
            if key == "api_key_env" and isinstance(value, str) and value:
                with _lock:
                    _secret_names.add(value)
            else:
                register_config_secrets(value)
    elif isinstance(config, list):
        for value in config:
            register_config_secrets(value)


@dataclass
class _EnvScan:
    """The last scan of the environment: the variables it found, checked again cheaply on each use."""

    size: int = -1
    names: tuple[str, ...] = ()
    values: tuple[str | None, ...] = ()
    found: frozenset[str] = frozenset()


_scan = _EnvScan()


def _env_secrets(names: set[str]) -> frozenset[str]:
    """Values of set variables named like secrets (or in `names`). The full scan reruns only when the
    number of variables changes or a variable it found changed value: a scan costs more than a redaction."""
    global _scan
    scan = _scan
    if (
        scan.size == len(os.environ)
        and names.issubset(scan.names)
        and tuple(os.environ.get(name) for name in scan.names) == scan.values
    ):
        return scan.found
    matched = sorted(name for name in os.environ if name in names or _SECRET_NAME.search(name))
    matched = sorted(set(matched) | names)
    values = tuple(os.environ.get(name) for name in matched)
    found = frozenset(
        candidate
        for value in values
        if value is not None
        for candidate in (value, value.strip())
        if len(candidate) >= MIN_SECRET_LENGTH
    )
    _scan = _EnvScan(len(os.environ), tuple(matched), values, found)
    return found


def secret_values() -> frozenset[str]:
    """Every value masked now: registered ones and those of set variables named like secrets."""
    with _lock:
        registered = frozenset(_registered)
        names = set(_secret_names)
    return registered | _env_secrets(names)


def _forms(value: str) -> set[str]:
    """How a value may appear in text crsim writes: as is, JSON-escaped, HTML-escaped, repr-escaped."""
    return {
        value,
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        html.escape(value),
        html.escape(value).replace("&#x27;", "&#39;").replace("&quot;", "&#34;"),  # Jinja's escapes
        repr(value)[1:-1],
    }


@dataclass(frozen=True)
class _Patterns:
    exact: re.Pattern[str]
    forms: tuple[str, ...]  # lower-cased, for the quick check


@lru_cache(maxsize=16)
def _patterns(values: frozenset[str]) -> _Patterns:
    """The masked spans, and the lower-cased forms the quick check looks for."""
    forms = sorted({form for value in values for form in _forms(value) if form}, key=len, reverse=True)
    literal = "|".join(re.escape(form) for form in forms)
    exact = "|".join([*([literal] if literal else []), *(f"(?:{shape})" for shape in _SHAPES)])
    return _Patterns(re.compile(exact), tuple(sorted({form.lower() for form in forms})))


def _may_hold_secret(text: str, patterns: _Patterns) -> bool:
    """A quick superset test of what the masks match, on serialised JSON before it is parsed (escapes
    like `\\n` before `Bearer` would hide a match from the exact patterns); substring searches only."""
    low = text.lower()
    if "bearer" in low or "sk-" in low or "hf_" in low or _GITHUB.search(low):
        return True
    return any(form in low for form in patterns.forms)


def _mask(match: re.Match[str]) -> str:
    return (match.group("keep") or "") + MASK


def redactor() -> Callable[[str], str]:
    """`redact` with today's secrets fixed, for masking many strings (a table's cells) in one go."""
    patterns = _patterns(secret_values())

    def mask(text: str) -> str:
        if not text or not _may_hold_secret(text, patterns):  # substring searches: cheap on long text
            return text
        return patterns.exact.sub(_mask, text)

    return mask


def secret_check() -> Callable[[str], bool]:
    """Whether a text may hold something `redact` masks, with today's secrets fixed: the quick superset
    test alone (substring searches), for checking many short texts one by one (the parts of score
    lines) and redacting only those it flags."""
    patterns = _patterns(secret_values())
    return lambda text: _may_hold_secret(text, patterns)


def redact(text: str) -> str:
    """`text` with every secret value and credential shape replaced by `[redacted]`."""
    return redactor()(text) if text else text


def redact_data(data: Any) -> Any:
    """A copy of JSON-like data (dicts, lists, strings) with every string redacted (keys too)."""
    return _walk(data, redactor())


def _walk(data: Any, mask: Callable[[str], str]) -> Any:
    if isinstance(data, str):
        return mask(data)
    if isinstance(data, dict):
        return {mask(k) if isinstance(k, str) else k: _walk(v, mask) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_walk(v, mask) for v in data]
    return data


def redact_json_text(text: str, *, indent: int | None = None) -> str:
    """Serialised JSON with its strings redacted. Text without anything to mask is returned as is;
    otherwise it is parsed, redacted value by value and serialised again (`indent` as written), so
    escapes can neither hide a secret nor be cut in half by the mask."""
    if not _may_hold_secret(text, _patterns(secret_values())):
        return text
    trailing = text[len(text.rstrip("\n")) :]
    separators = (",", ":") if indent is None else None
    redacted = redact_data(json.loads(text))
    return json.dumps(redacted, ensure_ascii=False, indent=indent, separators=separators) + trailing


def redact_json_lines(text: str) -> str:
    """JSON Lines (one document per line) with their strings redacted; see `redact_json_text`."""
    if not _may_hold_secret(text, _patterns(secret_values())):
        return text
    return "".join(redact_json_text(line) for line in text.splitlines(keepends=True))


class RedactingFilter(logging.Filter):
    """Masks secrets in log records: the message is formatted and redacted once, arguments dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken format string is the logger's problem, not a leak
            message = str(record.msg)
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


class RedactingStream:
    """A text stream that redacts what is written to it and passes everything else to the stream."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(redact(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def protect_process_output() -> None:
    """Redact what this process prints (stdout, stderr) and logs (every handler of the root logger
    and a filter on the `crsim` logger). For the command line only: it changes process-wide state."""
    if not isinstance(sys.stdout, RedactingStream):
        sys.stdout = cast(TextIO, RedactingStream(sys.stdout))
    if not isinstance(sys.stderr, RedactingStream):
        sys.stderr = cast(TextIO, RedactingStream(sys.stderr))
    root = logging.getLogger()
    for logger in (root, logging.getLogger("crsim")):
        if not any(isinstance(f, RedactingFilter) for f in logger.filters):
            logger.addFilter(RedactingFilter())
    for handler in root.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
