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
winning; only when no cue fits any of them does the yearless rule of `_choose` apply.

Titles that differ only in punctuation or in "&"/"and" share a key ("Mother" and "Mother!",
"Kicking & Screaming" and "Kicking and Screaming"); among them the item whose title is written
exactly as in the text wins, before popularity ("Mother." links "Mother (2009)", "Mother!" links
"Mother! (2017)"), and a catalogued title before another item's alias ("Oldboy (2013)" before the
alias "Oldboy" of "Old Boy (2003)"). When the text still fits several items equally (same title,
no year or cue telling them apart), popularity picks one and the mention lists all of them in
`candidates`: the link is ambiguous.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import numpy as np
from rapidfuzz import fuzz, process

from crsim.model.chat_words import CHAT_WORDS
from crsim.model.text import STOPWORDS, Token, fold, normalize, split_title_year, tokenize, unarticle


class Linkable(Protocol):
    """What the linker reads of a catalogue item (`crsim.model.items.Item` is one)."""

    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def year(self) -> int | None: ...
    @property
    def genres(self) -> list[str]: ...
    @property
    def directors(self) -> list[str]: ...
    @property
    def actors(self) -> list[str]: ...
    @property
    def keywords(self) -> list[str]: ...
    @property
    def plot(self) -> str | None: ...
    @property
    def extra(self) -> dict[str, Any]: ...


_YEAR = re.compile(r"^(1[89]\d\d|20\d\d)$")
#: A year or decade in running text: "1954", "1950s", "'50s", "50s" (two-digit decades 30s-90s
#: read as 19xx, 00s and 10s as 20xx; "20s" is ambiguous and ignored).
_YEAR_CUE = re.compile(r"(?<![\w'’])(?:(1[89]\d\d|20\d\d)(s?)|['’]?([03-9]0|10)s)(?![\w])")
#: Tokens of text before a year that are considered as a fuzzy title candidate.
_MAX_FUZZY_TOKENS = 12
_ARTICLES = frozenset({"the", "a", "an"})
_QUOTES = "\"'“”‘’«»*"
_SENTENCE_END = ".!?\n"
_CLAUSE_END = ".,!?;:)\n"
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


#: Where a surface form of a title comes from; lower is better evidence when titles tie.
_TITLE, _ALIAS, _DERIVED = 0, 1, 2


@dataclass(frozen=True, slots=True)
class _Entry:
    item_id: str
    year: int | None
    popularity: float
    #: (surface form, origin) under this key: the form folded with its punctuation kept, and whether it
    #: is the catalogue title, an alias or derived (a leading article added or dropped).
    forms: tuple[tuple[str, int], ...]

    def fit(self, written: tuple[str, str] | None) -> tuple[int, int, int]:
        """How well the text's surface fits this item: (0 if a form is written exactly as in the
        text, minus the length of that form, origin); lower is better. `written` is (the span's
        surface, the span's surface with the punctuation right after it), None when unknown."""
        best = (1, 0, min(origin for _, origin in self.forms))
        if written is None:
            return best
        span, extended = written
        for form, origin in self.forms:
            if form.startswith(span) and extended.startswith(form):
                best = min(best, (0, -len(form), origin))
        return best


#: Entries made from item rows that a linker keeps (the titles met in text most recently).
MADE_ENTRIES = 100_000
#: What a pickled linker leaves out (rebuilt on loading, or made again when needed).
_NOT_PICKLED = frozenset({"_by_key", "_lengths", "_choices", "_choice_keys", "_made"})


