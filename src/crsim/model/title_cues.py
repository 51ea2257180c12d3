"""The cues around a span of text that tell the linker it names a title: a year after it, a year or
decade elsewhere in the text, quotes, capitals, and words that offer a recommendation."""

from __future__ import annotations

import re
from dataclasses import dataclass

from crsim.model.text import STOPWORDS, Token

YEAR = re.compile(r"^(1[89]\d\d|20\d\d)$")
#: A year or decade in running text: "1954", "1950s", "'50s", "50s" (two-digit decades 30s-90s
#: read as 19xx, 00s and 10s as 20xx; "20s" is ambiguous and ignored).
_YEAR_CUE = re.compile(r"(?<![\w'’])(?:(1[89]\d\d|20\d\d)(s?)|['’]?([03-9]0|10)s)(?![\w])")
_QUOTES = "\"'“”‘’«»*"
_SENTENCE_END = ".!?\n"
_CLAUSE_END = ".,!?;:)\n"


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


def year_after(text: str, tokens: list[Token], end: int) -> int | None:
    """The year right after a title: "(1984)", or a bare "1984" that ends the clause.

    Punctuation ending the title itself ("Airplane! (1980)") may stand between the two.
    """
    if end >= len(tokens) or not YEAR.match(tokens[end].text):
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


def offered(text: str, start: int, end: int) -> bool:
    """Whether `text[start:end]` is the whole of what a recommendation offers (see `_OFFER`)."""
    return (
        _OFFER.search(text[max(0, start - 40) : start]) is not None
        and _OFFER_END.match(text[end:]) is not None
    )


def sentence_initial(text: str, tokens: list[Token], i: int) -> bool:
    if i == 0:
        return True
    return any(c in _SENTENCE_END for c in text[tokens[i - 1].end : tokens[i].start])


def name_before(text: str, tokens: list[Token], i: int) -> bool:
    """Whether a capitalised content word precedes token `i` after spaces ("Infinity War")."""
    if i == 0 or text[tokens[i - 1].end : tokens[i].start].strip():
        return False
    return text[tokens[i - 1].start].isupper() and tokens[i - 1].text not in STOPWORDS


def capitalised(text: str, token: Token) -> bool:
    """Starts with a capital and is not an all-capitals word (unless a single letter)."""
    word = text[token.start : token.end]
    return word[0].isupper() and (len(word) == 1 or not word.isupper())


def quoted(text: str, first: Token, last: Token) -> bool:
    """Whether the span is enclosed in quotes (or asterisks)."""
    before = text[first.start - 1] if first.start > 0 else ""
    after = text[last.end] if last.end < len(text) else ""
    return before in _QUOTES and after in _QUOTES and before != "" and after != ""


def include_closing_paren(text: str, end: int) -> int:
    return end + 1 if end < len(text) and text[end] == ")" else end
