"""Cleaning an LLM user's answer down to the user's own words: the one cleaner of every LLM simulator.

A model asked for "the user's next message" often wraps it: a speaker label ("User:", "**The user's
next message is:**"), the recommender's part after it, quotes; an instruction-tuned model adds
assistant framing ("Sure, here's my next message:", "(This keeps it short.)"). `clean_utterance`
always removes

- a leading user label (`User:`, `You:`, `Me:`, `Seeker:`, `Message:`, `Your reply:`, "The user's next
  message is:", with or without markdown emphasis),
- everything from a line where another speaker starts (`Recommender:`, `Assistant:`, `System:`, ...) or
  the user speaks a second time,
- quotes wrapping the whole message (straight or curly, double, single or backticks; not when the
  same kind of quote also occurs inside, as in `"Heat" or "Ronin"`, apostrophes within words aside).

Two differences between the simulators are on purpose and are arguments:

- `first_line=True` keeps only the first non-empty line: `abus` with `nlg: llm` asks for one line
  worded from given acts, so anything after it is not part of the utterance (`llm_single`, `llm_dual`,
  `pepper` and `recusersim` keep a message over several lines).
- `meta=True` also removes assistant framing: lines that repeat a task prompt ("Rewrite it ...", "Here
  is the revised version:"), a preamble, a trailing note and quotes around the message, before and
  again after the labels; `Cleaned.removed` names what went (`preamble`, `note`, `quotes`). `recusersim`
  uses it: its task prompts follow the conversation and invite exactly that framing.

An answer with nothing left is `""`; whether that is an error is the caller's decision.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_USER_LABEL = re.compile(
    r"^\s*[*_]*\s*(?:"
    r"(?:the\s+)?(?:user|seeker|you|me)(?:'s(?:\s+(?:next|first|last))?\s+(?:message|reply))?(?:\s+is)?"
    r"|(?:your\s+)?(?:message|reply|answer)"
    r")\s*[*_]*\s*:\s*[*_]*\s*",
    re.IGNORECASE,
)
_OTHER_SPEAKER = re.compile(
    r"^\s*[*_]*\s*(?:recommender|crs|assistant|system|bot|agent)\s*[*_]*\s*:", re.IGNORECASE
)
#: Opening quote -> the quotes of its kind (a closing one must be among them).
_QUOTE_KINDS = {'"': '"“”', "“": '"“”', "'": "'‘’", "‘": "'‘’", "`": "`"}
_APOSTROPHE = re.compile(r"(?<=\w)['’](?=\w)")

#: Lines that repeat the task part of a prompt, or announce a rewrite, instead of being the message.
_ECHO_LINE = re.compile(
    r"^\s*(?:(?:rewrite it|your draft message|in your next message|write only)\b.*"
    r"|here(?: is|'s) (?:the |your |my )?(?:revised |rewritten |new |next )?"
    r"(?:version|message|reply)\b[^\n]*:)\s*$",
    re.IGNORECASE | re.MULTILINE,
)
_OPENER = r"(?:(?:sure|certainly|of course|okay|ok|absolutely|alright|all right|great)\b[,!.]*\s*)?"
_NOUN = r"(?:message|reply|response|version|draft|rewrite|answer|text)"
_KIND = (
    r"(?:(?:next|new|revised|rewritten|possible|short|shorter|longer|final|updated|first|"
    r"casual|formal|informal|friendly|polite)\s+)*" + _NOUN
)
#: "Sure, here's my next message:", "Here is a possible reply to the recommender:", "My reply:".
_PREAMBLE = re.compile(
    rf"^\s*{_OPENER}(?:(?:here(?:'s| is)|this is|below is)\s+(?:my|the|your|a|an)\s+"
    rf"(?:[\w-]+\s+){{0,3}}{_NOUN}[^\n:]{{0,60}}"
    rf"|(?:(?:my|the user's|your)\s+)?{_KIND}(?:\s+(?:to|for)\s+(?:the\s+)?recommender)?)\s*:\s*",
    re.IGNORECASE,
)
#: A bare assistant opener on its own line ("Sure!", "Certainly.") before the message.
_BARE_OPENER = re.compile(r"^\s*(?:sure|certainly|of course|absolutely)\s*[!.]\s*\n", re.IGNORECASE)
#: Trailing notes about the message rather than in it.
_NOTE = re.compile(
    r"\n\s*[(\[]?\s*(?:note\b|this (?:message|reply|response|version|rewrite|draft)\b"
    r"|i (?:kept|made|have kept|rewrote|wrote)\b|\(?\d+ words\)?\s*$|word count\b).*\Z",
    re.IGNORECASE | re.DOTALL,
)
_WORD_COUNT = re.compile(r"\s*[(\[]\s*\d+\s+words?\s*[)\]]\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Cleaned:
    """The user's words, and (with `meta=True`) the kinds of assistant framing removed from them."""

    text: str
    removed: tuple[str, ...] = ()


def clean_utterance(raw: str, *, first_line: bool = False, meta: bool = False) -> Cleaned:
    """The user's words in a model answer (module docstring: what goes always, with `first_line`, `meta`)."""
    text = raw
    removed: list[str] = []
    if meta:
        text, removed = _strip_meta(_ECHO_LINE.sub("", text))
    lines = _own_lines(text)
    if first_line:
        text = next((kept for line in lines if (kept := _unwrap_quotes(line.strip()))), "")
    else:
        text = _unwrap_quotes("\n".join(lines).strip())
    if meta:
        text, again = _strip_meta(text)
        removed = list(dict.fromkeys([*removed, *again]))
    return Cleaned(text, tuple(removed))


def _own_lines(raw: str) -> list[str]:
    """The lines up to another speaker's (or a second user turn), a leading user label removed."""
    kept: list[str] = []
    for line in raw.strip().splitlines():
        if _OTHER_SPEAKER.match(line):
            break
        label = _USER_LABEL.match(line)
        if label:
            if any(k.strip() for k in kept):
                break
            line = line[label.end() :]
        kept.append(line)
    return kept


def _unwrap_quotes(text: str) -> str:
    """`text` without quotes around all of it; kept as it is when a quote of that kind also occurs
    inside (two quoted titles are not one quoted message)."""
    if len(text) < 2 or text[-1] not in _QUOTE_KINDS.get(text[0], ""):
        return text
    inner = text[1:-1]
    if any(q in _APOSTROPHE.sub("", inner) for q in _QUOTE_KINDS[text[0]]):
        return text
    return inner.strip()


def _strip_meta(raw: str) -> tuple[str, list[str]]:
    """The message without assistant framing, and what was removed (`preamble`, `note`, `quotes`)."""
    text = raw.strip()
    removed: list[str] = []
    for pattern in (_BARE_OPENER, _PREAMBLE):
        stripped = pattern.sub("", text, count=1).strip()
        if stripped != text and stripped:
            text = stripped
            if "preamble" not in removed:
                removed.append("preamble")
    noted = _WORD_COUNT.sub("", _NOTE.sub("", text)).strip()
    if noted != text and noted:
        text = noted
        removed.append("note")
    unquoted = _unwrap_quotes(text)
    if unquoted != text:
        text = unquoted
        removed.append("quotes")
    return text, removed