class ItemLinker:
    """Finds item mentions in text. Build once per collection (it is cached on the collection).

    A title key that names one item holds that item's catalogue position, and its entry (`_Entry`)
    is made from the item's row when the key is met in text; only keys several items share keep
    their entries. A million titles so take a few hundred bytes each, and a pickle of the linker
    (the domain cache) holds its keys as one text and its positions as one array."""

    def __init__(self, items: Collection[Linkable], fuzzy_cutoff: float = 88.0) -> None:
        self.fuzzy_cutoff = fuzzy_cutoff
        self._rows = _RowTable.of(items)
        self._by_key: dict[tuple[str, ...], int | list[_Entry]] = {}
        self._made: dict[tuple[str, ...], list[_Entry]] = {}
        words: dict[str, str] = {}  # one string per distinct word of the keys (a million titles)
        rows = self._rows
        for p, title in enumerate(rows.titles):
            for variant, origin in _title_variants(title, rows.aliases_at(p)).items():
                key = tuple(words.setdefault(w, w) for w in normalize(variant).split())
                if key:
                    self._add(key, p, variant, origin)
        self._weak = _weak_keys([key for key in self._by_key if _is_weak(key)], items)
        self._lengths = _first_word_lengths(self._by_key)

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
        by_key: dict[tuple[str, ...], int | list[_Entry]] = {}
        for line, position in zip(keys.split("\n") if keys else [], positions.tolist(), strict=True):
            key = tuple([words.setdefault(w, w) for w in line.split(" ")])
            by_key[key] = position if position >= 0 else next(shared)
        self._by_key = by_key
        self._made = {}
        self._lengths = _first_word_lengths(by_key)

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
        entry = _Entry(
            self._rows.ids[p], self._rows.years[p], self._rows.popularity[p], ((surface(variant), origin),)
        )
        for n, existing in enumerate(entries):
            if existing.item_id == entry.item_id:
                forms = dict(existing.forms)
                for form, origin in entry.forms:
                    forms[form] = min(origin, forms.get(form, origin))
                entries[n] = _Entry(
                    existing.item_id, existing.year, existing.popularity, tuple(forms.items())
                )
                return
        entries.append(entry)

    def _entries(self, key: tuple[str, ...]) -> list[_Entry]:
        """The entries under a key that is in the linker."""
        found = self._get(key)
        assert found is not None
        return found

    def _get(self, key: tuple[str, ...]) -> list[_Entry] | None:
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
            entry, candidates = _choose(entries, year, (written, written))
            return Mention(entry.item_id, 0, len(title), title, 100.0, candidates)
        best = process.extractOne(
            " ".join(key), self._choices, scorer=fuzz.ratio, score_cutoff=self.fuzzy_cutoff
        )
        if best is None:
            return None
        _, score, index = best
        entry, candidates = _choose(self._entries(self._choice_keys[index]), year)
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
        if _quoted(text, tokens[i], tokens[end - 1]):
            return True
        first = i + 1 if end - i > 1 and tokens[i].text in _ARTICLES else i
        capitals = [k for k in range(first, end) if _capitalised(text, tokens[k])]
        if len(capitals) >= 2:
            return True
        if capitals != [first] or tokens[first].end - tokens[first].start < 2:
            return False
        if first == i and _sentence_initial(text, tokens, i):
            return False
        if self._name_after(text, tokens, end):
            return False
        return first != i or not _name_before(text, tokens, i)

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
            year = _year_after(text, tokens, end)
            if (
                year is None
                and key in self._weak
                and not self._marked(text, tokens, i, end)
                and not (
                    offers
                    and any(t not in STOPWORDS for t in key)
                    and _offered(text, tokens[i].start, tokens[end - 1].end)
                )
            ):
                continue
            span_end = tokens[end - 1].end if year is None else _include_closing_paren(text, tokens[end].end)
            start = tokens[i].start
            written = _written(text, start, tokens[end - 1].end) if len(entries) > 1 else None
            if year is None:
                entry, candidates = _choose_by_cues(entries, text, start, span_end, written)
            else:
                entry, candidates = _choose(entries, year, written)
            mention = Mention(entry.item_id, start, span_end, text[start:span_end], 100.0, candidates)
            return mention, end + (year is not None)
        return None

    def _fuzzy_before_years(self, text: str, tokens: list[Token], covered: list[bool]) -> list[Mention]:
        """Spans followed by a bracketed year that exact matching missed: likely misspelt titles."""
        found: list[Mention] = []
        for j, token in enumerate(tokens):
            if not (_YEAR.match(token.text) and token.start > 0 and text[token.start - 1] == "("):
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
            entry, candidates = _choose(self._entries(self._choice_keys[index]), int(token.text))
            end = _include_closing_paren(text, token.end)
            surface_text = text[tokens[s].start : end]
            found.append(Mention(entry.item_id, tokens[s].start, end, surface_text, score, candidates))
            for k in range(s, j + 1):
                covered[k] = True
        return found


