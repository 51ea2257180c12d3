"""How a judge sees a dialogue: `USER:` / `CRS:` lines, the CRS replies of each turn, the user's
general preferences, and length limits that drop whole utterances, never parts of one.

A CRS line that recommends (item ids in `recommended_items`, or a `recommend` act) is marked
`CRS (recommends N items):`; the titles are in the utterance text itself, so nothing is looked up.

`dialogue_facts` states what the record says, for a judge that would otherwise guess it from the
text: which items the CRS recommended at which turn (or that it recommended none), and in how many
of its messages it asked a question.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from crsim.eval.metrics.structure import recommends
from crsim.model import annotations as keys
from crsim.model.acts import Intent
from crsim.model.dialogue import Dialogue, Role, Utterance

USER_LABEL, CRS_LABEL = "USER", "CRS"


def line(utterance: Utterance) -> str:
    """One utterance as a transcript line, whitespace collapsed."""
    text = " ".join(utterance.text.split())
    if utterance.role is Role.USER:
        return f"{USER_LABEL}: {text}"
    if recommends(utterance):
        count = len(dict.fromkeys(utterance.recommended_items))
        marker = f" (recommends {count} item{'s' if count != 1 else ''})" if count else " (recommends)"
        return f"{CRS_LABEL}{marker}: {text}"
    return f"{CRS_LABEL}: {text}"


def lines(utterances: list[Utterance]) -> list[str]:
    """Transcript lines of the utterances that have text."""
    return [line(u) for u in utterances if u.text.strip()]


def fit(shown: list[str], max_chars: int, *, keep: str = "ends") -> str:
    """The lines joined, within `max_chars` where possible, by leaving out whole lines.

    `keep="ends"` keeps the opening and the end of a conversation and leaves out its middle (a
    judge of a whole dialogue needs both how it started and how it ended); `keep="last"` keeps the
    most recent lines (the context of one turn). A note says how many utterances were left out.
    At least one line is always kept, even if it alone is longer than the limit.
    """
    text = "\n".join(shown)
    if len(text) <= max_chars or len(shown) <= 1:
        return text
    if keep == "last":
        kept: list[str] = []
        size = 0
        for entry in reversed(shown):
            if kept and size + len(entry) + 1 > max_chars:
                break
            kept.insert(0, entry)
            size += len(entry) + 1
        left_out = len(shown) - len(kept)
        return "\n".join([f"[... {left_out} earlier utterance(s) left out ...]", *kept])
    head: list[str] = []
    tail: list[str] = []
    size = 0
    low, high = 0, len(shown) - 1
    take_head = True
    while low <= high:
        entry = shown[low] if take_head else shown[high]
        if (head or tail) and size + len(entry) + 1 > max_chars:
            break
        if take_head:
            head.append(entry)
            low += 1
        else:
            tail.insert(0, entry)
            high -= 1
        size += len(entry) + 1
        take_head = not take_head
    left_out = len(shown) - len(head) - len(tail)
    if left_out == 0:
        return "\n".join([*head, *tail])
    return "\n".join([*head, f"[... {left_out} utterance(s) left out ...]", *tail])


@dataclass(frozen=True)
class CRSTurn:
    """Turn t as a turn-level judge sees it: the conversation before the CRS replied (ending with
    the t-th user utterance) and the CRS utterance(s) replying to it."""

    turn: int
    context: list[Utterance]
    reply: list[Utterance]

    def reply_text(self) -> str:
        return "\n".join(line(u) for u in self.reply)


def crs_turns(dialogue: Dialogue) -> list[CRSTurn]:
    """The turns whose user utterance got a CRS reply with text, in order.

    Turn t is the t-th user utterance and the CRS utterances after it (up to the next user
    utterance). A CRS opening before the first user utterance answers no request, so it is shown
    as context but not judged on its own; a last user utterance without a reply gives no turn.
    """
    turns: list[CRSTurn] = []
    turn = 0
    start = 0
    for index, utterance in enumerate(dialogue.utterances):
        if utterance.role is Role.USER:
            turn += 1
            start = index + 1
            continue
        if turn == 0 or not utterance.text.strip():
            continue
        if turns and turns[-1].turn == turn:
            last = turns[-1]
            turns[-1] = CRSTurn(turn, last.context, [*last.reply, utterance])
        else:
            turns.append(CRSTurn(turn, dialogue.utterances[:start], [utterance]))
    return turns


def general_preferences(dialogue: Dialogue) -> str | None:
    """The user's general preferences as text, or None when the record holds none.

    `user_profile.persona["general_preferences"]` is used when present (a text, a list of texts,
    or any other JSON value shown as JSON); otherwise a short description is written from the
    profile's liked and disliked slot values.
    """
    profile = dialogue.user_profile
    if profile is None:
        return None
    given = keys.persona(keys.GENERAL_PREFERENCES, dialogue)
    if isinstance(given, str) and given.strip():
        return given.strip()
    if isinstance(given, list) and given and all(isinstance(g, str) for g in given):
        return "\n".join(f"- {g.strip()}" for g in given if g.strip()) or None
    if given not in (None, "", [], {}):
        return json.dumps(given, ensure_ascii=False, sort_keys=True)
    likes = [(slot, prefs.likes) for slot, prefs in profile.preferences.items() if prefs.likes]
    dislikes = [(slot, prefs.dislikes) for slot, prefs in profile.preferences.items() if prefs.dislikes]
    parts = []
    if likes:
        parts.append("Likes: " + "; ".join(f"{slot.replace('_', ' ')}: {', '.join(v)}" for slot, v in likes))
    if dislikes:
        parts.append(
            "Dislikes: " + "; ".join(f"{slot.replace('_', ' ')}: {', '.join(v)}" for slot, v in dislikes)
        )
    return "\n".join(parts) or None


#: Where a judge reads the number of an item's title (None: not known, the id is not shown).
TitleOf = Callable[[str], str | None]


@dataclass(frozen=True)
class DialogueFacts:
    """What the record says the CRS did: per recommending reply its turn and the items' names (a
    title, or "an item" when neither the acts nor the catalogue give one); its questions."""

    recommended: tuple[tuple[int, tuple[str, ...]], ...]
    replies: int
    questions: int

    @property
    def anything_recommended(self) -> bool:
        return bool(self.recommended)

    def text(self) -> str:
        """The facts as lines for a prompt."""
        if self.recommended:
            turns = "; ".join(f"turn {turn}: {', '.join(names)}" for turn, names in self.recommended)
            count = sum(len(names) for _, names in self.recommended)
            said = f"- The CRS recommended {count} item{'s' if count != 1 else ''}: {turns}."
        else:
            said = "- No item was recommended: the CRS recommended nothing in this conversation."
        asked = f"- The CRS asked a question in {self.questions} of its {self.replies} messages."
        return f"{said}\n{asked}"


def dialogue_facts(utterances: list[Utterance], title_of: TitleOf | None = None) -> DialogueFacts:
    """The facts of `utterances` (a whole dialogue, or a turn's context and reply). Turns count user
    utterances as `crs_turns` does (a CRS opening is turn 0). A message asks a question when its text
    has a question mark or it carries an `elicit` act."""
    recommended: list[tuple[int, tuple[str, ...]]] = []
    turn = replies = questions = 0
    for utterance in utterances:
        if utterance.role is Role.USER:
            turn += 1
            continue
        if not utterance.text.strip():
            continue
        replies += 1
        if "?" in utterance.text or any(a.intent == Intent.ELICIT for a in utterance.acts):
            questions += 1
        if recommends(utterance):
            recommended.append((turn, _names(utterance, title_of)))
    return DialogueFacts(tuple(recommended), replies, questions)


def _names(utterance: Utterance, title_of: TitleOf | None) -> tuple[str, ...]:
    """The recommended items' titles: from the catalogue, else the `recommend` acts' title slots."""
    ids = list(dict.fromkeys(utterance.recommended_items))
    titles = [title_of(i) if title_of is not None else None for i in ids]
    if ids and all(t is not None for t in titles):
        return tuple(t for t in titles if t is not None)
    slots = [
        value
        for act in utterance.acts
        if act.intent == Intent.RECOMMEND
        for slot, value in act.slots
        if slot == "title" and value
    ]
    if slots:
        return tuple(dict.fromkeys(slots))
    return tuple("an item (title not recorded)" for _ in ids) or ("an item (title not recorded)",)
