"""Dialogue acts: an intent with slot-value pairs; several acts may make up one utterance.

The string form `intent(slot="value",slot)|intent2()` is the one used by UserSimCRS v2 for
LLM-based act extraction; `format_acts` and `parse_acts` convert between it and objects.
"""

from __future__ import annotations

import re
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class Intent(StrEnum):
    """The intents crsim's own components produce. Converted datasets may carry others."""

    GREETING = "greeting"
    GOODBYE = "goodbye"
    # user side
    REQUEST_RECOMMENDATION = "request_recommendation"
    DISCLOSE = "disclose"
    INQUIRE = "inquire"
    ACCEPT = "accept"
    REJECT = "reject"
    SEEN = "seen"
    # CRS side
    ELICIT = "elicit"
    RECOMMEND = "recommend"
    INFORM = "inform"
    ASK = "ask"
    # either side
    AFFIRM = "affirm"
    DENY = "deny"
    OTHER = "other"


SlotValue = tuple[str, str | None]


class DialogueAct(BaseModel):
    """One communicative function of an utterance, e.g. `elicit(genre)` or `disclose(genre="comedy")`."""

    model_config = ConfigDict(frozen=True)

    intent: str = Field(min_length=1, description="Intent label, e.g. 'disclose' or 'recommend'.")
    slots: list[SlotValue] = Field(
        default_factory=list, description="Slot-value pairs; a value of null means the slot is asked about."
    )

    def value(self, slot: str) -> str | None:
        """The first value given for `slot`, or None."""
        return next((v for s, v in self.slots if s == slot), None)

    def has_slot(self, slot: str) -> bool:
        return any(s == slot for s, _ in self.slots)

    def __str__(self) -> str:
        return format_acts([self])


#: Intent and slot names in the string form: letters, digits, `_`, `.` and `-` (e.g. `inquire.elicit`).
NAME_PATTERN = r"[\w.\-]+"
_NAME = re.compile(NAME_PATTERN)
_SPACE = re.compile(r"\s*")
_SEPARATORS = re.compile(r"[\s|]*")
#: Inside a quoted value, a run of characters that are neither a backslash nor the opening quote.
_PLAIN = {'"': re.compile(r'[^"\\]*'), "'": re.compile(r"[^'\\]*")}
#: The characters a backslash escapes; before any other character a backslash is kept as it is.
_ESCAPABLE = frozenset("\\\"'")


def is_act_name(name: str) -> bool:
    """Whether `name` can stand as an intent or slot name in the string form."""
    return _NAME.fullmatch(name) is not None


def quote_value(value: str) -> str:
    """A slot value as a double-quoted string, with backslashes and double quotes escaped."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def format_acts(acts: list[DialogueAct]) -> str:
    """Render acts as `intent(slot="value",slot)|intent()`.

    Values are double-quoted with `\\` and `"` escaped by a backslash, so `parse_acts` reads back
    exactly the acts given, whatever their values hold, as long as intents and slots are names
    (`is_act_name`).
    """

    def one(act: DialogueAct) -> str:
        parts = [slot if value is None else f"{slot}={quote_value(value)}" for slot, value in act.slots]
        return f"{act.intent}({','.join(parts)})"

    return "|".join(one(a) for a in acts)


def parse_acts(text: str) -> list[DialogueAct]:
    """Parse the string form into acts; raises ValueError naming the part it could not read.

    Accepted: `intent(slot="value",slot)|intent2()`; dotted names (`inquire.elicit`); values in
    double or single quotes, holding commas, `|` or `)`; `\\"`, `\\'` and `\\\\` escapes; whitespace
    around names, brackets, `=`, `,` and `|`; empty parts between `|`. An unescaped quote that is not
    followed by `,` or `)` is read as part of the value (`title="The "Best" Movie"`), as LLMs write it.
    """
    return _ActReader(text).acts()


class _ActReader:
    """A scanner over one act string; `pos` is the next character to read."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.act_start = 0

    def acts(self) -> list[DialogueAct]:
        acts: list[DialogueAct] = []
        while True:
            self._skip(_SEPARATORS)
            if self.pos == len(self.text):
                return acts
            acts.append(self._act())
            self._skip(_SPACE)
            if self.pos < len(self.text) and not self._take("|"):
                raise self._error("'|' before the next act")

    def _act(self) -> DialogueAct:
        self.act_start = self.pos
        intent = self._name("an intent name")
        self._skip(_SPACE)
        if not self._take("("):
            raise self._error("'(' after the intent")
        slots: list[SlotValue] = []
        self._skip(_SPACE)
        while not self._take(")"):
            slots.append(self._slot())
            self._skip(_SPACE)
            if self._take(","):
                self._skip(_SPACE)
            elif not self.text.startswith(")", self.pos):
                raise self._error("',' or ')' after a slot")
        return DialogueAct(intent=intent, slots=slots)

    def _slot(self) -> SlotValue:
        slot = self._name("a slot name or ')'")
        self._skip(_SPACE)
        if not self._take("="):
            return (slot, None)
        self._skip(_SPACE)
        return (slot, self._quoted())

    def _quoted(self) -> str:
        quote = self.text[self.pos : self.pos + 1]
        if quote not in _PLAIN:
            raise self._error("a quoted value after '='")
        self.pos += 1
        value: list[str] = []
        while True:
            plain = _PLAIN[quote].match(self.text, self.pos)
            assert plain is not None  # a starred pattern always matches
            value.append(plain.group())
            self.pos = plain.end()
            if self.pos == len(self.text):
                raise self._error(f"a closing {quote}")
            char, after = self.text[self.pos], self.text[self.pos + 1 : self.pos + 2]
            if char == "\\":
                escaped = after in _ESCAPABLE
                value.append(after if escaped else char)
                self.pos += 2 if escaped else 1
                continue
            self.pos += 1
            if self._value_ends():
                return "".join(value)
            value.append(char)

    def _value_ends(self) -> bool:
        """Whether a quote just read closes the value: what follows is `,`, `)` or nothing."""
        rest = _SPACE.match(self.text, self.pos)
        assert rest is not None
        return rest.end() == len(self.text) or self.text[rest.end()] in ",)"

    def _name(self, expected: str) -> str:
        match = _NAME.match(self.text, self.pos)
        if match is None:
            raise self._error(expected)
        self.pos = match.end()
        return match.group()

    def _take(self, char: str) -> bool:
        if self.text.startswith(char, self.pos):
            self.pos += len(char)
            return True
        return False

    def _skip(self, pattern: re.Pattern[str]) -> None:
        match = pattern.match(self.text, self.pos)
        assert match is not None
        self.pos = match.end()

    def _error(self, expected: str) -> ValueError:
        """Name the act being read (up to the next `|` after the failure) and what was expected where."""
        end = self.text.find("|", self.pos)
        part = self.text[self.act_start : end if end >= 0 else len(self.text)].strip()
        found = repr(self.text[self.pos]) if self.pos < len(self.text) else "the end"
        return ValueError(
            f"cannot read dialogue act {part[:120]!r}: expected {expected} at character {self.pos}, "
            f'found {found} (the form is intent(slot="value",slot)|intent2())'
        )
