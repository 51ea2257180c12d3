"""The run folder: its file names, typed manifest, readers, writers and lock, in one place.

A run folder is what `crsim run` writes and every later command reads (docs/data-format.md):

    manifest.json      the typed `Manifest` (config, components, versions); written first
    dialogues.jsonl    one `Dialogue` per line, appended and flushed (`DialogueWriter`)
    scores.jsonl       one `ScoreRecord` per line (`scores_writer`, `read_scores`)
    summary.json       the `GroupSummary`s and the files they were built from (`summary.py`)
    retried.jsonl      the records `--retry-errors` replaced (an audit trail; `retried_dialogues` counts them)
    llm_cache.sqlite   the LLM response cache of the run and its evaluations
    report.html        `crsim report`; export/: `crsim export`
    fidelity_<corpus>.json   `crsim validate fidelity --against <corpus>`
    .crsim-lock        the one-writer lock (`run_folder_lock`) and .crsim-lock.json, its holder

The runner writes through this package; evaluation, reports, meta-evaluation, studies and the CLI
read through it (`open_run` -> `RunFolder`). It lives in the model layer, beside the records it
holds, so that no layer has to import another's internals to find a file.
"""

from typing import TYPE_CHECKING

from crsim.core.lazy import exports

if TYPE_CHECKING:
    from crsim.model.run_folder.dialogues import DialogueWriter, canonical_order, repair_tail, writable
    from crsim.model.run_folder.files import (
        DIALOGUES,
        EXPORT_DIR,
        LLM_CACHE,
        LOCK_FILE,
        LOCK_INFO,
        MANIFEST,
        REPORT,
        RETRIED,
        SCORES,
        SUMMARY,
        RunPaths,
        part_path,
    )
    from crsim.model.run_folder.folder import RunFolder, count_lines, dialogues_file, is_run_folder, open_run
    from crsim.model.run_folder.lock import HeldLock, RunFolderBusy, lock_if_run_folder, run_folder_lock
    from crsim.model.run_folder.manifest import (
        Manifest,
        build_manifest,
        load_manifest,
        read_manifest,
        write_json_atomic,
    )
    from crsim.model.run_folder.scores import (
        Aggregate,
        GroupSummary,
        ScoreRecord,
        iter_scores,
        read_scores,
        scores_writer,
    )
    from crsim.model.run_folder.summary import (
        SummaryFile,
        read_summary_file,
        stale_reason,
        write_summary_file,
    )


#: Public name -> the submodule defining it; imported on first use, so that the command line's
#: help texts can name the files (`files.py`) without importing the models, the lock and the writers.
_WHERE = {
    "Aggregate": "scores",
    "DIALOGUES": "files",
    "DialogueWriter": "dialogues",
    "EXPORT_DIR": "files",
    "GroupSummary": "scores",
    "HeldLock": "lock",
    "LLM_CACHE": "files",
    "LOCK_FILE": "files",
    "LOCK_INFO": "files",
    "MANIFEST": "files",
    "Manifest": "manifest",
    "REPORT": "files",
    "RETRIED": "files",
    "RunFolder": "folder",
    "RunPaths": "files",
    "RunFolderBusy": "lock",
    "SCORES": "files",
    "SUMMARY": "files",
    "ScoreRecord": "scores",
    "SummaryFile": "summary",
    "build_manifest": "manifest",
    "canonical_order": "dialogues",
    "count_lines": "folder",
    "dialogues_file": "folder",
    "is_run_folder": "folder",
    "iter_scores": "scores",
    "load_manifest": "manifest",
    "lock_if_run_folder": "lock",
    "open_run": "folder",
    "part_path": "files",
    "read_manifest": "manifest",
    "read_scores": "scores",
    "read_summary_file": "summary",
    "repair_tail": "dialogues",
    "run_folder_lock": "lock",
    "scores_writer": "scores",
    "stale_reason": "summary",
    "writable": "dialogues",
    "write_json_atomic": "manifest",
    "write_summary_file": "summary",
}


__getattr__ = exports(__name__, _WHERE)


__all__ = [
    "DIALOGUES",
    "EXPORT_DIR",
    "LLM_CACHE",
    "LOCK_FILE",
    "LOCK_INFO",
    "MANIFEST",
    "REPORT",
    "RETRIED",
    "SCORES",
    "SUMMARY",
    "Aggregate",
    "DialogueWriter",
    "GroupSummary",
    "HeldLock",
    "Manifest",
    "RunFolder",
    "RunFolderBusy",
    "RunPaths",
    "ScoreRecord",
    "SummaryFile",
    "build_manifest",
    "canonical_order",
    "count_lines",
    "dialogues_file",
    "is_run_folder",
    "iter_scores",
    "load_manifest",
    "lock_if_run_folder",
    "open_run",
    "part_path",
    "read_manifest",
    "read_scores",
    "read_summary_file",
    "repair_tail",
    "run_folder_lock",
    "scores_writer",
    "stale_reason",
    "writable",
    "write_json_atomic",
    "write_summary_file",
]
