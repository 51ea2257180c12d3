"""`--retry-errors`: which failed dialogues a resumed run holds again, and the audit file they leave.

A dialogue that ended in `crs_error`, `infrastructure_error` or `timeout` did not test the CRS (a
server that crashed and was restarted, an LLM endpoint outage). `crsim run --resume --retry-errors`
moves such records from `dialogues.jsonl` to the audit file `retried.jsonl` (`move_to_audit`), so the
batch sees them missing and holds them again with their task seeds; the manifest counts the replaced
records (`count_retries`). `errored_records` tells a plain `--resume` how many there are.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from crsim.core.errors import ConfigError
from crsim.model.run_folder.files import RunPaths, tmp_path
from crsim.model.run_folder.manifest import read_manifest, write_json_atomic

__all__ = ["RETRY_KINDS", "count_retries", "errored_records", "move_to_audit", "retry_reasons"]

#: `--retry-errors` kinds -> the termination reason each holds again.
RETRY_KINDS = {"crs": "crs_error", "infrastructure": "infrastructure_error", "timeout": "timeout"}


def retry_reasons(kinds: str | Iterable[str] | None) -> frozenset[str]:
    """The termination reasons `--retry-errors KINDS` holds again: a comma-separated list or names of
    `RETRY_KINDS` (or their reasons, `crs_error`...); 'all', '' or None for all three."""
    if kinds is None:
        return frozenset(RETRY_KINDS.values())
    names = [k.strip() for k in (kinds.split(",") if isinstance(kinds, str) else kinds) if k.strip()]
    if not names or names == ["all"]:
        return frozenset(RETRY_KINDS.values())
    reasons = set()
    for name in names:
        reason = RETRY_KINDS.get(name, name if name in RETRY_KINDS.values() else None)
        if reason is None:
            raise ConfigError(
                f"--retry-kinds: unknown kind {name!r}; expected a comma-separated list of "
                f"{', '.join(RETRY_KINDS)} (default: all three)"
            )
        reasons.add(reason)
    return frozenset(reasons)


def move_to_audit(path: Path, audit: Path, reasons: frozenset[str]) -> set[str]:
    """Move the records of `path` that ended with one of `reasons` to the end of `audit`; returns the
    ids of the dialogues moved.

    The audit file is appended to and synced first (a record already there, byte for byte, is not
    written twice), then `path` is rewritten without the moved records through a temporary file: a
    process killed at any point leaves each record in `path`, in `audit`, or in both until the next
    retry finishes the move, never in neither.
    """
    if not path.exists():
        return set()
    keep: list[bytes] = []
    move: list[bytes] = []
    with open(path, "rb") as handle:
        for line in handle:
            if line.strip():
                (move if _reason_of(line) in reasons else keep).append(line)
    if not move:
        return set()
    present = set(audit.read_bytes().splitlines(keepends=True)) if audit.exists() else set()
    with open(audit, "ab") as handle:
        for line in move:
            if line not in present:
                handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())
    tmp = tmp_path(path)
    with open(tmp, "wb") as handle:
        handle.writelines(keep)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return {str(json.loads(line)["id"]) for line in move}


def _reason_of(line: bytes) -> str | None:
    termination = json.loads(line).get("termination") or {}
    return termination.get("reason") if isinstance(termination, dict) else None


def count_retries(run_dir: Path) -> int:
    """Record in the manifest how many dialogues were held again (`retried_dialogues`: the records
    in the audit file); returns the count."""
    audit = RunPaths(run_dir).retried
    count = 0
    if audit.exists():
        with open(audit, "rb") as handle:
            count = sum(1 for line in handle if line.strip())
    manifest = read_manifest(run_dir)
    if count and manifest.get("retried_dialogues") != count:
        write_json_atomic(RunPaths(run_dir).manifest, {**manifest, "retried_dialogues": count})
    return count


def errored_records(run_dir: Path, reasons: frozenset[str] = frozenset(RETRY_KINDS.values())) -> Counter[str]:
    """Records of the run folder by failure reason, for the reasons given (what a retry would hold)."""
    path = RunPaths(run_dir).dialogues
    found: Counter[str] = Counter()
    if not path.exists():
        return found
    with open(path, "rb") as handle:
        for line in handle:
            if line.strip() and line.endswith(b"\n"):
                reason = _reason_of(line)
                if reason in reasons:
                    found[reason] += 1
    return found