def ambiguous_links(mentions: Iterable[Mention]) -> dict[str, list[str]]:
    """Linked id -> the items its text names equally, for the ambiguous mentions (the record's
    `ambiguous_links` annotation)."""
    return {m.item_id: list(m.candidates) for m in mentions if m.ambiguous}


def _choose(
    entries: list[_Entry], year: int | None, written: tuple[str, str] | None = None
) -> tuple[_Entry, tuple[str, ...]]:
    """Among items sharing a title key, the one the text most likely means, and the candidates when
    the text fits several equally (else an empty tuple).

    With a year: the item of that year (else the nearest), then the surface written in the text
    (`_Entry.fit`: exact form, catalogue title before alias before derived). Without a year: the
    surface, then an item catalogued without a year (the text then matches its whole display title;
    ReDial lists such near-duplicates). Popularity decides only among items the text fits equally
    (then the link is ambiguous), remaining ties going to the first item in collection order.
    """

    if len(entries) == 1:
        return entries[0], ()

    def evidence(e: _Entry) -> tuple[int, ...]:
        if year is not None:
            return (abs(e.year - year) if e.year else 1000, *e.fit(written))
        return (*e.fit(written), e.year is not None)

    best = min(evidence(e) for e in entries)
    tied = [e for e in entries if evidence(e) == best]
    chosen = min(tied, key=lambda e: -e.popularity)
    if len(tied) < 2:
        return chosen, ()
    return chosen, (chosen.item_id, *(e.item_id for e in tied if e is not chosen))


@dataclass(frozen=True, slots=True)
class YearCue:
    """A year ("1954") or a decade ("1950s", "'50s") written in text, at `start`."""

    start: int
    year: int
    decade: bool

    def fits(self, year: int | None) -> bool:
        """Whether an item of `year` is what the cue describes (same year, or within the decade)."""
        if year is None:
            return False
        return year // 10 * 10 == self.year if self.decade else year == self.year


def year_cues(text: str) -> list[YearCue]:
    """The years and decades written in `text`, left to right (see `_YEAR_CUE`)."""
    cues = []
    for match in _YEAR_CUE.finditer(text):
        full, plural, short = match.groups()
        if full is not None:
            year = int(full)
            decade = bool(plural)
            if decade and year % 10:
                continue
        else:
            two = int(short)
            year, decade = (2000 + two if two <= 10 else 1900 + two), True
        cues.append(YearCue(match.start(), year, decade))
    return cues


def _choose_by_cues(
    entries: list[_Entry], text: str, start: int, end: int, written: tuple[str, str] | None
) -> tuple[_Entry, tuple[str, ...]]:
    """Items sharing a title (at `text[start:end]`) with no year after it: the one a year or decade
    in the text fits (the cue nearest the title first, a year before a decade), else the yearless
    rule of `_choose`."""
    if len({e.year for e in entries}) < 2:
        return _choose(entries, None, written)
    fitting = [
        (start - cue.start if cue.start < start else cue.start - end, cue.decade, entry)
        for cue in year_cues(text)
        for entry in entries
        if cue.fits(entry.year)
    ]
    if not fitting:
        return _choose(entries, None, written)
    distance, decade, _ = min(fitting, key=lambda f: (f[0], f[1]))
    tied = [entry for d, dec, entry in fitting if d == distance and dec == decade]
    return _choose(tied, None, written)


def _popularity(item: Linkable) -> float:
    """`extra.popularity` if given, else `extra.num_ratings` (MovieLens), else 0."""
    return _number(item.extra.get("popularity", item.extra.get("num_ratings", 0)))


def _number(raw: Any) -> float:
    return float(raw) if isinstance(raw, int | float) else 0.0


