"""Rule-based information richness: the key points one user utterance states.

A key point is one piece of information the recommender could act on. Two sources find them:

1. Cue patterns of our own for what the movie lexicon does not cover: questions about an item
   ("how long is it?"), company ("with my kids"), occasions ("date night"), times ("tonight"),
   places and platforms ("at home", "on Netflix"), constraints (runtime, age rating, language)
   and quality wishes ("critically acclaimed"). Each distinct match is one key point, and its
   words are blanked out before step 2, so "with my kids" counts as company, not as a genre too.
2. crsim's rule-based understanding of user text (`crsim.language.understanding.understand`, the
   parser the built-in CRSs use) with the domain's lexicon: genres, people, release periods,
   topics, mentioned items, inquiries, and feedback on the item under discussion. A phrase that
   names several genres at once ("romcom", "kids") counts once.

Without a domain only step 1 runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from crsim.language.understanding import Context, Understanding, lexicon_for, understand
from crsim.model.domain import Domain
from crsim.model.text import tokenize
from crsim.studies.language.measures import Reading

#: The kinds of key point, shared by the rule counter and the LLM judge's answer schema.
KEY_POINT_KINDS = (
    "item",
    "genre",
    "person",
    "period",
    "topic",
    "preference",
    "time",
    "place",
    "company",
    "occasion",
    "constraint",
    "question",
    "feedback",
)


def _cue(*alternatives: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w'])(?:" + "|".join(alternatives) + r")(?![\w'])", re.IGNORECASE)


_RELATIVE = r"(?:my|our|the|a|some) (?:\w+ ){0,3}?"
_PEOPLE = (
    r"(?:kids?|children|child|sons?|daughters?|family|wife|husband|partner|girlfriend|boyfriend|friends?"
    r"|parents|mom|mum|dad|grandparents|grandma|grandpa|brothers?|sisters?|siblings|roommates?|class"
    r"|students|colleagues|coworkers|date|spouse|fianc[eé]e?|teenagers?|toddlers?|nephews?|nieces?)"
)
_NUMBER = r"(?:an?|one|two|three|\d+(?:\.\d+)?)"

#: Cue patterns by kind, in the order they are applied (earlier ones take the words first).
CUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "question",
        _cue(
            r"how (?:long|scary|violent|funny|old|good|popular|sad|graphic) (?:is|was) (?:it|that|this)",
            r"where can i (?:watch|stream|see|find|rent|get) (?:it|that|this)",
            r"is (?:it|that|this) (?:on|available|streaming|suitable|appropriate|long|short|scary|violent"
            r"|any good|worth)",
            r"what(?: is|'s) (?:it|that) rated",
            r"(?:what|which) (?:is the )?(?:rating|age rating|certificate)",
            r"(?:any|did it win any) awards",
            r"is there a sequel",
        ),
    ),
    (
        "company",
        _cue(
            rf"(?:with|for) {_RELATIVE}{_PEOPLE}",
            r"(?:alone|by myself|on my own)",
            r"(?:with|for) (?:friends|family|kids|children|someone|a group)",
        ),
    ),
    (
        "occasion",
        _cue(
            r"(?:date|movie|family|game|girls'?|guys'?) night",
            r"sleepover",
            r"birthday",
            r"anniversary",
            r"(?:a |the )?party",
            r"(?:over the |for the )?holidays?",
            r"vacation",
            r"rainy (?:day|afternoon|evening)",
            r"lazy (?:day|sunday|saturday|evening|afternoon)",
        ),
    ),
    (
        "time",
        _cue(
            r"tonight",
            r"today",
            r"tomorrow(?: night| evening)?",
            r"this (?:morning|afternoon|evening|weekend|week)",
            r"(?:on |this |next )?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?"
            r"(?: night| evening| afternoon)?",
            r"(?:the |next )?weekend",
            r"after (?:work|school|dinner)",
            r"before bed",
            r"bedtime",
            r"in the (?:morning|afternoon|evening)",
            r"(?:at )?\d{1,2}(?::\d\d)? ?(?:am|pm)",
            r"late at night",
            r"lunch ?break",
        ),
    ),
    (
        "place",
        _cue(
            r"at (?:the |a |my |our )?(?:home|cinemas?|theaters?|theatres?|movies|drive-in)",
            r"(?:in|to) (?:the |a |my |our )(?:cinemas?|theaters?|theatres?|movies|drive-in|living room)",
            r"in bed",
            r"on (?:the |a |my |our )?(?:plane|flight|train|phone|tablet|laptop|tv|couch|sofa|big screen)",
            r"(?:on )?(?:netflix|hulu|disney\+|disney plus|prime video|amazon prime|hbo max|hbo|apple tv"
            r"|paramount\+|peacock|youtube)",
        ),
    ),
    (
        "constraint",
        _cue(
            rf"(?:under|less than|no more than|at most|shorter than|longer than|more than|over) {_NUMBER}"
            r"(?: and a half)? (?:hours?|hrs?|minutes|mins)",
            r"(?:not too|too|really|very) (?:long|short)",
            r"(?:short|long|quick) (?:one|movie|film|watch)",
            r"running time|runtime",
            r"pg-?13|pg|rated (?:r|pg|g)|r-rated",
            r"(?:age|kid|family)[- ]appropriate|(?:kid|family)[- ]friendly",
            r"suitable for (?:kids|children|the whole family|teens|everyone)",
            r"(?:no|without) (?:nudity|sex scenes|swearing|gore|blood)",
            r"not too (?:violent|scary|graphic|gory|sad|dark)",
            r"in (?:english|spanish|french|german|italian|japanese|korean|chinese|hindi|mandarin)",
            r"subtitles?|subtitled|dubbed|foreign[- ]language|english[- ]language|non[- ]english",
            r"black and white",
            r"cheap|on dvd|blu-?ray|in 3d",
        ),
    ),
    (
        "preference",
        _cue(
            r"highly rated|well reviewed|good reviews?|critically acclaimed|award[- ]winning",
            r"oscar[- ](?:winning|winner|nominated)|won an oscar|top rated|underrated|hidden gem",
            r"cult classic|box office hit|blockbuster|indie|low[- ]budget|slow[- ]burn|fast[- ]paced",
            r"plot twists?|twist ending|happy ending|sad ending|thought[- ]provoking|mind[- ]bending",
        ),
    ),
)


@dataclass(frozen=True)
class KeyPoint:
    kind: str
    text: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.text}"


class RuleKeyPoints:
    """Counts the key points of user utterances; see the module docstring."""

    def __init__(self, domain: Domain | None = None) -> None:
        self.domain = domain

    def key_points(self, text: str, recommended: str | None = None) -> list[KeyPoint]:
        """The distinct key points of `text`; `recommended` is the item the CRS last recommended, so
        "seen it" or "sounds good" count as feedback on it."""
        rest, found = _take_cues(text.replace("’", "'"))
        if self.domain is not None:
            context = Context(recommended=recommended if recommended in self.domain.items else None)
            found += self._understood(understand(rest, self.domain, context), rest)
        return list(dict.fromkeys(found))

    def count(self, text: str, recommended: str | None = None) -> Reading[int]:
        points = self.key_points(text, recommended)
        return Reading(len(points), details=tuple(str(p) for p in points))

    def _understood(self, parsed: Understanding, text: str) -> list[KeyPoint]:
        points = self._genres(parsed, text)
        for slot in ("actor", "director"):
            points += [
                KeyPoint("person", v) for v in [*parsed.likes.get(slot, []), *parsed.dislikes.get(slot, [])]
            ]
        points += [
            KeyPoint("topic", v)
            for v in [*parsed.likes.get("keyword", []), *parsed.dislikes.get("keyword", [])]
        ]
        points += [KeyPoint("period", p.label) for p in [*parsed.periods, *parsed.disliked_periods]]
        if parsed.newer or parsed.older:
            points.append(KeyPoint("period", "more recent" if parsed.newer else "older"))
        points += [KeyPoint("item", i) for i in parsed.mentioned_items]
        points += [KeyPoint("question", slot) for slot in parsed.inquiries]
        reacted = parsed.accepted_items or parsed.rejected_items or parsed.seen_items or parsed.liked_items
        if reacted and not parsed.mentioned_items:
            kinds = [k for k in ("accept", "reject", "seen") if k in parsed.intents]
            points.append(KeyPoint("feedback", "/".join(kinds) or "liked"))
        return points

    def _genres(self, parsed: Understanding, text: str) -> list[KeyPoint]:
        """Genre values, with each phrase that names several genres counted once."""
        values = list(dict.fromkeys([*parsed.likes.get("genre", []), *parsed.dislikes.get("genre", [])]))
        if not values or self.domain is None:
            return []
        lexicon = lexicon_for(self.domain)
        words = [t.text for t in tokenize(text)]
        unused = [False] * len(words)
        merged: list[str] = []
        k = 0
        while k < len(words):
            hit = lexicon.values.match(words, unused, k)
            if hit is None:
                k += 1
                continue
            named = [value for slot, value in hit[0] if slot == "genre"]
            genres = [g for g in named if g in values and all(g not in m.split("+") for m in merged)]
            if len(genres) > 1:
                merged.append("+".join(genres))
            k += hit[1]
        covered = {g for m in merged for g in m.split("+")}
        return [KeyPoint("genre", m) for m in merged] + [
            KeyPoint("genre", g) for g in values if g not in covered
        ]


def _take_cues(text: str) -> tuple[str, list[KeyPoint]]:
    """Key points of the cue patterns, and the text with their words replaced by commas."""
    found: list[KeyPoint] = []
    for kind, pattern in CUES:
        for match in pattern.finditer(text):
            found.append(KeyPoint(kind, " ".join(match.group(0).lower().split())))
        text = pattern.sub(lambda m: "," + " " * (len(m.group(0)) - 1), text)
    return text, found
