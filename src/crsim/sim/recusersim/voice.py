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

from crsim.language.message_rules import first_cue, parrots, title_named, user_voice_patterns

#: Sentences only the recommender says (`crsim.language.message_rules.user_voice_patterns`, the rule
#: `crsim analyze behaviour` counts as `role_flip`), with generic item nouns.
_RECOMMENDER_CUES = user_voice_patterns("item", "items")
#: The cue of a draft that copies the recommender's last message.
PARROT = "it repeated the recommender's last message"


def role_flip(text: str, last_recommender: str | None) -> str | None:
    """Why `text` reads as the recommender's message (the cue found), or None: a recommending or
    serving phrase, or a copy of the recommender's last message
    (`crsim.language.message_rules.parrots`, the behaviour report's `parroting` rule)."""
    found = first_cue(text, _RECOMMENDER_CUES)
    if found:
        return found
    if last_recommender and parrots(text, last_recommender):
        return PARROT
    return None


def named_titles(text: str, titles: list[str]) -> list[str]:
    """The `titles` that `text` names (`crsim.language.message_rules.title_named`, the rule of the
    behaviour report's `target_leaked`), for the user's rule never to name the titles it hopes to get."""
    return [title for title in titles if title_named(text, title)]


def without_flips(text: str, titles: Sequence[str] = ()) -> str:
    """The sentences of `text` that carry no recommender cue and name none of `titles` ('' when
    none is left)."""
    sentences = re.split(r"(?<=[.!?])\s+", text.strip())
    kept = [s for s in sentences if not first_cue(s, _RECOMMENDER_CUES) and not named_titles(s, list(titles))]
    return " ".join(kept).strip()
