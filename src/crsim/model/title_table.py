"""The linker's table of titles: what it reads of each item (id, title, year, aliases, popularity),
the surface forms of a title and where each comes from, the entries a title key holds, and the
choice among items that share a title (by a year, a cue in the text, the written form, popularity)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from crsim.model.text import fold, normalize, split_title_year, unarticle
from crsim.model.title_cues import year_cues


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


ARTICLES = frozenset({"the", "a", "an"})

#: Where a surface form of a title comes from; lower is better evidence when titles tie.
TITLE, ALIAS, DERIVED = 0, 1, 2


@dataclass(frozen=True, slots=True)
class TitleEntry:
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


def choose(
    entries: list[TitleEntry], year: int | None, written: tuple[str, str] | None = None
) -> tuple[TitleEntry, tuple[str, ...]]:
    """Among items sharing a title key, the one the text most likely means, and the candidates when
    the text fits several equally (else an empty tuple).

    With a year: the item of that year (else the nearest), then the surface written in the text
    (`TitleEntry.fit`: exact form, catalogue title before alias before derived). Without a year: the
    surface, then an item catalogued without a year (the text then matches its whole display title;
    ReDial lists such near-duplicates). Popularity decides only among items the text fits equally
    (then the link is ambiguous), remaining ties going to the first item in collection order.
    """

    if len(entries) == 1:
        return entries[0], ()

    def evidence(e: TitleEntry) -> tuple[int, ...]:
        if year is not None:
            return (abs(e.year - year) if e.year else 1000, *e.fit(written))
        return (*e.fit(written), e.year is not None)

    best = min(evidence(e) for e in entries)
    tied = [e for e in entries if evidence(e) == best]
    chosen = min(tied, key=lambda e: -e.popularity)
    if len(tied) < 2:
        return chosen, ()
    return chosen, (chosen.item_id, *(e.item_id for e in tied if e is not chosen))


def choose_by_cues(
    entries: list[TitleEntry], text: str, start: int, end: int, written: tuple[str, str] | None
) -> tuple[TitleEntry, tuple[str, ...]]:
    """Items sharing a title (at `text[start:end]`) with no year after it: the one a year or decade
    in the text fits (the cue nearest the title first, a year before a decade), else the yearless
    rule of `choose`."""
    if len({e.year for e in entries}) < 2:
        return choose(entries, None, written)
    fitting = [
        (start - cue.start if cue.start < start else cue.start - end, cue.decade, entry)
        for cue in year_cues(text)
        for entry in entries
        if cue.fits(entry.year)
    ]
    if not fitting:
        return choose(entries, None, written)
    distance, decade, _ = min(fitting, key=lambda f: (f[0], f[1]))
    tied = [entry for d, dec, entry in fitting if d == distance and dec == decade]
    return choose(tied, None, written)


def _popularity(item: Linkable) -> float:
    """`extra.popularity` if given, else `extra.num_ratings` (MovieLens), else 0."""
    return _number(item.extra.get("popularity", item.extra.get("num_ratings", 0)))


def _number(raw: Any) -> float:
    return float(raw) if isinstance(raw, int | float) else 0.0


class Columns(Protocol):
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
class RowTable:
    """What the linker reads of each item, by catalogue position: id, title, year, aliases (None for
    none) and popularity. Read from an item collection's columns (shared, no item objects made), else
    from the items."""

    ids: list[str]
    titles: list[str]
    years: list[int | None]
    aliases: list[Any] | None
    popularity: list[float]

    @classmethod
    def of(cls, items: Collection[Linkable]) -> RowTable:
        if not hasattr(items, "extra_column"):
            listed = list(items)
            return cls(
                [i.id for i in listed],
                [i.title for i in listed],
                [i.year for i in listed],
                [i.extra.get("aliases") for i in listed],
                [_popularity(i) for i in listed],
            )
        columns: Columns = items  # type: ignore[assignment]
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

    def entry(self, p: int, key: tuple[str, ...]) -> TitleEntry:
        """Item `p`'s entry under `key`: its forms are the surfaces of its title variants with that key."""
        forms: dict[str, int] = {}
        for variant, origin in title_variants(self.titles[p], self.aliases_at(p)).items():
            if tuple(normalize(variant).split()) == key:
                form = surface(variant)
                forms[form] = min(origin, forms.get(form, origin))
        return TitleEntry(self.ids[p], self.years[p], self.popularity[p], tuple(forms.items()))


def first_word_lengths(keys: Iterable[tuple[str, ...]]) -> dict[str, tuple[int, ...]]:
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


def title_variants(title: str, aliases: Iterable[str] = ()) -> dict[str, int]:
    """Surface forms of a title -> origin: `TITLE`, `ALIAS` or `DERIVED` (an article added or dropped)."""
    variants: dict[str, int] = {}
    for n, raw in enumerate((title, *aliases)):
        name = split_title_year(raw)[0]
        for variant in (name, unarticle(name)):
            variants.setdefault(variant, TITLE if n == 0 else ALIAS)
    for variant in list(variants):
        head, _, rest = variant.partition(" ")
        if head.lower() in ARTICLES:
            if len(rest) > 3:
                variants.setdefault(rest, DERIVED)
        elif variant:
            variants.setdefault(f"the {variant}", DERIVED)
    return variants


#: Punctuation that may end a title and is written right after its last word ("Them!", "Mother!").
_TITLE_END = frozenset("!?.")


def surface(title: str) -> str:
    """A title as written, for telling apart titles that share a key: case and accents folded, curly
    apostrophes straightened, runs of spaces made one; punctuation and "&" kept."""
    return " ".join(fold(title).replace("’", "'").split())


def written_span(text: str, start: int, end: int) -> tuple[str, str]:
    """(surface of `text[start:end]`, the same with the title-ending punctuation right after it)."""
    stop = end
    while stop < len(text) and stop - end < 3 and text[stop] in _TITLE_END:
        stop += 1
    return surface(text[start:end]), surface(text[start:stop])
