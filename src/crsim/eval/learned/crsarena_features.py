"""Features of the CRSArena-Eval evaluator: one row per CRS utterance (turn level) and one per dialogue.

A *turn row* describes one CRS utterance in its context: its own words, the user utterance before
it (what it answers) and the one after it (how the user took it), as three bags of terms for
TF-IDF, plus named numbers (`TURN_FEATURES`): position in the dialogue, length, titles and
recommended items, repetition of earlier CRS text or items, word overlap with the user's request,
and the user cues (`crsim.eval.learned.features.utterance_cues`) of the utterances before and
after. The whole dialogue's dense features are appended, because raters judged a turn knowing
the conversation around it.

A *dialogue row* is the satisfaction estimator's `DialogueDocument` (user terms, CRS terms, the
dense structure and cue features) plus `CONTEXT_FEATURES`: further counts that describe how the
conversation went (no-answer replies, recommendations without a year, the user's last words).

Nothing here reads labels; the same rows serve training and prediction.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from itertools import pairwise

from rapidfuzz import fuzz

from crsim.eval.learned.catalogue_fit import ReplyFit, reply_fits
from crsim.eval.learned.features import (
    DENSE_FEATURES,
    USER_CUES,
    DialogueDocument,
    analyzer,
    document,
    sentiment,
    utterance_cues,
)
from crsim.language import cues
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.domain import Domain
from crsim.model.text import normalize

#: Bumped whenever a feature's definition changes; artifacts record it and refuse a mismatch.
CRSARENA_FEATURE_VERSION = 2

#: The three bags of terms of a turn row.
TURN_TEXTS: tuple[str, ...] = ("crs", "user_before", "user_after")
#: The two bags of terms of a dialogue row.
DIALOGUE_TEXTS: tuple[str, ...] = ("user", "crs")

_YEAR_TITLE = re.compile(r"\(\s*(19|20)\d\d\s*\)")
_FUNCTION_TEXT = (
    "a an the i you me my to of and or in on for is it that this with be can could would do what "
    "some any like movie movies film films please recommend something about are was have has im its"
)
#: Words left out when comparing the content of a request and a reply.
_FUNCTION_WORDS = frozenset(_FUNCTION_TEXT.split())

_OWN = (
    "relative_position",
    "log_position",
    "is_first",
    "is_last",
    "log_words",
    "is_short",
    "question",
    "year_titles",
    "log_recommended",
    "recommends",
    "repeats_crs_text",
    "similarity_to_previous_crs",
    "repeated_items_share",
    "new_items",
    "request_overlap",
    "request_content_overlap",
    "sentiment",
    "before_exists",
    "before_log_words",
    "after_exists",
    "after_log_words",
    "after_sentiment",
    "stutter",
    "repeated_trigrams",
    "question_unanswered",
    "request_unmet",
    "pleasantry_unprompted",
    "fit_known",
    "fit_match",
    "fit_clash",
    "fit_seen",
)
#: Named numbers of a turn row, in vector order: own features, cues before and after, then the dialogue's.
TURN_FEATURES: tuple[str, ...] = (
    *_OWN,
    *(f"before_{cue}" for cue in USER_CUES),
    *(f"after_{cue}" for cue in USER_CUES),
    *(f"dialogue_{name}" for name in DENSE_FEATURES),
)
#: Named numbers added to a dialogue row beyond `DENSE_FEATURES`.
CONTEXT_FEATURES: tuple[str, ...] = (
    "log_crs_words_total",
    "short_crs_share",
    "titled_crs_share",
    "crs_after_complaint_share",
    "user_words_first",
    "first_user_request",
    "last_user_goodbye_or_thanks",
    "mean_request_overlap",
    "stutter_mean",
    "stutter_max",
    "disfluent_share",
    "repeated_trigrams_mean",
    "unanswered_question_share",
    "request_unmet_share",
    "pleasantry_unprompted_share",
    "fit_known_share",
    "fit_match_mean",
    "fit_clash_mean",
    "fit_seen_mean",
)
#: All dense numbers of a dialogue row, in vector order.
DIALOGUE_FEATURES: tuple[str, ...] = (*DENSE_FEATURES, *CONTEXT_FEATURES)


@dataclass(frozen=True, slots=True)
class TurnRow:
    """One CRS utterance with its context: `position` in the dialogue, turn t, terms and numbers."""

    position: int
    turn: int
    texts: tuple[tuple[str, ...], ...]
    dense: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class DialogueRow:
    """One dialogue: the terms of each side and the dense numbers (`DIALOGUE_FEATURES`)."""

    texts: tuple[tuple[str, ...], ...]
    dense: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class DialogueFeatures:
    """Everything the evaluator reads of one dialogue."""

    dialogue: DialogueRow
    turns: tuple[TurnRow, ...]


def dialogue_features(dialogue: Dialogue, domain: Domain | None = None) -> DialogueFeatures:
    """The dialogue row and one turn row per CRS utterance (none when the CRS never spoke);
    `domain` is the catalogue that recommendations are checked against (default: the movies)."""
    base = document(dialogue)
    fits = reply_fits(dialogue, domain)
    context = _context(dialogue, fits)
    row = DialogueRow(
        texts=(base.user_terms, base.crs_terms),
        dense=(*base.dense, *(context[name] for name in CONTEXT_FEATURES)),
    )
    return DialogueFeatures(row, tuple(_turn_rows(dialogue, base, fits)))


def _words(text: str) -> list[str]:
    return normalize(text).split()


def _content(words: list[str]) -> set[str]:
    return {w for w in words if w not in _FUNCTION_WORDS and len(w) > 2}


def _overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a) if a else 0.0


def _neighbour(utterances: list[Utterance], position: int, step: int) -> Utterance | None:
    """The nearest user utterance before (`step` -1) or after (+1) a position, if any."""
    index = position + step
    while 0 <= index < len(utterances):
        if utterances[index].role is Role.USER:
            return utterances[index]
        if step > 0:  # another CRS utterance comes first: the user has not reacted to this one
            return None
        index += step
    return None


def _turn_rows(dialogue: Dialogue, base: DialogueDocument, fits: dict[int, ReplyFit]) -> list[TurnRow]:
    utterances = list(dialogue.utterances)
    turns = dialogue.crs_turn_numbers()
    crs_positions = list(turns)
    dialogue_dense = base.dense
    seen_texts: set[str] = set()
    seen_items: set[str] = set()
    previous_norm: str | None = None
    rows = []
    for index, position in enumerate(crs_positions):
        utterance = utterances[position]
        norm = normalize(utterance.text)
        words = norm.split()
        before = _neighbour(utterances, position, -1)
        after = _neighbour(utterances, position, +1)
        before_words = _words(before.text) if before else []
        after_words = _words(after.text) if after else []
        items = list(dict.fromkeys(utterance.recommended_items))
        repeated = [i for i in items if i in seen_items]
        own = {
            "relative_position": index / max(len(crs_positions) - 1, 1),
            "log_position": math.log1p(index),
            "is_first": float(index == 0),
            "is_last": float(index == len(crs_positions) - 1),
            "log_words": math.log1p(len(words)),
            "is_short": float(len(words) <= 4),
            "question": float("?" in utterance.text),
            "year_titles": float(len(_YEAR_TITLE.findall(utterance.text))),
            "log_recommended": math.log1p(len(items)),
            "recommends": float(bool(items) or any(a.intent == "recommend" for a in utterance.acts)),
            "repeats_crs_text": float(bool(norm) and norm in seen_texts),
            "similarity_to_previous_crs": fuzz.ratio(norm, previous_norm) / 100.0 if previous_norm else 0.0,
            "repeated_items_share": len(repeated) / len(items) if items else 0.0,
            "new_items": float(len(items) - len(repeated)),
            "request_overlap": _overlap(set(before_words), set(words)),
            "request_content_overlap": _overlap(_content(before_words), _content(words)),
            "sentiment": sentiment(norm),
            "before_exists": float(before is not None),
            "before_log_words": math.log1p(len(before_words)),
            "after_exists": float(after is not None),
            "after_log_words": math.log1p(len(after_words)),
            "after_sentiment": sentiment(" ".join(after_words)),
            "stutter": stutter(words),
            "repeated_trigrams": repeated_trigrams(words),
            "question_unanswered": float(_unanswered(before, before_words, words)),
            "request_unmet": float(_request_unmet(before, utterance, norm)),
            "pleasantry_unprompted": float(_pleasantry_unprompted(before, norm)),
            "fit_known": fits[position].known,
            "fit_match": fits[position].match,
            "fit_clash": fits[position].clash,
            "fit_seen": fits[position].seen,
        }
        before_cues = utterance_cues(before) if before else frozenset()
        after_cues = utterance_cues(after) if after else frozenset()
        dense = (
            *(own[name] for name in _OWN),
            *(float(cue in before_cues) for cue in USER_CUES),
            *(float(cue in after_cues) for cue in USER_CUES),
            *dialogue_dense,
        )
        texts = (
            tuple(analyzer(utterance.text)),
            tuple(analyzer(before.text)) if before else (),
            tuple(analyzer(after.text)) if after else (),
        )
        rows.append(TurnRow(position=position, turn=turns[position], texts=texts, dense=dense))
        if norm:
            seen_texts.add(norm)
        seen_items.update(items)
        previous_norm = norm
    return rows


def _context(dialogue: Dialogue, fits: dict[int, ReplyFit]) -> dict[str, float]:
    """The `CONTEXT_FEATURES` of a dialogue."""
    utterances = list(dialogue.utterances)
    words = [_words(u.text) for u in utterances]  # normalised once: the slow part
    crs = [u for u in utterances if u.role is Role.CRS]
    user = [u for u in utterances if u.role is Role.USER]
    crs_word_lists = [w for u, w in zip(utterances, words, strict=True) if u.role is Role.CRS]
    crs_words = [len(w) for w in crs_word_lists]
    after_complaint = []
    overlaps = []
    unanswered = []
    unmet = []
    pleasantries = []
    for i, (before, reply) in enumerate(pairwise(utterances)):
        if before.role is Role.USER and reply.role is Role.CRS:
            before_words, reply_words = words[i], words[i + 1]
            overlaps.append(_overlap(_content(before_words), _content(reply_words)))
            after_complaint.append("complaint" in utterance_cues(before))
            unanswered.append(_unanswered(before, before_words, reply_words))
            reply_norm = " ".join(reply_words)
            unmet.append(_request_unmet(before, reply, reply_norm))
            pleasantries.append(_pleasantry_unprompted(before, reply_norm))
    stutters = [stutter(w) for w in crs_word_lists]
    first_cues = utterance_cues(user[0]) if user else frozenset()
    last_cues = utterance_cues(user[-1]) if user else frozenset()
    return {
        "log_crs_words_total": math.log1p(sum(crs_words)),
        "short_crs_share": _share([n <= 4 for n in crs_words]),
        "titled_crs_share": _share([bool(_YEAR_TITLE.search(u.text)) for u in crs]),
        "crs_after_complaint_share": _share(after_complaint),
        "user_words_first": math.log1p(len(_words(user[0].text))) if user else 0.0,
        "first_user_request": float("request" in first_cues),
        "last_user_goodbye_or_thanks": float(bool({"goodbye", "thanks"} & last_cues)),
        "mean_request_overlap": sum(overlaps) / len(overlaps) if overlaps else 0.0,
        "stutter_mean": sum(stutters) / len(stutters) if stutters else 0.0,
        "stutter_max": max(stutters, default=0.0),
        "disfluent_share": _share([s > 0 for s in stutters]),
        "repeated_trigrams_mean": _mean([repeated_trigrams(w) for w in crs_word_lists]),
        "unanswered_question_share": _share(unanswered),
        "request_unmet_share": _share(unmet),
        "pleasantry_unprompted_share": _share(pleasantries),
        "fit_known_share": _mean([f.known for f in fits.values()]),
        "fit_match_mean": _mean([f.match for f in fits.values() if f.known]),
        "fit_clash_mean": _mean([f.clash for f in fits.values()]),
        "fit_seen_mean": _mean([f.seen for f in fits.values()]),
    }


def _share(flags: list[bool]) -> float:
    return sum(flags) / len(flags) if flags else 0.0


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def stutter(words: list[str]) -> float:
    """Share of words that repeat the word right before them ("the the", "can can can").

    Fluent text almost never does this; generators that loop do, whatever their training data.
    """
    if len(words) < 2:
        return 0.0
    return sum(a == b for a, b in pairwise(words)) / (len(words) - 1)


def repeated_trigrams(words: list[str]) -> float:
    """Share of an utterance's word trigrams that already occurred earlier in the same utterance."""
    trigrams = list(zip(words, words[1:], words[2:], strict=False))
    return (len(trigrams) - len(set(trigrams))) / len(trigrams) if trigrams else 0.0


