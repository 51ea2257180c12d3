"""Text normalisation and tokenisation shared by item linking and rule-based understanding, and the
one rule for text from outside (CRS replies, LLM answers, dataset and item files): code points that
cannot be written are replaced with U+FFFD and counted (`clean_text`, `clean_value`, `loads_clean`)."""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rapidfuzz import fuzz

#: A word (apostrophes inside it allowed, as in "haven't" or "Ocean's") or an ampersand.
_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*|&", re.UNICODE)
_APOSTROPHES = str.maketrans("", "", "'’")

_STOPWORD_TEXT = """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours out over own same she
    should so some such than that the their theirs them then there these they this those through to
    too under until up very was we were what when where which while who whom why will with would you
    your yours yes yeah ok okay sure like love good great well really one also maybe something
    anything movie movies film films watch seen see think know want looking look thanks thank hi
    hello hey bye goodbye please"""
#: Function words and chat filler: a title with at most one other word is too easy to hit by accident.
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def fold(text: str) -> str:
    """Lower-case and strip accents (the folded text may be longer or shorter than `text`)."""
    if text.isascii():  # nothing to decompose or strip: skip the per-character Unicode pass
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


@dataclass(frozen=True, slots=True)
class Token:
    text: str
    start: int
    end: int


def tokenize(text: str) -> list[Token]:
    """Alphanumeric tokens of the folded text with their character offsets in `text`.

    Apostrophes inside a word are dropped ("haven't" -> "havent", "Ocean's" -> "oceans"), so a
    contraction is one token rather than a stray "t" or "s" that could look like a title.
    Offsets always index `text`, also when folding changes the length (Hangul, ligatures, "İ").
    """
    if text.isascii():
        folded = text.lower()
        return [Token(_token_text(m.group()), m.start(), m.end()) for m in _TOKEN.finditer(folded)]
    folded, origin = _fold_with_origin(text)
    return [
        Token(_token_text(m.group()), origin[m.start()], origin[m.end() - 1] + 1)
        for m in _TOKEN.finditer(folded)
    ]


def _fold_with_origin(text: str) -> tuple[str, list[int]]:
    """Fold character by character, remembering for each folded character its index in `text`."""
    parts: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        folded = fold(char)
        parts.append(folded)
        origin.extend([index] * len(folded))
    return "".join(parts), origin


def _token_text(raw: str) -> str:
    return "and" if raw == "&" else raw.translate(_APOSTROPHES)


@lru_cache(maxsize=4096)
def normalize(text: str) -> str:
    """Case-, accent- and punctuation-insensitive form: tokens joined by single spaces.

    Pure, and called again and again on the same titles and messages (an LLM user's checks compare
    each draft with every earlier message), so recent results are kept. ASCII text takes a short
    path with the same result: no offsets are needed, apostrophes only occur inside tokens and "&"
    only as a token of its own, so the joined tokens can be edited as one string.
    """
    if text.isascii():
        return " ".join(_TOKEN.findall(text.lower())).translate(_APOSTROPHES).replace("&", "and")
    return " ".join(t.text for t in tokenize(text))


#: rapidfuzz `fuzz.ratio` (0-100) from which two messages count as near-duplicates.
REPEAT_RATIO = 90.0


def near_duplicate(a: str, b: str) -> bool:
    """Whether two messages say nearly the same words in the same order: `fuzz.ratio` of their
    normalised forms at least `REPEAT_RATIO` (the behaviour report's repeat rule, and the `llm` CRS's
    check of its own loops)."""
    x, y = normalize(a), normalize(b)
    return bool(x and y) and fuzz.ratio(x, y) >= REPEAT_RATIO


def states_value(text: str, values: Iterable[str], leave_out: Iterable[str] = ()) -> bool:
    """Whether `text` states one of `values` as a whole phrase, all normalised, not counting what it
    says inside the `leave_out` phrases (the item's titles: the year in "Heat (1995)" states nothing).

    The one rule by which an answer is found in a reply: the `llm` CRS's check that its model answered
    a request, and the `requests_answered` metric (docs/metrics.md)."""
    said = f" {normalize(text)} "
    for phrase in sorted((normalize(p) for p in leave_out), key=len, reverse=True):
        if phrase:
            said = said.replace(f" {phrase} ", " ")
    return any(f" {value} " in said for value in (normalize(v) for v in values) if value)


_ARTICLE_SUFFIX = re.compile(r"^(?P<rest>.*?),\s*(?P<article>the|a|an|les|la|le|el|il|die|der|das)$", re.I)


def unarticle(title: str) -> str:
    """Turn catalogue style 'Matrix, The' into 'The Matrix'."""
    match = _ARTICLE_SUFFIX.match(title.strip())
    if match is None:
        return title.strip()
    return f"{match.group('article')} {match.group('rest')}"


_YEAR_SUFFIX = re.compile(r"^(?P<title>.*?)\s*\((?P<year>\d{4})(?:[–-]\d{0,4})?\)\s*$")


