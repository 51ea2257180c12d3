"""Weak titles: short titles ("Up", "It", "Get Out") whose one content word is an ordinary word (a
function or chat word, a number, a word the catalogue uses outside titles), linked only where the
text marks them as titles (`crsim.model.linking`)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Iterable

from crsim.model.chat_words import CHAT_WORDS
from crsim.model.text import STOPWORDS, fold, normalize
from crsim.model.title_table import Columns, Linkable


def is_weak(key: tuple[str, ...]) -> bool:
    """A title short enough to hit by accident: one word besides function words ("Get Out", "Her")."""
    return len(key) == 1 or sum(t not in STOPWORDS for t in key) <= 1


#: Word characters of catalogue text (enough to find candidate words; `tokenize` is not needed).
_WORD = re.compile(r"[^\W_]+")


def weak_keys(short: list[tuple[str, ...]], items: Collection[Linkable]) -> frozenset[tuple[str, ...]]:
    """The short title keys whose one content word is an ordinary word (module docstring)."""
    content = {key: [t for t in key if t not in STOPWORDS] for key in short}
    candidates = {
        words[0]
        for key, words in content.items()
        if len(words) == 1 and not _ordinary_alone(words[0], len(key))
    }
    used = _used_outside_titles(candidates, items) if candidates else set()
    return frozenset(
        key
        for key, words in content.items()
        if len(words) != 1 or _ordinary_alone(words[0], len(key)) or words[0] in used
    )


def _ordinary_alone(word: str, length: int) -> bool:
    """An ordinary word whatever the catalogue: a function or chat word, a single letter, or a number
    standing alone ("1917"; with a function word, as in "no. 9", it is a name)."""
    if word.isdigit():
        return length == 1
    return word in STOPWORDS or word in CHAT_WORDS or len(word) < 2


def _used_outside_titles(words: set[str], items: Collection[Linkable]) -> set[str]:
    """The `words` found in the non-title text of an item whose own title lacks them."""
    found: dict[int, set[str]] = defaultdict(set)
    titles: list[str] = []
    for p, value in _text_values_by_position(items, titles):
        hit = [w for w in _WORD.findall(fold(value)) if w in words]
        if hit:
            found[p].update(hit)
    used: set[str] = set()
    for p, hits in found.items():
        used |= hits - set(normalize(titles[p]).split())
    return used


def _text_values_by_position(items: Collection[Linkable], titles: list[str]) -> Iterable[tuple[int, str]]:
    """(position, value) for every string value of every item other than its title, id and aliases
    (`_text_values`); `titles` is filled with the titles by position."""
    if not hasattr(items, "extra_column"):
        for p, item in enumerate(items):
            titles.append(item.title)
            yield from ((p, value) for value in _text_values(item))
        return
    columns: Columns = items  # type: ignore[assignment]
    titles.extend(columns.titles)
    for name in ("genres", "directors", "actors", "keywords", "plot"):
        for p, raw in enumerate(columns.field_column(name) or ()):
            for value in raw if isinstance(raw, list) else [raw] if raw else []:
                yield p, value
    for key in columns.extra_keys:
        if key == "aliases":
            continue
        for p, raw in enumerate(columns.extra_column(key) or ()):
            for value in raw if isinstance(raw, list) else [raw]:
                if isinstance(value, str):
                    yield p, value


def _text_values(item: Linkable) -> Iterable[str]:
    """An item's attribute values other than its title, id and aliases, as strings."""
    yield from (*item.genres, *item.directors, *item.actors, *item.keywords)
    if item.plot:
        yield item.plot
    for key, raw in item.extra.items():
        if key == "aliases":
            continue
        for value in raw if isinstance(raw, list) else [raw]:
            if isinstance(value, str):
                yield value
