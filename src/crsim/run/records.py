"""Deprecated location of the run-folder records: use `crsim.model.run_folder` (kept as an alias)."""

from __future__ import annotations

from crsim.model.run_folder.dialogues import (
    DialogueWriter,
    canonical_order,
    iter_dialogues,
    repair_tail,
    unwritable,
    writable,
)
from crsim.model.run_folder.files import DIALOGUES, LLM_CACHE, MANIFEST
from crsim.model.run_folder.manifest import (
    RUN_FORMAT_VERSION,
    build_manifest,
    package_versions,
    read_manifest,
    write_json_atomic,
)

__all__ = [
    "DIALOGUES",
    "LLM_CACHE",
    "MANIFEST",
    "RUN_FORMAT_VERSION",
    "DialogueWriter",
    "build_manifest",
    "canonical_order",
    "iter_dialogues",
    "package_versions",
    "read_manifest",
    "repair_tail",
    "unwritable",
    "writable",
    "write_json_atomic",
]
