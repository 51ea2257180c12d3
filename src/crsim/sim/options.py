"""Which of a CRS's buttons (quick replies) says what a simulated user means.

A CRS may offer options with its reply ("Seen it", "Something else", "I like this", "More
information"). A user who means one of the acts in `OPTION_PHRASINGS` picks the offered option whose
label is nearest in meaning to one of that act's phrasings: the labels and phrasings are compared
after `crsim.model.text.normalize` (case, accents and punctuation ignored); an exact match scores 100,
a phrasing contained in the label as whole words 95, anything else its rapidfuzz `fuzz.ratio`; a
label and a phrasing of which only one negates score 0 ("I haven't seen it" is not "seen it"). An
option counts from `MIN_SCORE`. The best score wins, the CRS's order breaks ties. The table holds general
phrasings, not one system's strings; docs/buttons-and-progress.md lists it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rapidfuzz import fuzz

from crsim.model.acts import DialogueAct, Intent
from crsim.model.dialogue import ReplyOption
from crsim.model.text import normalize

#: The user act -> phrasings of a button that performs it.
OPTION_PHRASINGS: dict[str, tuple[str, ...]] = {
    Intent.REJECT: (
        "something else",
        "show me something else",
        "show me another",
        "something different",
        "another one",
        "another recommendation",
        "next",
        "next one",
        "not for me",
        "no thanks",
        "not interested",
        "i dont like this",
        "i dont like it",
        "dislike",
        "skip",
    ),
    Intent.ACCEPT: (
        "i like this",
        "i like it",
        "i like this recommendation",
        "i will take it",
        "ill take it",
        "sounds good",
        "this one",
        "accept",
        "love it",
        "thats the one",
    ),
    Intent.SEEN: (
        "seen it",
        "i have seen it",
        "i have seen this",
        "already seen",
        "seen it already",
        "already watched",
        "watched it",
        "i have already watched it",
        "already read",
        "been there",
    ),
    Intent.INQUIRE: (
        "more information",
        "more info",
        "tell me more",
        "tell me more about it",
        "tell me something about it",
        "tell me about it",
        "more details",
        "details",
        "what is it about",
        "info",
    ),
}

#: Lowest score (0-100) at which an option counts as saying an act.
MIN_SCORE = 85.0

#: Acts an option may leave unsaid: a greeting; after turning an item down or saying it was seen,
#: asking for another (which is what such a button does); after accepting an item, the goodbye.
_IMPLIED = {Intent.GREETING}
_IMPLIED_AFTER = {
    Intent.REQUEST_RECOMMENDATION: {Intent.REJECT, Intent.SEEN},
    Intent.GOODBYE: {Intent.ACCEPT},
}

_NEGATION = re.compile(r"\b(?:not|no|never|dont|didnt|havent|hasnt|isnt|wasnt|nt)\b")


def option_score(label: str, phrasing: str) -> float:
    """How well `label` says `phrasing` (0-100; see the module docstring)."""
    said, meant = normalize(label), normalize(phrasing)
    if not said or not meant or bool(_NEGATION.search(said)) != bool(_NEGATION.search(meant)):
        return 0.0
    if said == meant:
        return 100.0
    if re.search(rf"\b{re.escape(meant)}\b", said):
        return 95.0
    return float(fuzz.ratio(said, meant))


def option_for_act(intent: str, options: Sequence[ReplyOption]) -> ReplyOption | None:
    """The offered option that best says `intent` (None when no label reaches `MIN_SCORE`)."""
    phrasings = OPTION_PHRASINGS.get(intent, ())
    best, best_score = None, MIN_SCORE
    for option in options:
        score = max((option_score(option.label, p) for p in phrasings), default=0.0)
        if score > best_score or (best is None and score >= best_score):
            best, best_score = option, score
    return best


def option_for_turn(acts: Sequence[DialogueAct], options: Sequence[ReplyOption]) -> ReplyOption | None:
    """The option that says the whole of a user turn, or None (the user then uses its own words).

    A turn is said by an option when, greetings aside (and a request for another item after a
    rejection or a "seen", a goodbye after accepting), its acts are all of one intent of
    `OPTION_PHRASINGS`: a turn that also discloses a wish carries information no button does, and
    one that gives up and leaves says so in words. A question about one detail presses a button
    naming that detail when there is one, else the "More information" kind.
    """
    if not options:
        return None
    intents = {a.intent for a in acts} - _IMPLIED
    for implied, after in _IMPLIED_AFTER.items():
        if implied in intents and intents & after:
            intents.discard(implied)
    if len(intents) != 1:
        return None
    (intent,) = intents
    if intent == Intent.INQUIRE:
        slots = [slot for a in acts if a.intent == Intent.INQUIRE for slot, _ in a.slots]
        named = _option_naming(slots, options)
        if named is not None:
            return named
    return option_for_act(intent, options)


def _option_naming(slots: Sequence[str], options: Sequence[ReplyOption]) -> ReplyOption | None:
    """The first option whose label names one of `slots` (a word, or its plural): a button asking for
    that detail ("director name", "list of actors") says an inquiry better than "More information"."""
    words = [normalize(s.replace("_", " ")) for s in slots if normalize(s.replace("_", " "))]
    for option in options:
        said = normalize(option.label)
        if any(re.search(rf"\b{re.escape(w)}s?\b", said) for w in words):
            return option
    return None


#: Words of a button that gives up a wish: `Don't want a "comedy" movie.`, `Won't prefer a "comedy"
#: film.`, "Any decade", `Remove "Tom Hanks" from the list of actors.`
_DROPPING = re.compile(
    r"\b(?:dont|do not|wont|will not|shouldnt|should not|no need|no more|without|remove|drop|forget"
    r"|not|any)\b"
)


def option_dropping(values: Sequence[str], options: Sequence[ReplyOption]) -> ReplyOption | None:
    """The first offered option that gives up one of `values` (a constraint the user relaxes): its
    label names the value as whole words, and a word of dropping it. None when no label does."""
    wanted = [normalize(v) for v in values if normalize(v)]
    for option in options:
        said = normalize(option.label)
        if _DROPPING.search(said) and any(re.search(rf"\b{re.escape(w)}\b", said) for w in wanted):
            return option
    return None


def chosen_label(text: str, options: Sequence[ReplyOption]) -> ReplyOption | None:
    """The offered option whose label `text` repeats (ignoring case and punctuation), or None: how
    an LLM user's message that is a button's label becomes a choice of that button."""
    said = normalize(text)
    return next((o for o in options if said and normalize(o.label) == said), None)
