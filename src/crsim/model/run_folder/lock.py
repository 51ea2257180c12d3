"""One writer per run folder: an exclusive OS-level lock, and who holds it.

Every command that writes a run folder (`crsim run`, `crsim evaluate`, `crsim report` when it evaluates,
`crsim cache clear`, `crsim data annotate` into a run folder) holds `run_folder_lock` while it writes.
A second process that wants the folder fails at once with a `RunFolderBusy` naming the holder (its
pid, host and command, read from a small JSON file the holder writes beside the lock) instead of
interleaving its records with the first one's.

The lock is `filelock`'s `flock(2)` lock on `.crsim-lock`: the kernel releases it when the holding
process ends in any way, SIGKILL included, so a killed run never blocks the next one (the lock file
itself stays, empty; only the kernel lock matters). Within one process the lock is exclusive too:
another thread or asyncio task that asks for a folder this process holds gets the same
`RunFolderBusy` (filelock alone would let two threads of one notebook interleave their records). A
command takes the lock once and hands the `HeldLock` it got to the steps that follow (`crsim run`
holds it across the batch and the evaluation through `held=`). On a filesystem without `flock`
(some network filesystems) `filelock` falls back to a lock file that a killed process leaves
behind; delete `.crsim-lock` by hand there.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from crsim.core.errors import CrsimError
from crsim.model.run_folder.files import LOCK_FILE, LOCK_INFO, MANIFEST

__all__ = [
    "LOCK_FILE",
    "LOCK_INFO",
    "HeldLock",
    "RunFolderBusy",
    "ensure_free",
    "lock_if_run_folder",
    "read_holder",
    "run_folder_lock",
]

#: Folder -> the lock this process holds on it. Guarded by `_GUARD`.
_HELD: dict[Path, FileLock] = {}
_GUARD = threading.Lock()


class RunFolderBusy(CrsimError):
    """Another writer (another process, or another thread or task of this one) holds the lock."""


@dataclass(frozen=True, eq=False)
class HeldLock:
    """Proof that the caller holds a folder's lock: pass it on (`held=`) to the steps that write
    the same folder, which then do not ask for the lock again."""

    folder: Path
    lock: FileLock

    @property
    def active(self) -> bool:
        """Whether this holding is still in force (not released, not replaced by a later one)."""
        with _GUARD:
            return _HELD.get(self.folder) is self.lock


def current_command() -> str:
    """This process's command line as the user typed it (`crsim ...`), for the lock-info file."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path("python")
    crsim = script.name == "crsim" or (script.name == "__main__.py" and script.parent.name == "crsim")
    program = "crsim" if crsim else script.name
    return shlex.join([program, *sys.argv[1:]])[:500]


@contextmanager
def run_folder_lock(
    folder: Path, command: str | None = None, *, held: HeldLock | None = None
) -> Iterator[HeldLock]:
    """Hold the exclusive lock of `folder` (created if missing) for the block; yields the `HeldLock`.

    Raises `RunFolderBusy` at once when anyone else holds it: another process, or another thread or
    task of this one. `held`, the `HeldLock` of an enclosing block of the same caller on the same
    folder, is yielded as it is (the lock is not asked for again). `command` is what the lock-info
    file names as the holder (default: this process's command line).
    """
    if held is not None and held.folder == _key(folder) and held.active:
        yield held
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise CrsimError(
            f"{folder}: a file is in the way; expected a run folder (a new path, or a folder a run wrote)"
        ) from None
    key = _key(folder)
    lock = _enter(key, command or current_command(), folder)
    try:
        yield HeldLock(key, lock)
    finally:
        _leave(key)


def _key(folder: Path) -> Path:
    return folder.resolve()


def ensure_free(folder: Path, command: str | None = None) -> None:
    """Raise `RunFolderBusy` now if an existing `folder` is held by another writer (the lock is taken
    and let go at once): a command that checks servers first fails on a busy folder before it waits
    on them. A folder that does not exist yet is not created."""
    if folder.is_dir():
        with run_folder_lock(folder, command):
            pass


@contextmanager
def lock_if_run_folder(folder: Path, command: str | None = None) -> Iterator[None]:
    """`run_folder_lock` when `folder` is a run folder (it holds a manifest), else nothing: for
    commands that write a file wherever they are told, e.g. `crsim data annotate acts -o RUN/x.jsonl`."""
    if (folder / MANIFEST).is_file():
        with run_folder_lock(folder, command):
            yield
    else:
        yield


def _enter(key: Path, command: str, shown: Path) -> FileLock:
    with _GUARD:
        if key in _HELD:  # this process holds it: another thread or task is writing the folder
            raise RunFolderBusy(_busy_message(key, shown))
        lock = FileLock(str(key / LOCK_FILE), timeout=0, thread_local=False, is_singleton=False)
        try:
            lock.acquire()
        except Timeout:
            raise RunFolderBusy(_busy_message(key, shown)) from None
        # Written under the guard, so a competitor of this process never finds the lock without it.
        try:
            _write_info(key, command)
        except BaseException:
            lock.release()
            raise
        _HELD[key] = lock
        return lock


def _leave(key: Path) -> None:
    with _GUARD:
        lock = _HELD.pop(key)
        (key / LOCK_INFO).unlink(missing_ok=True)
        lock.release()


def _write_info(folder: Path, command: str) -> None:
    """Who holds the lock, written atomically so a competitor never reads half of it."""
    info = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": command,
        "since": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    temp = folder / f"{LOCK_INFO}.{os.getpid()}.tmp"
    temp.write_text(json.dumps(info) + "\n", encoding="utf-8")
    os.replace(temp, folder / LOCK_INFO)


def read_holder(folder: Path) -> dict[str, Any] | None:
    """The lock-info file's contents, or None when it is missing or unreadable."""
    try:
        data = json.loads((folder / LOCK_INFO).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _busy_message(folder: Path, shown: Path) -> str:
    holder = read_holder(folder)
    if holder is None:
        who = "another crsim process (it has not said which yet)"
    else:
        who = (
            f"`{holder.get('command', '?')}` (pid {holder.get('pid', '?')} on {holder.get('host', '?')}, "
            f"since {holder.get('since', '?')}"
            + (", another thread or task of this process" if holder.get("pid") == os.getpid() else "")
            + ")"
        )
    return (
        f"{shown}: this run folder is in use by {who}; wait for it to finish or stop it, "
        "then run the command again"
    )
