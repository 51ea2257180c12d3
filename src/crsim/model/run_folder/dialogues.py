"""`dialogues.jsonl`: the writer that appends and flushes each record, tail repair and final order.

The dialogue records themselves are `crsim.model.dialogue.Dialogue`; they are read with
`crsim.model.io.iter_dialogues` (re-exported here). A record that cannot be serialised never ends a
run: it is replaced by an `infrastructure_error` record that says why (`writable`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from crsim.core.secrets import redact_json_text
from crsim.model.dialogue import Dialogue, ErrorInfo, Termination, TerminationReason
from crsim.model.io import iter_dialogues
from crsim.model.run_folder.files import tmp_path
from crsim.model.text import clean_text

__all__ = ["DialogueWriter", "canonical_order", "iter_dialogues", "repair_tail", "unwritable", "writable"]


def repair_tail(path: Path) -> int:
    """Cut a partial last line left by a killed writer; returns how many bytes were dropped."""
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb+") as handle:
        handle.seek(max(0, size - 1))
        if handle.read(1) == b"\n":
            return 0
        handle.seek(0)
        data = handle.read()
        keep = data.rfind(b"\n") + 1
        handle.truncate(keep)
    return size - keep


def writable(dialogue: Dialogue) -> tuple[Dialogue, str]:
    """The record to keep for `dialogue` and its JSON line.

    A dialogue that cannot be serialised (text a participant produced that no boundary cleaned, an
    annotation value that is not JSON) must not end the run: it is kept as an
    `infrastructure_error` dialogue (source 'loop') that says why, without its utterances.
    """
    try:
        return dialogue, dialogue.model_dump_json()
    except Exception as exc:  # noqa: BLE001 - one record never sinks a run
        replacement = unwritable(dialogue, exc)
        return replacement, replacement.model_dump_json()


def unwritable(dialogue: Dialogue, exc: Exception) -> Dialogue:
    """The error record standing in for a dialogue whose record could not be serialised."""
    ended = dialogue.termination.reason.value if dialogue.termination else "unknown"
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    error = ErrorInfo(
        source="loop",
        type=type(exc).__name__,
        message=f"the record could not be written ({reason}); it had ended with {ended!r} after "
        f"{len(dialogue.utterances)} utterances, which are not kept",
    )
    termination = Termination(reason=TerminationReason.INFRASTRUCTURE_ERROR, error=error)
    full = dialogue.model_copy(update={"utterances": [], "termination": termination})
    try:
        full.model_dump_json()  # the need, profile or metadata may be what cannot be written
        return full
    except Exception:  # noqa: BLE001
        return Dialogue(
            id=_plain(dialogue.id),
            user_id=_plain(dialogue.user_id),
            crs_id=_plain(dialogue.crs_id),
            simulator_id=_plain(dialogue.simulator_id),
            termination=termination,
            timing=dialogue.timing,
        )


def _plain(text: str | None) -> str | None:
    return None if text is None else clean_text(text)[0]


class DialogueWriter:
    """Appends one dialogue per line and flushes, so a killed run keeps every finished dialogue."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def write(self, dialogue: Dialogue) -> Dialogue:
        """Append `dialogue` (or, if it cannot be serialised, its error record: see `writable`);
        returns the record written. A failing disk (OSError) ends the run: nothing more can be kept."""
        kept, line = writable(dialogue)
        try:
            self._handle.write(redact_json_text(line) + "\n")  # no secret on disk
            self._handle.flush()
        except OSError as exc:  # the handle's error names no file: say which
            raise _naming(exc, self.path) from None
        return kept

    def close(self) -> None:
        try:
            self._handle.close()
        except OSError as exc:
            raise _naming(exc, self.path) from None


def _naming(exc: OSError, path: Path) -> OSError:
    """`exc` with `path` as its file name when it names none (a write or flush on an open handle)."""
    return exc if exc.filename is not None else type(exc)(exc.errno, exc.strerror, str(path))


def canonical_order(path: Path, order: dict[str, int]) -> None:
    """Rewrite a complete file once, in task order, so equal seeds give equal files (atomic)."""
    with open(path, encoding="utf-8") as handle:
        lines = [line for line in handle if line.strip()]
    lines.sort(key=lambda line: order.get(json.loads(line)["id"], len(order)))
    tmp = tmp_path(path)
    tmp.write_text("".join(lines), encoding="utf-8")
    os.replace(tmp, path)
