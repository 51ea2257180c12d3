"""Deprecated location of `crsim.model.run_folder.summary` (kept as an alias)."""

from __future__ import annotations

from crsim.model.run_folder.summary import (
    SUMMARY_FORMAT_VERSION,
    FileFingerprint,
    SummaryFile,
    evaluation_sources,
    fingerprint,
    read_summary_file,
    stale_reason,
    write_summary_file,
)

__all__ = [
    "SUMMARY_FORMAT_VERSION",
    "FileFingerprint",
    "SummaryFile",
    "evaluation_sources",
    "fingerprint",
    "read_summary_file",
    "stale_reason",
    "write_summary_file",
]