_WH = frozenset(
    [
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "is",
        "are",
        "does",
        "do",
        "did",
        "can",
        "could",
        "have",
        "has",
    ]
)


def _unanswered(before: Utterance | None, before_words: list[str], reply_words: list[str]) -> bool:
    """The user asked a question (a question mark, or a question word first) and the reply shares
    no content word with it: the reply has gone elsewhere."""
    if before is None or not before_words:
        return False
    asked = "?" in before.text or before_words[0] in _WH
    return asked and not (_content(before_words) & _content(reply_words))


def _request_unmet(before: Utterance | None, reply: Utterance, reply_norm: str) -> bool:
    """The user asked for a recommendation and the reply neither recommends (items, titles with a
    year) nor asks back: it talks about something else."""
    if before is None or "request" not in utterance_cues(before):
        return False
    delivers = bool(reply.recommended_items) or bool(_YEAR_TITLE.search(reply.text))
    return not delivers and "?" not in reply.text and bool(reply_norm)


_PLEASANTRY = re.compile(
    r"\b(how are you|how (is|s) it going|how (is|s) your day"
    r"|(im|i am) (good|fine|great|doing (good|great|well|fine))"
    r"|nice to (meet|talk to) you|hows it going|whats up)\b"
)


def _pleasantry_unprompted(before: Utterance | None, reply_norm: str) -> bool:
    """The reply makes small talk ("I'm good, how are you?") although the user's utterance before it
    was neither a greeting nor small talk: a reply to a different conversation."""
    if not _PLEASANTRY.search(reply_norm):
        return False
    if before is None:
        return False
    before_norm = normalize(before.text)
    return not (cues.GREETING.search(before_norm) or _PLEASANTRY.search(before_norm))