class _Columns(Protocol):
    """The columns of a catalogue the linker reads (`crsim.model.items.ItemCollection` has them)."""

    @property
    def ids(self) -> list[str]: ...
    @property
    def titles(self) -> list[str]: ...
    @property
    def years(self) -> list[int | None]: ...
    def extra_column(self, key: str) -> list[Any] | None: ...
    def field_column(self, name: str) -> list[Any] | None: ...
    @property
    def extra_keys(self) -> list[str]: ...
    def has_extra(self, position: int, key: str) -> bool: ...


@dataclass
class _RowTable:
    """What the linker reads of each item, by catalogue position: id, title, year, aliases (None for
    none) and popularity. Read from an item collection's columns (shared, no item objects made), else
    from the items."""

    ids: list[str]
    titles: list[str]
    years: list[int | None]
    aliases: list[Any] | None
    popularity: list[float]

    @classmethod
    def of(cls, items: Collection[Linkable]) -> _RowTable:
        if not hasattr(items, "extra_column"):
            listed = list(items)
            return cls(
                [i.id for i in listed],
                [i.title for i in listed],
                [i.year for i in listed],
                [i.extra.get("aliases") for i in listed],
                [_popularity(i) for i in listed],
            )
        columns: _Columns = items  # type: ignore[assignment]
        aliases = columns.extra_column("aliases")
        popular, rated = columns.extra_column("popularity"), columns.extra_column("num_ratings")
        popularity = []
        for p in range(len(columns.ids)):
            if popular is not None and (popular[p] is not None or columns.has_extra(p, "popularity")):
                popularity.append(_number(popular[p]))
            else:
                popularity.append(_number(rated[p]) if rated is not None else 0.0)
        return cls(columns.ids, columns.titles, columns.years, aliases, popularity)

    def aliases_at(self, p: int) -> Iterable[str]:
        named = self.aliases[p] if self.aliases is not None else None
        return () if named is None else named

    def entry(self, p: int, key: tuple[str, ...]) -> _Entry:
        """Item `p`'s entry under `key`: its forms are the surfaces of its title variants with that key."""
        forms: dict[str, int] = {}
        for variant, origin in _title_variants(self.titles[p], self.aliases_at(p)).items():
            if tuple(normalize(variant).split()) == key:
                form = surface(variant)
                forms[form] = min(origin, forms.get(form, origin))
        return _Entry(self.ids[p], self.years[p], self.popularity[p], tuple(forms.items()))


def _first_word_lengths(keys: Iterable[tuple[str, ...]]) -> dict[str, tuple[int, ...]]:
    """First word of a key -> the lengths of the keys starting with it, longest first (the tuples
    shared: few distinct ones)."""
    lengths: dict[str, set[int]] = defaultdict(set)
    for key in keys:
        lengths[key[0]].add(len(key))
    shared: dict[tuple[int, ...], tuple[int, ...]] = {}
    out = {}
    for first, found in lengths.items():
        ordered = tuple(sorted(found, reverse=True))
        out[first] = shared.setdefault(ordered, ordered)
    return out


def _title_variants(title: str, aliases: Iterable[str] = ()) -> dict[str, int]:
    """Surface forms of a title -> origin: `_TITLE`, `_ALIAS` or `_DERIVED` (an article added or dropped)."""
    variants: dict[str, int] = {}
    for n, raw in enumerate((title, *aliases)):
        name = split_title_year(raw)[0]
        for variant in (name, unarticle(name)):
            variants.setdefault(variant, _TITLE if n == 0 else _ALIAS)
    for variant in list(variants):
        head, _, rest = variant.partition(" ")
        if head.lower() in _ARTICLES:
            if len(rest) > 3:
                variants.setdefault(rest, _DERIVED)
        elif variant:
            variants.setdefault(f"the {variant}", _DERIVED)
    return variants


#: Punctuation that may end a title and is written right after its last word ("Them!", "Mother!").
_TITLE_END = frozenset("!?.")


def surface(title: str) -> str:
    """A title as written, for telling apart titles that share a key: case and accents folded, curly
    apostrophes straightened, runs of spaces made one; punctuation and "&" kept."""
    return " ".join(fold(title).replace("’", "'").split())


