"""GBNF grammars (llama.cpp's constrained decoding) for the dialogue-act string form.

`acts_grammar` restricts a model to `intent(slot="value",slot)|intent2()` over one domain's
intents and slot names, so every answer a grammar-following provider returns is readable by
`crsim.model.acts.parse_acts`. Values are double-quoted and may not hold quotes, backslashes or
control characters, which keeps them free of escapes; their length is capped so a small model
cannot spend its whole token budget inside one value.
"""

from __future__ import annotations

from collections.abc import Sequence

from crsim.model.acts import is_act_name

_NAMED_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def gbnf_literal(text: str) -> str:
    """`text` as a GBNF string literal: ASCII only, with quotes, backslashes and controls escaped."""
    out: list[str] = []
    for char in text:
        code = ord(char)
        if char in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[char])
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code <= 0xFF:
            out.append(f"\\x{code:02X}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04X}")
        else:
            out.append(f"\\U{code:08X}")
    return f'"{"".join(out)}"'


def _alternatives(kind: str, names: Sequence[str]) -> str:
    """The names as one GBNF alternation, each checked to be readable back by `parse_acts`."""
    unique = list(dict.fromkeys(names))
    for name in unique:
        if not is_act_name(name):
            raise ValueError(
                f"{kind} {name!r} cannot appear in an act string: names are letters, digits, '_', '.' or '-'"
            )
    return " | ".join(gbnf_literal(name) for name in unique)


def _repeat(item: str, separator: str, most: int) -> str:
    """`item`, then up to `most - 1` more after `separator`."""
    return item if most == 1 else f"{item} ({gbnf_literal(separator)} {item}){{0,{most - 1}}}"


def acts_grammar(
    intents: Sequence[str],
    slots: Sequence[str],
    *,
    max_acts: int = 4,
    max_slots: int = 6,
    max_value_chars: int = 60,
) -> str:
    """A GBNF grammar for 1..`max_acts` acts joined by `|`, over the given intents and slot names.

    Each act has up to `max_slots` slots, each either a bare name (a slot asked about) or
    `name="value"` with a value of at most `max_value_chars` characters. With no slots, every act
    is `intent()`. Raises ValueError for an empty intent list, a name `parse_acts` could not read
    back, or a limit below 1.
    """
    if not intents:
        raise ValueError("an act grammar needs at least one intent")
    for label, limit in (
        ("max_acts", max_acts),
        ("max_slots", max_slots),
        ("max_value_chars", max_value_chars),
    ):
        if limit < 1:
            raise ValueError(f"{label} must be at least 1, got {limit}")
    rules = [
        f"root ::= {_repeat('act', '|', max_acts)}",
        f"intent ::= {_alternatives('intent', intents)}",
    ]
    if slots:
        rules += [
            'act ::= intent "(" slots? ")"',
            f"slots ::= {_repeat('slot', ',', max_slots)}",
            'slot ::= slot-name ("=" value)?',
            f"slot-name ::= {_alternatives('slot', slots)}",
            f'value ::= "\\"" value-char{{0,{max_value_chars}}} "\\""',
            'value-char ::= [^"\\\\\\x00-\\x1F\\x7F]',
        ]
    else:
        rules.append('act ::= intent "()"')
    return "\n".join(rules) + "\n"