def split_title_year(raw: str) -> tuple[str, int | None]:
    """'Police Academy  (1984)' -> ('Police Academy', 1984); a title without a year keeps None."""
    match = _YEAR_SUFFIX.match(raw.strip())
    if match is None:
        return raw.strip(), None
    return match.group("title").strip(), int(match.group("year"))


# --- text from outside: safe to write, with a count of what was replaced -----------------------

#: What replaces a code point that cannot be written as UTF-8 (a lone surrogate).
REPLACEMENT = "\ufffd"

_SURROGATE = re.compile("[\ud800-\udfff]")
#: A JSON text can only yield a surrogate through a `\uD800`..`\uDFFF` escape (raw ones are not UTF-8).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def clean_text(text: str) -> tuple[str, int]:
    """`text` with every lone surrogate replaced by U+FFFD, and how many were replaced.

    Lone surrogates (e.g. from the valid JSON escape "\\ud800") are the only code points a Python
    string can hold that UTF-8 cannot encode; a record holding one cannot be written. Everything
    else, including U+FFFD already present, is kept as it is.
    """
    if text.isascii():
        return text, 0
    cleaned, count = _SURROGATE.subn(REPLACEMENT, text)
    return cleaned, count


def clean_value(value: Any) -> tuple[Any, int]:
    """A parsed JSON value with `clean_text` applied to every string in it (keys too), and the count.

    Containers are rebuilt only when something in them changed. Raises RecursionError for values
    nested deeper than the interpreter's recursion limit (parsers refuse those first).
    """
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        cleaned = [clean_value(v) for v in value]
        count = sum(n for _, n in cleaned)
        return ([v for v, _ in cleaned] if count else value), count
    if isinstance(value, dict):
        pairs = [(clean_value(k), clean_value(v)) for k, v in value.items()]
        count = sum(kn + vn for (_, kn), (_, vn) in pairs)
        return (_distinct_keys(pairs) if count else value), count
    return value, 0


def surely_clean(value: Any) -> bool:
    """True when no string in `value` (a parsed JSON value, keys too) holds a lone surrogate, so
    `clean_value(value)` would return it unchanged; False when it may hold one or cannot tell.

    Checked on one `json.dumps` of the value (C speed, lone surrogates written as they are), a
    fraction of `clean_value`'s walk over a chat completion's few dozen nodes.
    """
    try:
        dumped = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # not JSON-like, circular, too deep, huge ints
        return False
    return dumped.isascii() or _SURROGATE.search(dumped) is None


def _distinct_keys(pairs: list[tuple[tuple[Any, int], tuple[Any, int]]]) -> dict[Any, Any]:
    """The cleaned mapping, losing no value: keys that differed only in a lone surrogate
    ("k\\ud800", "k\\udc00") both clean to "k\\ufffd", so a cleaned key already taken gets the
    first free " #2", " #3", ... Keys that cleaning left alone keep their names."""
    kept = {key for (key, replaced), _ in pairs if not replaced}
    cleaned: dict[Any, Any] = {}
    for (key, replaced), (item, _) in pairs:
        if replaced and (key in kept or key in cleaned):
            suffix = 2
            while f"{key} #{suffix}" in kept or f"{key} #{suffix}" in cleaned:
                suffix += 1
            key = f"{key} #{suffix}"
        cleaned[key] = item
    return cleaned


def may_hold_surrogates(json_text: str) -> bool:
    """Whether parsing `json_text` (a decoded JSON text) can give a string with a lone surrogate."""
    return _SURROGATE_ESCAPE.search(json_text) is not None


class JSONTextError(ValueError):
    """A JSON text that is valid in form but cannot be read: an over-long number or too deep nesting."""


def _not_finite(token: str) -> float:
    raise ValueError(f"holds a number that is not finite ({token})")


def _finite_float(token: str) -> float:
    number = float(token)
    if math.isinf(number):
        _not_finite(token[:20] + ("..." if len(token) > 20 else ""))
    return number


def loads_clean(json_text: str, *, finite: bool = False) -> tuple[Any, int]:
    """Parse a JSON text from outside; returns the value with lone surrogates replaced, and the count.

    Raises `json.JSONDecodeError` for malformed JSON and `JSONTextError` (with a short reason) for
    an integer longer than Python converts or nesting deeper than the parser's recursion limit,
    which the standard parser reports as a bare ValueError / RecursionError. With `finite`, the
    non-standard `NaN` / `Infinity` and numbers too large for a float (1e400) are `JSONTextError`
    too, for readers whose answers are JSON again (which cannot hold them).
    """
    extra: dict[str, Any] = {"parse_constant": _not_finite, "parse_float": _finite_float} if finite else {}
    try:
        value = json.loads(json_text, **extra)
        return clean_value(value) if may_hold_surrogates(json_text) else (value, 0)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise JSONTextError("nested too deeply") from None
    except ValueError as exc:  # "Exceeds the limit (4300 digits) for integer string conversion: ..."
        raise JSONTextError(str(exc).split(":")[0]) from None
