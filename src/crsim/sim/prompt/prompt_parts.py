"""The pieces of a prompt-based user's prompt: the persona, the part of the history that fits,
few-shot example dialogues, the stop token, and the template's two parts rendered as messages."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from crsim.core.errors import ConfigError, DataError
from crsim.llm.prompts import render
from crsim.llm.types import Message
from crsim.llm.types import system as system_message
from crsim.llm.types import user as user_message
from crsim.model import annotations as keys
from crsim.model.io import iter_dialogues
from crsim.model.user import SimulatedUser
from crsim.sim.shared.conversation import Entry, transcript

PARTS = ("system", "conversation")


def persona_text(user: SimulatedUser, fallback: str | None) -> str | None:
    """The user's own persona (persona `DESCRIPTION`) if it has one, else the configured one."""
    described = keys.user_persona(keys.DESCRIPTION, user.id, user.profile.persona)
    if isinstance(described, str) and described.strip():
        return described.strip()
    return fallback.strip() if fallback and fallback.strip() else None


def within_chars(history: list[Entry], budget: int | None) -> tuple[list[Entry], int]:
    """The longest suffix of `history` whose transcript fits in `budget` characters (at least the
    last utterance, however long), and how many utterances were left out."""
    if budget is None:
        return list(history), 0
    sizes = [len(transcript([entry])) + 1 for entry in history]
    total, start = sum(sizes), 0
    while start < len(history) - 1 and total > budget:
        total -= sizes[start]
        start += 1
    return history[start:], start


def load_examples(path: str, count: int) -> tuple[str, ...]:
    """Transcripts of the first `count` dialogues (with text) of a JSONL file, read once per file version."""
    file = Path(path)
    if not file.is_file():
        raise DataError("file not found; expected few-shot example dialogues in JSON Lines", path=path)
    return _read_examples(str(file.resolve()), file.stat().st_mtime_ns, count)


@lru_cache(maxsize=32)
def _read_examples(path: str, _version: int, count: int) -> tuple[str, ...]:
    found: list[str] = []
    for dialogue in iter_dialogues(Path(path)):
        text = transcript([Entry(u.role, u.text) for u in dialogue.utterances if u.text.strip()])
        if text:
            found.append(text)
        if len(found) == count:
            return tuple(found)
    raise DataError(
        f"num_examples is {count} but the file holds only {len(found)} dialogue(s) with text", path=path
    )


def split_at_stop(text: str, token: str) -> tuple[str, bool]:
    """(text before the stop token, whether it occurs); the token is matched ignoring case."""
    at = text.lower().find(token.lower())
    if at < 0:
        return text, False
    return text[:at].strip(), True


def prompt_messages(template: jinja2.Template, name: str, variables: dict[str, Any]) -> list[Message]:
    """Render the template's two parts into a system and a user message; neither may be empty."""
    texts = [render(template, part=part, **variables) for part in PARTS]
    for part, text in zip(PARTS, texts, strict=True):
        if not text:
            raise ConfigError(
                f"prompt template {name!r} renders nothing for part {part!r}; "
                f"a template must write text for each of {PARTS}"
            )
    return [system_message(texts[0]), user_message(texts[1])]
