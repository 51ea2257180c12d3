"""The user side of a set of dialogues (simulated or human): what every measure reads from them, kept
per dialogue so that a bootstrap can resample dialogues (`merged`)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from crsim.eval.metrics.structure import recommends
from crsim.model.acts import Intent
from crsim.model.dialogue import Dialogue, Role

#: Outcomes of a recommendation round.
ACCEPTED, REJECTED, NO_REACTION = "accepted", "rejected", "neither"

_WORD = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*", re.UNICODE)


def words(text: str) -> list[str]:
    """Lower-cased words: runs of letters or digits with inner apostrophes or hyphens."""
    return [w.lower() for w in _WORD.findall(text)]


def is_question(text: str) -> bool:
    """A user utterance asks something when it contains a question mark."""
    return "?" in text


@dataclass
class UserSide:
    """What the measures need from a set of annotated dialogues (simulated or human)."""

    dialogues: int = 0
    #: (dialogue id, text) of every non-empty user utterance.
    utterances: list[tuple[str, str]] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    questions: list[bool] = field(default_factory=list)
    #: One outcome per recommendation round: ACCEPTED, REJECTED or NO_REACTION.
    reactions: list[str] = field(default_factory=list)
    intents: Counter[str] = field(default_factory=Counter)
    turns: list[int] = field(default_factory=list)
    #: The words of each utterance (as `utterances`), and which copy of its dialogue it is in: 0, or
    #: k for the k-th repeat of a dialogue a bootstrap resample drew more than once (`merged`).
    tokens: list[list[str]] = field(default_factory=list)
    copies: list[int] = field(default_factory=list)
    #: Per utterance, the number of its dialogue among the side's (`merged`: among the parts').
    origins: list[int] = field(default_factory=list)
    #: n -> the n-grams of each utterance (n = 1, 2), made once: the bootstrap reads them many times.
    ngrams: dict[int, list[list[tuple[str, ...]]]] = field(default_factory=lambda: {1: [], 2: []})
    #: Each dialogue on its own, in the order added: what the bootstrap resamples.
    parts: list[UserSide] = field(default_factory=list)

    def add(self, dialogue: Dialogue, key: str = "") -> None:
        """Add one dialogue whose utterances carry acts; `key` keeps dialogue ids of two sides apart."""
        part = UserSide(dialogues=1)
        users = [u for u in dialogue.utterances if u.role is Role.USER and u.text.strip()]
        part.turns.append(len(users))
        for utterance in users:
            said = words(utterance.text)
            part.utterances.append((key + dialogue.id, utterance.text))
            part.tokens.append(said)
            for n, grams in part.ngrams.items():
                grams.append(ngrams(said, n))
            part.copies.append(0)
            part.lengths.append(len(said))
            part.questions.append(is_question(utterance.text))
            part.intents.update(a.intent for a in utterance.acts)
        part.reactions.extend(reactions(dialogue))
        self._extend(part, 0, len(self.parts))
        self.parts.append(part)

    def _extend(self, part: UserSide, copy: int, origin: int) -> None:
        self.dialogues += part.dialogues
        self.origins.extend([origin] * len(part.tokens))
        self.utterances.extend(part.utterances)
        self.tokens.extend(part.tokens)
        for n, grams in self.ngrams.items():
            grams.extend(part.ngrams[n])
        self.copies.extend([copy] * len(part.tokens))
        self.lengths.extend(part.lengths)
        self.questions.extend(part.questions)
        self.intents.update(part.intents)
        self.reactions.extend(part.reactions)
        self.turns.extend(part.turns)


def ngrams(said: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(said[i : i + n]) for i in range(len(said) - n + 1)]


def merged(parts: Sequence[UserSide], picks: Iterable[int]) -> UserSide:
    """The side made of the dialogues `parts[i]` for i in `picks` (a bootstrap resample: an index may
    repeat). A repeated dialogue's utterances carry their copy number, so distinct-n does not count a
    copy's n-grams as repeats of its original (a new dialogue would not repeat it word for word)."""
    side = UserSide()
    seen: Counter[int] = Counter()
    for index in picks:
        side._extend(parts[index], seen[index], int(index))
        seen[index] += 1
    return side


def reactions(dialogue: Dialogue) -> list[str]:
    """The outcome of each recommendation round (a recommending CRS utterance up to the next): the
    user's last `accept` or `reject` in it (an utterance with both counts as an acceptance, as the
    metrics read it), else NO_REACTION."""
    out: list[str] = []
    current: str | None = None
    for utterance in dialogue.utterances:
        if recommends(utterance):
            if current is not None:
                out.append(current)
            current = NO_REACTION
        elif current is not None and utterance.role is Role.USER:
            intents = {a.intent for a in utterance.acts}
            if Intent.ACCEPT.value in intents:
                current = ACCEPTED
            elif Intent.REJECT.value in intents:
                current = REJECTED
    if current is not None:
        out.append(current)
    return out


def side_of(dialogues: Iterable[Dialogue], key: str = "") -> UserSide:
    side = UserSide()
    for dialogue in dialogues:
        side.add(dialogue, key)
    return side