def _written(text: str, start: int, end: int) -> tuple[str, str]:
    """(surface of `text[start:end]`, the same with the title-ending punctuation right after it)."""
    stop = end
    while stop < len(text) and stop - end < 3 and text[stop] in _TITLE_END:
        stop += 1
    return surface(text[start:end]), surface(text[start:stop])


def _is_weak(key: tuple[str, ...]) -> bool:
    """A title short enough to hit by accident: one word besides function words ("Get Out", "Her")."""
    return len(key) == 1 or sum(t not in STOPWORDS for t in key) <= 1


#: Word characters of catalogue text (enough to find candidate words; `tokenize` is not needed).
_WORD = re.compile(r"[^\W_]+")


def _weak_keys(short: list[tuple[str, ...]], items: Collection[Linkable]) -> frozenset[tuple[str, ...]]:
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
    columns: _Columns = items  # type: ignore[assignment]
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


def _year_after(text: str, tokens: list[Token], end: int) -> int | None:
    """The year right after a title: "(1984)", or a bare "1984" that ends the clause.

    Punctuation ending the title itself ("Airplane! (1980)") may stand between the two.
    """
    if end >= len(tokens) or not _YEAR.match(tokens[end].text):
        return None
    gap = text[tokens[end - 1].end : tokens[end].start].strip().lstrip("!?.").strip()
    if gap == "(":
        return int(tokens[end].text)
    if gap:
        return None
    after = end + 1
    if after == len(tokens) or any(c in _CLAUSE_END for c in text[tokens[end].end : tokens[after].start]):
        return int(tokens[end].text)
    return None


#: Words that offer an item, right before a title ("How about X?", "I'd suggest X.").
_OFFER = re.compile(
    r"(?:\bhow about|\bwhat about|\byou(?: might| may| could| would| will|'d) (?:like|enjoy|love|try)"
    r"|\bsuggest"
    r"|\brecommend|\bhave a look at|\btake a look at|\btry|\bcheck out|\bconsider|\bgo (?:with|for))"
    r"[\s\"'“‘*]*$",
    re.IGNORECASE,
)
#: What may follow an offered title: the end of a clause or text, or a bracket.
_OFFER_END = re.compile(r"^[\s\"'”’*]*(?:[.!?,;:(]|$)")


def _offered(text: str, start: int, end: int) -> bool:
    """Whether `text[start:end]` is the whole of what a recommendation offers (see `_OFFER`)."""
    return (
        _OFFER.search(text[max(0, start - 40) : start]) is not None
        and _OFFER_END.match(text[end:]) is not None
    )


def _sentence_initial(text: str, tokens: list[Token], i: int) -> bool:
    if i == 0:
        return True
    return any(c in _SENTENCE_END for c in text[tokens[i - 1].end : tokens[i].start])


def _name_before(text: str, tokens: list[Token], i: int) -> bool:
    """Whether a capitalised content word precedes token `i` after spaces ("Infinity War")."""
    if i == 0 or text[tokens[i - 1].end : tokens[i].start].strip():
        return False
    return text[tokens[i - 1].start].isupper() and tokens[i - 1].text not in STOPWORDS


def _capitalised(text: str, token: Token) -> bool:
    """Starts with a capital and is not an all-capitals word (unless a single letter)."""
    word = text[token.start : token.end]
    return word[0].isupper() and (len(word) == 1 or not word.isupper())


def _quoted(text: str, first: Token, last: Token) -> bool:
    """Whether the span is enclosed in quotes (or asterisks)."""
    before = text[first.start - 1] if first.start > 0 else ""
    after = text[last.end] if last.end < len(text) else ""
    return before in _QUOTES and after in _QUOTES and before != "" and after != ""


class LinkedCatalogue(Protocol):
    """A catalogue with its linker (`crsim.model.items.ItemCollection` is one)."""

    @property
    def linker(self) -> ItemLinker: ...


def _include_closing_paren(text: str, end: int) -> int:
    return end + 1 if end < len(text) and text[end] == ")" else end


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
