"""Keeping the user's reply the user's: the recommender's voice detected.

An instruction-tuned model asked for "your next message" sometimes writes the recommender's part
("I'd recommend Heat (1995). Enjoy!"). `role_flip` names the cue by which a draft speaks as the
recommender (or parrots its last message), so the simulator can draft once more and annotate what
happened; the assistant framing around a message is removed before (`crsim.sim.shared.utterance`).
The cues are domain-generic English.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: Sentences only the recommender says: recommending, offering help, asking the user's wishes.
_RECOMMENDER_CUES = re.compile(
    r"\b(?:i|we)\s*(?:would|'d|can|could|will|'ll)?\s*(?:highly\s+|strongly\s+)?(?:recommend|suggest)\b"
    r"|\byou (?:might|may|will|would|could) (?:also |really )?(?:like|enjoy|love)\b"
    r"|\bhere are (?:some|a few|my)\b"
    r"|\bbased on your (?:preferences|taste|interests?|request)\b"
    r"|\bhope you enjoy\b"
    r"|\bhow (?:can|may) i help\b"
    r"|\blet me know if you(?:'d| would)? (?:like|want|need) (?:more|other|another|any)\b"
    r"|\bwhat (?:kind|type|sort) of \w+ (?:are you|you're|you are|would you|you'd|do you) "
    r"(?:in the mood|looking|like|prefer|enjoy|want|feel like)\b"
    r"|\bwhat you(?:'re| are) (?:looking for|into|hoping for|in the mood for)\b"
    r"|\b(?:you're|you are) looking for\b"
    r"|\bwould you like to (?:see|watch|try)\b",
    re.IGNORECASE,
)
_PARROT_MIN_WORDS = 5
#: The cue of a draft that copies the recommender's last message.
PARROT = "it repeated the recommender's last message"


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def role_flip(text: str, last_recommender: str | None) -> str | None:
    """Why `text` reads as the recommender's message (the cue found), or None: a recommending or
    serving phrase, or a copy of the recommender's last message (at least `_PARROT_MIN_WORDS` words)."""
    found = _RECOMMENDER_CUES.search(text)
    if found:
        return found.group(0)
    if last_recommender:
        theirs = " ".join(_words(last_recommender))
        if len(theirs.split()) >= _PARROT_MIN_WORDS and theirs in " ".join(_words(text)):
            return PARROT
    return None


#: Titles shorter than this are not looked for (a title like "Up" is also an everyday word).
MIN_TITLE_CHARS = 4


def named_titles(text: str, titles: list[str]) -> list[str]:
    """The `titles` that `text` names (case-insensitive, as whole words; a trailing " (year)" of a
    title is not required), for the user's rule never to name the titles it hopes to get."""
    lowered, found = text.lower(), []
    for title in titles:
        bare = re.sub(r"\s*\(\d{4}\)$", "", title).strip().lower()
        if len(bare) >= MIN_TITLE_CHARS and re.search(rf"(?<!\w){re.escape(bare)}(?!\w)", lowered):
            found.append(title)
    return found


def without_flips(text: str, titles: Sequence[str] = ()) -> str:
    """The sentences of `text` that carry no recommender cue and name none of `titles` ('' when
    none is left)."""
    sentences = re.split(r"(?<=[.!?])\s+", text.strip())
    kept = [s for s in sentences if not _RECOMMENDER_CUES.search(s) and not named_titles(s, list(titles))]
    return " ".join(kept).strip()
