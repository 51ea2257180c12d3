"""Dialogue -> features for learned evaluators: the terms TF-IDF reads, plus named dense features.

A learned evaluator sees a dialogue in two ways. The user's turns and the CRS's turns are two
bags of terms (`DialogueDocument.user_terms`, `.crs_terms`: words and word bigrams within each
utterance) that a TF-IDF vocabulary, fitted on the training folds only, turns into sparse
vectors. Everything else is a fixed list of named numbers (`DENSE_FEATURES`): the dialogue's
structure (length, recommendations, repeated items and replies, questions, utterance lengths)
and the user's cues (acceptance, rejection, thanks, complaints, sentiment), over the whole
dialogue and over its last user turns, where the user's final mood shows.

Cues reuse the cue patterns of crsim's rule-based understanding (`crsim.language.cues`) on the
normalised text, plus a small sentiment and complaint lexicon of our own. A user utterance that
carries dialogue acts (simulated or annotated dialogues) also counts its `accept`/`reject`/`seen`
acts as cues, so annotated dialogues are read at least as well as raw text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

from rapidfuzz import fuzz

from crsim.language import cues
from crsim.model.acts import Intent
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.text import normalize

TextSide = Literal["user", "crs"]
#: Bumped whenever a feature's definition changes: artifacts record it and refuse a mismatch.
FEATURE_VERSION = 1
#: How many of the last user utterances the `last_*` features read.
LAST_USER_TURNS = 2

# --- our own small lexicon (normalised text: lower case, no punctuation, "dont", "thats") ------------


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


POSITIVE_WORDS = _words(
    "good great nice cool awesome love loved lovely like liked interesting perfect excellent amazing "
    "fantastic wonderful helpful fun brilliant enjoy enjoyed happy glad thanks thank appreciate "
    "appreciated superb fine neat intriguing exciting"
)
NEGATIVE_WORDS = _words(
    "bad wrong terrible awful useless stupid boring annoying confusing confused weird strange nonsense "
    "incorrect unhelpful hate hated horrible worst poor ridiculous frustrating frustrated irrelevant "
    "pointless disappointing disappointed dumb broken repeating repetitive sucks"
)
#: Words that flip the sentiment word right after them ("not good", "never helpful").
NEGATORS = _words("not no never dont doesnt didnt isnt wasnt arent werent cant wont hardly")
#: Complaints about the conversation itself rather than about one item.
COMPLAINT = re.compile(
    r"\b(not what i (asked|wanted|meant|said|requested)|i (already|just) (said|told|asked|mentioned)"
    r"|i said|i asked (for|you)|you (already|keep|still)|again"
    r"|(doesnt|does not|didnt|did not|dont|do not) (make sense|answer|help|understand|exist)"
    r"|(you|u) (dont|do not|didnt|did not) (understand|get|listen|answer|know)"
    r"|not (helpful|real|correct|right|true|accurate|relevant|working)|makes no sense|no sense"
    r"|what are you (talking|saying)|never ?mind|are you (a bot|broken|ok|there|listening|serious)"
    r"|that (is|s) not|thats not|isnt (a|an|what)|you misunderstood|answer (my|the) question)\b"
)
#: A year in brackets, as CRSs write after a title ("Black Panther (2018)"): how many titles a reply lists.
_YEAR_TITLE = re.compile(r"\(\s*(19|20)\d\d\s*\)")

#: The user cue names; each gives `user_<cue>` (share of user utterances) and `last_<cue>`.
USER_CUES = (
    "accept",
    "reject",
    "seen",
    "thanks",
    "goodbye",
    "request",
    "complaint",
    "positive",
    "negative",
    "question",
)
_STRUCTURE = (
    "log_turns",
    "log_crs_utterances",
    "recommending_share",
    "log_recommendations",
    "log_distinct_items",
    "repeated_item_share",
    "crs_repeat_share",
    "crs_consecutive_similarity",
    "user_repeat_share",
    "crs_question_share",
    "crs_year_titles_mean",
    "log_user_words_mean",
    "log_user_words_last",
    "log_crs_words_mean",
    "user_sentiment_mean",
    "last_sentiment",
)
#: Names of the dense features, in the order `dense_vector` returns them.
DENSE_FEATURES: tuple[str, ...] = (
    *_STRUCTURE,
    *(f"user_{cue}" for cue in USER_CUES),
    *(f"last_{cue}" for cue in USER_CUES),
)

_ACT_CUES = {Intent.ACCEPT.value: "accept", Intent.REJECT.value: "reject", Intent.SEEN.value: "seen"}


@dataclass(frozen=True, slots=True)
class DialogueDocument:
    """What a learned evaluator reads of one dialogue: the terms of each side and the dense features.

    Terms are computed once per dialogue (normalising text is the slow part of TF-IDF). `extra`
    holds optional further numbers (sentence embeddings when measuring them); shipped artifacts
    do not read it.
    """

    user_terms: tuple[str, ...]
    crs_terms: tuple[str, ...]
    dense: tuple[float, ...]
    extra: tuple[float, ...] = ()

    def terms(self, side: TextSide) -> tuple[str, ...]:
        """The terms of the user's (`user`) or the CRS's (`crs`) utterances."""
        return self.user_terms if side == "user" else self.crs_terms


def analyzer(text: str) -> list[str]:
    """TF-IDF terms of one utterance: normalised words and word bigrams."""
    words = normalize(text).split()
    return words + [f"{a} {b}" for a, b in pairwise(words)]


def sentiment(norm: str) -> float:
    """Lexicon sentiment of normalised text: positive minus negative words, a negator flipping the next."""
    score = 0.0
    words = norm.split()
    for index, word in enumerate(words):
        polarity = (word in POSITIVE_WORDS) - (word in NEGATIVE_WORDS)
        if polarity and index > 0 and words[index - 1] in NEGATORS:
            polarity = -polarity
        score += polarity
    return score


#: Cues that depend on the domain's words, with the words of the movie dialogues the evaluators are
#: fitted on (requests for "another movie", "I'll watch it", "seen it").
_SEEN, _NOT_SEEN = cues.seen_patterns(("seen", "watched", "saw"))
_REQUEST = cues.request_pattern(
    ("movie", "film", "movies", "films"), ("movie", "film"), ("what should i watch",)
)
_ACCEPT = cues.accept_pattern(("watch",))


def utterance_cues(utterance: Utterance) -> frozenset[str]:
    """The user cues (`USER_CUES`) an utterance shows, read from its text and, if any, its acts."""
    norm = normalize(utterance.text)
    seen = bool(_SEEN.search(norm)) and not _NOT_SEEN.search(norm)
    found = {
        "reject": not seen and bool(cues.REJECT.search(norm) or cues.HATE.search(norm)),
        "seen": seen,
        "thanks": bool(cues.THANKS.search(norm)),
        "goodbye": bool(cues.GOODBYE.search(norm)),
        "request": bool(_REQUEST.search(norm)),
        "complaint": bool(COMPLAINT.search(norm)),
        "question": "?" in utterance.text,
    }
    found["accept"] = not found["reject"] and not seen and bool(_ACCEPT.search(norm))
    polarity = sentiment(norm)
    found["positive"], found["negative"] = polarity > 0, polarity < 0
    names = {name for name, hit in found.items() if hit}
    names.update(_ACT_CUES[a.intent] for a in utterance.acts if a.intent in _ACT_CUES)
    return frozenset(names)


def document(dialogue: Dialogue) -> DialogueDocument:
    """The terms of both sides and the dense features of a dialogue (any crsim dialogue; no labels)."""
    user = [u for u in dialogue.utterances if u.role is Role.USER]
    crs = [u for u in dialogue.utterances if u.role is Role.CRS]
    return DialogueDocument(
        user_terms=tuple(term for u in user for term in analyzer(u.text)),
        crs_terms=tuple(term for u in crs for term in analyzer(u.text)),
        dense=dense_vector(dialogue),
    )


def dense_vector(dialogue: Dialogue) -> tuple[float, ...]:
    """`dense_features` as a tuple in `DENSE_FEATURES` order."""
    values = dense_features(dialogue)
    return tuple(values[name] for name in DENSE_FEATURES)


def dense_features(dialogue: Dialogue) -> dict[str, float]:
    """The named dense features of a dialogue (structure, then user cues)."""
    user = [u for u in dialogue.utterances if u.role is Role.USER]
    crs = [u for u in dialogue.utterances if u.role is Role.CRS]
    values = _structure(dialogue, user, crs)
    user_cues = [utterance_cues(u) for u in user]
    last = user_cues[-LAST_USER_TURNS:]
    for cue in USER_CUES:
        values[f"user_{cue}"] = _share(cue in found for found in user_cues)
        values[f"last_{cue}"] = _share(cue in found for found in last)
    return values


def _structure(dialogue: Dialogue, user: list[Utterance], crs: list[Utterance]) -> dict[str, float]:
    crs_norms = [normalize(u.text) for u in crs]
    user_norms = [normalize(u.text) for u in user]
    recommending = [u for u in crs if u.recommended_items or any(a.intent == "recommend" for a in u.acts)]
    items = [item for u in crs for item in dict.fromkeys(u.recommended_items)]
    user_words = [len(n.split()) for n in user_norms]
    user_sentiments = [sentiment(n) for n in user_norms]
    return {
        "log_turns": math.log1p(dialogue.num_turns),
        "log_crs_utterances": math.log1p(len(crs)),
        "recommending_share": len(recommending) / len(crs) if crs else 0.0,
        "log_recommendations": math.log1p(len(recommending)),
        "log_distinct_items": math.log1p(len(set(items))),
        "repeated_item_share": (len(items) - len(set(items))) / len(items) if items else 0.0,
        "crs_repeat_share": _repeat_share(crs_norms),
        "crs_consecutive_similarity": _consecutive_similarity(crs_norms),
        "user_repeat_share": _repeat_share(user_norms),
        "crs_question_share": _share("?" in u.text for u in crs),
        "crs_year_titles_mean": _mean([float(len(_YEAR_TITLE.findall(u.text))) for u in crs]),
        "log_user_words_mean": math.log1p(_mean([float(n) for n in user_words])),
        "log_user_words_last": math.log1p(user_words[-1]) if user_words else 0.0,
        "log_crs_words_mean": math.log1p(_mean([float(len(n.split())) for n in crs_norms])),
        "user_sentiment_mean": _mean(user_sentiments),
        "last_sentiment": _mean(user_sentiments[-LAST_USER_TURNS:]),
    }


def _share(flags: Iterable[bool]) -> float:
    values = list(flags)
    return sum(values) / len(values) if values else 0.0


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _repeat_share(norms: list[str]) -> float:
    """Share of non-empty utterances whose normalised text repeats an earlier one of the same speaker."""
    seen: set[str] = set()
    repeats = total = 0
    for norm in norms:
        if not norm:
            continue
        total += 1
        repeats += norm in seen
        seen.add(norm)
    return repeats / total if total else 0.0


def _consecutive_similarity(norms: list[str]) -> float:
    """Mean similarity (0-1, rapidfuzz ratio) of each CRS utterance to the previous one."""
    pairs = list(pairwise(norms))
    return _mean([fuzz.ratio(a, b) / 100.0 for a, b in pairs])
