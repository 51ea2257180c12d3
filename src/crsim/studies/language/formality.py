"""Rule-based formality of one utterance: weighted cues of informal and formal writing.

Informal cues (negative weights): contractions, colloquial words, text-speak, interjections,
lower-case sentence starts or a lower-case "i", runs of "!" or "?", emoji and emoticons,
stretched letters ("sooo"), shouting in capitals, trailing "...". Formal cues (positive weights):
politeness markers ("could you", "please", "thank you", "I would appreciate"), formal vocabulary
("however", "regarding", "preferably"), full forms where speech contracts ("I am", "do not"), and
well-formed sentences (capitalised, ending in punctuation). Each family counts up to a cap, so
one long list of "please"s cannot outweigh everything else. The score is the sum of the weights:
at or above `formal_at` the utterance is formal, at or below `informal_at` informal, else neutral.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from crsim.studies.language.measures import Reading


class FormalityRules(BaseModel):
    """Score bounds of the rule-based formality classifier."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    formal_at: int = Field(2, ge=1, description="A cue score at or above this is formal.")
    informal_at: int = Field(-2, le=-1, description="A cue score at or below this is informal.")


@dataclass(frozen=True)
class CueFamily:
    """A family of cues: a pattern, the weight of each distinct match, and the most it may add."""

    name: str
    pattern: re.Pattern[str]
    weight: int
    cap: int


def _words(*alternatives: str) -> re.Pattern[str]:
    """Whole-word alternatives: not inside a word, a contraction, a hyphenated word ("R-rated") or an
    abbreviation ("U.S.")."""
    return re.compile(r"(?<![\w'.\-])(?:" + "|".join(alternatives) + r")(?![\w'\-]|\.\w)", re.IGNORECASE)


_CONTRACTION = re.compile(
    r"\b(?:\w+n't|i'm|\w+'re|\w+'ve|\w+'ll|i'd|you'd|we'd|they'd|he'd|she'd|"
    r"(?:it|that|what|there|here|who|he|she|let|where|how)'s|y'all|"
    r"dont|doesnt|didnt|cant|couldnt|wouldnt|shouldnt|isnt|arent|wasnt|havent|im|ive|thats|whats)\b",
    re.IGNORECASE,
)
_EMOJI = re.compile(
    r"[\U0001F300-\U0001FAFF\U00002600-\U000027BF\U0001F000-\U0001F2FF]"
    r"|(?<!\w)(?::-?[)(DPp/|]|;-?[)D]|:'\(|xD|XD|<3|\^_\^|-_-)(?!\w)"
)


def _split(text: str) -> list[str]:
    """Alternatives written one per whitespace-separated chunk; `_` stands for a space in a phrase."""
    return [chunk.replace("_", " ") for chunk in text.split()]


FAMILIES: tuple[CueFamily, ...] = (
    CueFamily("contraction", _CONTRACTION, -1, 2),
    CueFamily(
        "colloquial word",
        _words(
            *_split(
                "gonna wanna gotta kinda sorta dunno lemme gimme ya yeah yep yup nope nah cool awesome dude "
                "guys stuff totally hey yo okay ok cuz coz tho sup bro buddy mate chill vibes? legit flicks? "
                "pretty_(?:good|cool|much|sure) super kiddos? ain't y'know"
            )
        ),
        -1,
        3,
    ),
    CueFamily(
        "text-speak",
        _words(*_split("lol lmao rofl omg idk tbh btw imo imho thx pls plz u ur r ty np smh k kk ngl fr")),
        -2,
        4,
    ),
    CueFamily(
        "interjection",
        _words(
            *_split(
                r"h+m+ a+h+ o+h+ w+o+w+ u+g+h+ m+e+h+ (?:ha){2,}h? (?:he){2,} ya+y oo+ps who+a damn dang "
                r"ge+z gosh huh eh u+m+ u+h+"
            )
        ),
        -1,
        2,
    ),
    CueFamily("exclamation run", re.compile(r"[!?]{2,}"), -1, 1),
    CueFamily("emoji or emoticon", _EMOJI, -2, 2),
    CueFamily("stretched letters", re.compile(r"([a-z])\1{2,}", re.IGNORECASE), -1, 1),
    CueFamily("shouting", re.compile(r"\b[A-Z]{4,}\b"), -1, 1),
    CueFamily("trailing dots", re.compile(r"\.\.\.|…"), -1, 1),
    CueFamily(
        "politeness marker",
        _words(
            *_split(
                "please kindly could_you would_you might_you may_i thank_you "
                "i_would_(?:like|love|appreciate|prefer|be_grateful) would_it_be_possible if_possible "
                "if_you_(?:could|would|do_not_mind) much_appreciated grateful appreciate i_was_wondering "
                "i_wonder_whether"
            )
        ),
        1,
        3,
    ),
    CueFamily(
        "formal vocabulary",
        _words(
            *_split(
                "however therefore furthermore moreover additionally consequently nevertheless regarding "
                "concerning particularly preferably perhaps indeed certainly sincerely whereas thus hence "
                "accordingly assist assistance inquire enquire require suitable whether in_addition "
                "in_particular would_prefer"
            )
        ),
        1,
        2,
    ),
    CueFamily(
        "full form",
        _words(
            *_split(
                "i_am do_not does_not did_not cannot is_not are_not have_not would_not will_not i_will "
                "i_have_not it_is_not"
            )
        ),
        1,
        1,
    ),
)

_SENTENCE_START = re.compile(r"(?:^|[.!?]+[\s\"')]+)[\s\"'(]*([^\W\d_])", re.UNICODE)
_LOWER_I = re.compile(r"(?<![\w'])i(?![\w-])(?!\.)")
_ENDS_WELL = re.compile(r"[.?!][\"')\]]*\s*$")


def _lower_case_cues(text: str) -> list[tuple[str, int]]:
    starts = [m.group(1) for m in _SENTENCE_START.finditer(text)]
    cues: list[tuple[str, int]] = []
    if any(letter.islower() for letter in starts):
        cues.append(("lower-case sentence start", -1))
    if _LOWER_I.search(text):
        cues.append(("lower-case 'i'", -1))
    return cues


def _well_formed(text: str) -> bool:
    """Every sentence starts with a capital and the text ends with sentence punctuation."""
    starts = [m.group(1) for m in _SENTENCE_START.finditer(text)]
    return bool(starts) and all(s.isupper() for s in starts) and bool(_ENDS_WELL.search(text))


def formality_cues(text: str) -> list[tuple[str, int]]:
    """The cues found in `text` as (description, weight), capped per family."""
    text = text.replace("’", "'")
    cues: list[tuple[str, int]] = []
    for family in FAMILIES:
        seen = dict.fromkeys(m.group(0).lower() for m in family.pattern.finditer(text))
        for match in list(seen)[: family.cap]:
            cues.append((f"{family.name} {match!r}", family.weight))
    cues += _lower_case_cues(text)
    if _well_formed(text) and not _LOWER_I.search(text):
        cues.append(("well-formed sentences", 1))
    return cues


def classify_formality(text: str, rules: FormalityRules | None = None) -> Reading[str]:
    """formal / neutral / informal by the cue score; `details` lists the cues with their weights."""
    rules = rules or FormalityRules()
    cues = formality_cues(text)
    score = sum(weight for _, weight in cues)
    if score >= rules.formal_at:
        label = "formal"
    elif score <= rules.informal_at:
        label = "informal"
    else:
        label = "neutral"
    details = (*(f"{name} ({weight:+d})" for name, weight in cues), f"score {score:+d}")
    return Reading(label, details=details)
