"""Every file name of a run folder, defined once.

A run folder (docs/data-format.md#run-folders) is what `crsim run` writes and every later command
(`evaluate`, `report`, `export`, `analyze`, `judge`, `pepper`, `data annotate`, `cache`) reads or
adds to. The names below are the only place those file names are spelled out in the source: a test
(`tests/model/test_run_folder_names.py`) fails when one appears as a literal anywhere else under `src/`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from crsim.core.atomic_files import PART_SUFFIX

#: The run's config, components and versions; written first, so it marks a folder as a run folder.
MANIFEST = "manifest.json"
#: One dialogue record per line (`crsim.model.dialogue.Dialogue`), appended and flushed as they end.
DIALOGUES = "dialogues.jsonl"
#: The audit file of `crsim run --resume --retry-errors`: each record a retry replaced in `DIALOGUES`,
#: as it was, appended in the order they were replaced (the manifest counts them: `retried_dialogues`).
RETRIED = "retried.jsonl"
#: One score record per line (`crsim.model.run_folder.scores.ScoreRecord`), written by `crsim evaluate`.
SCORES = "scores.jsonl"
#: The per CRS × simulator summaries and the files they were built from (`summary.py`).
SUMMARY = "summary.json"
#: The LLM response cache of the run and of its evaluations (`crsim.llm.cache`).
LLM_CACHE = "llm_cache.sqlite"
#: The HTML report `crsim report` writes by default.
REPORT = "report.html"
#: The folder `crsim export` writes its tables into by default.
EXPORT_DIR = "export"
#: The fidelity study of the run's simulated users against one human corpus (`fidelity_file`).
FIDELITY_PREFIX = "fidelity_"
#: The exclusive lock of one writer per run folder (`lock.py`) and the file naming its holder.
LOCK_FILE = ".crsim-lock"
LOCK_INFO = ".crsim-lock.json"


def fidelity_file(corpus: str) -> str:
    """The file `crsim validate fidelity --against CORPUS` writes: `fidelity_<corpus>.json`."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in corpus) or "corpus"
    return f"{FIDELITY_PREFIX}{safe}.json"


def part_path(path: Path) -> Path:
    """The temporary sibling a file is written to before it is renamed into place (`.<name>.part`)."""
    return path.with_name(f".{path.name}{PART_SUFFIX}")


def tmp_path(path: Path) -> Path:
    """The temporary sibling of the manifest and of a dialogue file put into order (`<name>.tmp`)."""
    return path.with_name(path.name + ".tmp")


@dataclass(frozen=True)
class RunPaths:
    """Where each file of the run folder at `root` is: the one place a file name is joined to a folder.

    Holds no manifest, so writers use it before the manifest exists and evaluations use it for a
    separate output folder; readers go through `RunFolder`, which has the same paths."""

    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST

    @property
    def dialogues(self) -> Path:
        return self.root / DIALOGUES

    @property
    def retried(self) -> Path:
        return self.root / RETRIED

    @property
    def scores(self) -> Path:
        return self.root / SCORES

    @property
    def summary(self) -> Path:
        return self.root / SUMMARY

    @property
    def llm_cache(self) -> Path:
        return self.root / LLM_CACHE

    @property
    def report(self) -> Path:
        return self.root / REPORT

    @property
    def export_dir(self) -> Path:
        return self.root / EXPORT_DIR

    @property
    def lock(self) -> Path:
        return self.root / LOCK_FILE

    @property
    def lock_info(self) -> Path:
        return self.root / LOCK_INFO
