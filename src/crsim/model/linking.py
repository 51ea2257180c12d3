"""Linking free text to items: exact title spans first, fuzzy matching where a year marks a title.

Titles are matched case-, accent- and punctuation-insensitively, with or without a "(Year)"
after them, with catalogue-style articles ("Matrix, The") turned around, and with a leading
"the" dropped or added ("the Hangover (2010)" finds the film catalogued as "Hangover").

A title with at most one word besides function words ("Up", "It", "Her", "Weekend", "Get Out",
"The Room") is *weak* when that word is an ordinary word: a function word, a number, a word of
recommendation chat (`crsim.model.chat_words`), or a word the catalogue uses outside titles (in
the descriptions, plots or other attributes of another item). A weak title is linked only when it
is followed by a year, quoted, written in title case, capitalised in a way a sentence start or a
longer name does not explain, or (in a CRS's text that a user hears, `heard_titles`) when it is
the whole of what a recommendation offers ("How about moonlight?", "I'd suggest clerks, ...").
So "I like it up here" and "my weekend was fine" link nothing, while "Have you seen Up?" does.
A one-word title that is no ordinary word ("ballare", "nusha", "the junction" in a catalogue of
venues) is linked however it is written. The exact pass is a dictionary lookup of token n-grams
(longest first); fuzzy matching runs only on text right before a bracketed year that no exact title explained.

When several items share a title, a year right after it ("Sabrina (1954)") picks among them. Without
one, a year or decade given elsewhere in the text ("the 1954 film", "a 1950s romance", "from the
'50s") picks the item whose year it names or whose decade it gives, the cue nearest the title
winning; only when no cue fits any of them does the yearless rule of `choose` apply.

Titles that differ only in punctuation or in "&"/"and" share a key ("Mother" and "Mother!",
"Kicking & Screaming" and "Kicking and Screaming"); among them the item whose title is written
exactly as in the text wins, before popularity ("Mother." links "Mother (2009)", "Mother!" links
"Mother! (2017)"), and a catalogued title before another item's alias ("Oldboy (2013)" before the
alias "Oldboy" of "Old Boy (2003)"). When the text still fits several items equally (same title,
no year or cue telling them apart), popularity picks one and the mention lists all of them in
`candidates`: the link is ambiguous.

The parts: `title_table` (title variants, entries, the choice among items sharing a title),
`title_cues` (years, quotes, capitals, offers around a span), `weak_titles` (which short titles are weak).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import numpy as np
from rapidfuzz import fuzz, process

from crsim.model.text import STOPWORDS, Token, normalize, split_title_year, tokenize, unarticle
from crsim.model.title_cues import (
    YEAR,
    capitalised,
    include_closing_paren,
    name_before,
    offered,
    quoted,
    sentence_initial,
    year_after,
)
from crsim.model.title_table import (
    ARTICLES,
    Linkable,
    RowTable,
    TitleEntry,
    choose,
    choose_by_cues,
    first_word_lengths,
    surface,
    title_variants,
    written_span,
)
from crsim.model.weak_titles import is_weak, weak_keys

#: Tokens of text before a year that are considered as a fuzzy title candidate.
_MAX_FUZZY_TOKENS = 12
#: Where a misspelt title before a year cannot start earlier (titles may hold ":" and ",").
_FUZZY_STOP = ".!?;)\n"


@dataclass(frozen=True, slots=True)
class Mention:
    """An item found in text: `text[start:end]` is the surface form (year included if present)."""

    item_id: str
    start: int
    end: int
    surface: str
    score: float
    #: All items the text could name equally (the linked one first) when the link is ambiguous; else empty.
    candidates: tuple[str, ...] = ()

    @property
    def ambiguous(self) -> bool:
        return len(self.candidates) > 1


#: Entries made from item rows that a linker keeps (the titles met in text most recently).
MADE_ENTRIES = 100_000
#: What a pickled linker leaves out (rebuilt on loading, or made again when needed).
_NOT_PICKLED = frozenset({"_by_key", "_lengths", "_choices", "_choice_keys", "_made"})


class ItemLinker:
    """Finds item mentions in text. Build once per collection (it is cached on the collection).

    A title key that names one item holds that item's catalogue position, and its entry (`TitleEntry`)
    is made from the item's row when the key is met in text; only keys several items share keep
    their entries. A million titles so take a few hundred bytes each, and a pickle of the linker
    (the domain cache) holds its keys as one text and its positions as one array."""

    def __init__(self, items: Collection[Linkable], fuzzy_cutoff: float = 88.0) -> None:
        self.fuzzy_cutoff = fuzzy_cutoff
        self._rows = RowTable.of(items)
        self._by_key: dict[tuple[str, ...], int | list[TitleEntry]] = {}
        self._made: dict[tuple[str, ...], list[TitleEntry]] = {}
        words: dict[str, str] = {}  # one string per distinct word of the keys (a million titles)
        rows = self._rows
        for p, title in enumerate(rows.titles):
            for variant, origin in title_variants(title, rows.aliases_at(p)).items():
                key = tuple(words.setdefault(w, w) for w in normalize(variant).split())
                if key:
                    self._add(key, p, variant, origin)
        self._weak = weak_keys([key for key in self._by_key if is_weak(key)], items)
        self._lengths = first_word_lengths(self._by_key)

    def __getstate__(self) -> dict[str, Any]:
        """The keys as one text (a line each), the positions as one array, shared entries as they are."""
        state = {k: v for k, v in self.__dict__.items() if k not in _NOT_PICKLED}
        held = list(self._by_key.values())
        state["_keys"] = "\n".join(" ".join(key) for key in self._by_key)
        state["_positions"] = np.array([v if isinstance(v, int) else -1 for v in held], dtype=np.int64)
        state["_shared"] = [v for v in held if not isinstance(v, int)]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        keys, positions, shared = state.pop("_keys"), state.pop("_positions"), iter(state.pop("_shared"))
        self.__dict__.update(state)
        words: dict[str, str] = {}
        by_key: dict[tuple[str, ...], int | list[TitleEntry]] = {}
        for line, position in zip(keys.split("\n") if keys else [], positions.tolist(), strict=True):
            key = tuple([words.setdefault(w, w) for w in line.split(" ")])
            by_key[key] = position if position >= 0 else next(shared)
        self._by_key = by_key
        self._made = {}
        self._lengths = first_word_lengths(by_key)

    @cached_property
    def _choices(self) -> list[str]:
        """The title keys as strings, for fuzzy matching; made on the first fuzzy match only."""
        return [" ".join(k) for k in self._by_key]

    @cached_property
    def _choice_keys(self) -> list[tuple[str, ...]]:
        return list(self._by_key)

    def _add(self, key: tuple[str, ...], p: int, variant: str, origin: int) -> None:
        """Item `p` under `key` by one of its title variants."""
        held = self._by_key.get(key)
        if held is None:
            self._by_key[key] = p
            return
        if held == p:  # the item's own entry, made from its row when needed, holds this variant
            return
        entries = held if isinstance(held, list) else [self._rows.entry(held, key)]
        self._by_key[key] = entries
        entry = TitleEntry(
            self._rows.ids[p], self._rows.years[p], self._rows.popularity[p], ((surface(variant), origin),)
        )
        for n, existing in enumerate(entries):
            if existing.item_id == entry.item_id:
                forms = dict(existing.forms)
                for form, origin in entry.forms:
                    forms[form] = min(origin, forms.get(form, origin))
                entries[n] = TitleEntry(
                    existing.item_id, existing.year, existing.popularity, tuple(forms.items())
                )
                return
        entries.append(entry)

    def _entries(self, key: tuple[str, ...]) -> list[TitleEntry]:
        """The entries under a key that is in the linker."""
        found = self._get(key)
        assert found is not None
        return found

    def _get(self, key: tuple[str, ...]) -> list[TitleEntry] | None:
        """The entries under a key, None when no title has it. One made from its item's row is kept
        for the next time (up to `MADE_ENTRIES` of them)."""
        held = self._by_key.get(key)
        if held is None or isinstance(held, list):
            return held
        made = self._made
        found = made.get(key)
        if found is None:
            if len(made) >= MADE_ENTRIES:
                made.clear()
            found = made[key] = [self._rows.entry(held, key)]
        return found

    # --- public API ----------------------------------------------------------------------------

    def link(self, text: str, fuzzy: bool = True, offers: bool = False) -> list[Mention]:
        """All item mentions in `text`, left to right, non-overlapping. With `offers`, a weak title
        is also linked where it is the whole of what a recommendation offers ("How about heat?"):
        how a user hears a CRS, not how a CRS reads a user ("recommend anything else?")."""
        tokens = tokenize(text)
        mentions: list[Mention] = []
        covered = [False] * len(tokens)
        i = 0
        while i < len(tokens):
            found = self._exact_at(text, tokens, i, offers)
            if found is None:
                i += 1
                continue
            mention, end = found
            mentions.append(mention)
            for j in range(i, end):
                covered[j] = True
            i = end
        if fuzzy:
            mentions.extend(self._fuzzy_before_years(text, tokens, covered))
            mentions.sort(key=lambda m: m.start)
        return mentions

    def match_title(self, title: str) -> Mention | None:
        """The single best item for a string that is meant to be one title (e.g. a dataset field)."""
        name, year = split_title_year(title)
        key = tuple(normalize(unarticle(name)).split())
        if not key:
            return None
        entries = self._get(key)
        if entries:
            written = surface(unarticle(name))
            entry, candidates = choose(entries, year, (written, written))
            return Mention(entry.item_id, 0, len(title), title, 100.0, candidates)
        best = process.extractOne(
            " ".join(key), self._choices, scorer=fuzz.ratio, score_cutoff=self.fuzzy_cutoff
        )
        if best is None:
            return None
        _, score, index = best
        entry, candidates = choose(self._entries(self._choice_keys[index]), year)
        return Mention(entry.item_id, 0, len(title), title, float(score), candidates)

    # --- internals -----------------------------------------------------------------------------

    def _marked(self, text: str, tokens: list[Token], i: int, end: int) -> bool:
        """A weak title set off in the text: quoted, in title case, or capitalised where nothing
        else explains it.

        Title case means two or more capitalised words ("Scary Movie", "Get Out"), which counts
        even at a sentence start. A lone capital does not count on a single letter, at a sentence
        start, or next to another capitalised word (then the title is probably part of a name:
        "Ben Stiller", "Infinity War"). All-capitals words ("LOL", "LOVE") never count.
        """
        if quoted(text, tokens[i], tokens[end - 1]):
            return True
        first = i + 1 if end - i > 1 and tokens[i].text in ARTICLES else i
        capitals = [k for k in range(first, end) if capitalised(text, tokens[k])]
        if len(capitals) >= 2:
            return True
        if capitals != [first] or tokens[first].end - tokens[first].start < 2:
            return False
        if first == i and sentence_initial(text, tokens, i):
            return False
        if self._name_after(text, tokens, end):
            return False
        return first != i or not name_before(text, tokens, i)

    def _name_after(self, text: str, tokens: list[Token], end: int) -> bool:
        """Whether a capitalised word that starts no title follows token `end - 1` after spaces."""
        if end >= len(tokens) or text[tokens[end - 1].end : tokens[end].start].strip():
            return False
        word = text[tokens[end].start : tokens[end].end]
        return word[0].isupper() and word != "I" and not self._starts_title(tokens, end)

    def _starts_title(self, tokens: list[Token], k: int) -> bool:
        """Whether some title starts at token `k`."""
        return any(
            tuple(t.text for t in tokens[k : k + length]) in self._by_key
            for length in self._lengths.get(tokens[k].text, ())
        )

    def _exact_at(self, text: str, tokens: list[Token], i: int, offers: bool) -> tuple[Mention, int] | None:
        """The longest title starting at token `i`, with the year after it if there is one."""
        for length in self._lengths.get(tokens[i].text, ()):
            end = i + length
            if end > len(tokens):
                continue
            key = tuple(t.text for t in tokens[i:end])
            entries = self._get(key)
            if not entries:
                continue
            year = year_after(text, tokens, end)
            if (
                year is None
                and key in self._weak
                and not self._marked(text, tokens, i, end)
                and not (
                    offers
                    and any(t not in STOPWORDS for t in key)
                    and offered(text, tokens[i].start, tokens[end - 1].end)
                )
            ):
                continue
            span_end = tokens[end - 1].end if year is None else include_closing_paren(text, tokens[end].end)
            start = tokens[i].start
            written = written_span(text, start, tokens[end - 1].end) if len(entries) > 1 else None
            if year is None:
                entry, candidates = choose_by_cues(entries, text, start, span_end, written)
            else:
                entry, candidates = choose(entries, year, written)
            mention = Mention(entry.item_id, start, span_end, text[start:span_end], 100.0, candidates)
            return mention, end + (year is not None)
        return None

    def _fuzzy_before_years(self, text: str, tokens: list[Token], covered: list[bool]) -> list[Mention]:
        """Spans followed by a bracketed year that exact matching missed: likely misspelt titles."""
        found: list[Mention] = []
        for j, token in enumerate(tokens):
            if not (YEAR.match(token.text) and token.start > 0 and text[token.start - 1] == "("):
                continue
            if j == 0 or covered[j - 1]:
                continue
            start = j
            while start > 0 and j - start < _MAX_FUZZY_TOKENS and not covered[start - 1]:
                if any(c in _FUZZY_STOP for c in text[tokens[start - 1].end : tokens[start].start]):
                    break
                start -= 1
            best: tuple[float, int, int] | None = None
            for s in range(start, j):
                query = " ".join(t.text for t in tokens[s:j])
                hit = process.extractOne(
                    query, self._choices, scorer=fuzz.ratio, score_cutoff=self.fuzzy_cutoff
                )
                if hit is not None and (best is None or hit[1] > best[0]):
                    best = (float(hit[1]), hit[2], s)
            if best is None:
                continue
            score, index, s = best
            entry, candidates = choose(self._entries(self._choice_keys[index]), int(token.text))
            end = include_closing_paren(text, token.end)
            surface_text = text[tokens[s].start : end]
            found.append(Mention(entry.item_id, tokens[s].start, end, surface_text, score, candidates))
            for k in range(s, j + 1):
                covered[k] = True
        return found


def ambiguous_links(mentions: Iterable[Mention]) -> dict[str, list[str]]:
    """Linked id -> the items its text names equally, for the ambiguous mentions (the record's
    `ambiguous_links` annotation)."""
    return {m.item_id: list(m.candidates) for m in mentions if m.ambiguous}


class LinkedCatalogue(Protocol):
    """A catalogue with its linker (`crsim.model.items.ItemCollection` is one)."""

    @property
    def linker(self) -> ItemLinker: ...


def heard_titles(items: LinkedCatalogue, text: str) -> list[Mention]:
    """The items a simulated user hears named in a CRS's text: the linker's mentions, without those
    whose surface is a function word or a single character unless a year follows ("It", "S").

    The one rule by which every simulator (the agenda NLU, the LLM users' item detection) reads
    the titles in a CRS's text: a weak title is heard where a recommendation offers it too."""
    return [m for m in items.linker.link(text, offers=True) if _title_like(m)]


def _title_like(mention: Mention) -> bool:
    if re.search(r"\(\s*\d{4}\s*\)\s*$", mention.surface):
        return True
    words = normalize(mention.surface).split()
    return not (len(words) == 1 and (len(words[0]) < 2 or words[0] in STOPWORDS))
