"""Deprecated location of the run-folder lock: use `crsim.model.run_folder.lock` (kept as an alias)."""

from __future__ import annotations

from crsim.model.run_folder.files import LOCK_FILE, LOCK_INFO, MANIFEST
from crsim.model.run_folder.lock import (
    RunFolderBusy,
    current_command,
    lock_if_run_folder,
    read_holder,
    run_folder_lock,
)

__all__ = [
    "LOCK_FILE",
    "LOCK_INFO",
    "MANIFEST",
    "RunFolderBusy",
    "current_command",
    "lock_if_run_folder",
    "read_holder",
    "run_folder_lock",
]
