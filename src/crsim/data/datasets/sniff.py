"""Which published dataset a file looks like, from its first few kilobytes: so that a converter given
another dataset's file can say so (`crsim data convert redial inspired.tsv` names INSPIRED)
instead of only asking for a file of its own format."""

from __future__ import annotations

import gzip
from pathlib import Path

__all__ = ["looks_like", "other_format_hint"]

#: Bytes read from the start of a file to recognise it.
HEAD = 8192

#: (dataset, what the file is, strings its start contains); the first whose strings all occur wins.
SIGNATURES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("redial", "ReDial dialogues", ('"movieMentions"', '"messages"')),
    ("inspired", "INSPIRED's original TSV", ("dialog_id\tutt_id\tspeaker",)),
    ("inspired", "INSPIRED's processed JSONL", ('"entity_link"', '"movie_link"')),
    ("iard", "IARD's original release", ('"dialogue_info"', '"accepted_recommendation"')),
    # UserSimCRS writes `conversation ID` as CRSArena-Dial does, but its utterances carry acts
    (
        "dialoguekit",
        "UserSimCRS's DialogueKit JSON",
        ('"conversation ID"', '"participant"', '"dialogue_acts"'),
    ),
    ("crsarena_dial", "CRSArena-Dial", ('"conversation ID"', '"agent"')),
    ("crsarena_eval", "CRSArena-Eval", ('"conv_id"', '"turn_ind"')),
    ("opendialkg", "iEvaLM's processed OpenDialKG", ('"dialog_id"', '"turn_id"', '"context"')),
    ("dialoguekit", "DialogueKit JSON", ('"conversation_id"', '"conversation"', '"participant"')),
)

#: Readers that read DialogueKit JSON files too (their datasets were published in that format).
_DIALOGUEKIT_READERS = frozenset({"dialoguekit", "iard", "moviebot"})


def _head(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            raw = handle.read(HEAD)
        if raw[:2] == b"\x1f\x8b":
            with gzip.open(path, "rb") as handle:
                raw = handle.read(HEAD)
    except (OSError, EOFError):
        return ""
    return raw.decode("utf-8", errors="replace")


def looks_like(path: str | Path) -> tuple[str, str] | None:
    """(dataset reader name, description) of the format the file's start matches, or None."""
    path = Path(path)
    if not path.is_file():
        return None
    head = _head(path)
    for name, what, needles in SIGNATURES:
        if all(needle in head for needle in needles):
            return name, what
    return None


def other_format_hint(reader_name: str | None, path: str | Path) -> str:
    """`FILE looks like X, which the 'x' reader reads` when the file is another reader's format, else ''."""
    found = looks_like(path)
    if found is None or reader_name is None:
        return ""
    name, what = found
    if name == reader_name or (name == "dialoguekit" and reader_name in _DIALOGUEKIT_READERS):
        return ""
    return f"{Path(path).name} looks like {what}, which the {name!r} reader reads"
