"""The run folder: manifest.json written first, dialogues.jsonl appended and flushed as it grows."""

from __future__ import annotations

import json
import os
import platform
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from crsim.errors import DataError
from crsim.model.dialogue import FORMAT_VERSION, Dialogue
from crsim.model.io import iter_dialogues
from crsim.redact import redact_json_text, register_config_secrets

__all__ = ["iter_dialogues"]

MANIFEST = "manifest.json"
DIALOGUES = "dialogues.jsonl"
LLM_CACHE = "llm_cache.sqlite"
RUN_FORMAT_VERSION = "1"


def package_versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in ("crsim", "pydantic", "numpy", "scipy", "scikit-learn", "rapidfuzz", "openai", "xllamacpp"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def build_manifest(config: dict[str, Any], components: dict[str, Any], planned: int) -> dict[str, Any]:
    return {
        "run_format_version": RUN_FORMAT_VERSION,
        "dialogue_format_version": FORMAT_VERSION,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": config,
        "components": components,
        "planned_dialogues": planned,
        "versions": package_versions(),
    }


def write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / MANIFEST
    if not path.exists():
        raise DataError(f"no {MANIFEST}; expected a run folder written by `crsim run`", path=str(run_dir))
    try:
        data = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"not valid JSON ({exc})", path=str(path)) from None
    if not isinstance(data, dict) or not isinstance(data.get("config", {}), dict):
        raise DataError(
            "expected a JSON object with a `config` object, as `crsim run` writes", path=str(path)
        )
    register_config_secrets(data.get("config"))  # mask the run's keys in what is made from it
    return data


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


class DialogueWriter:
    """Appends one dialogue per line and flushes, so a killed run keeps every finished dialogue."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def write(self, dialogue: Dialogue) -> None:
        self._handle.write(redact_json_text(dialogue.model_dump_json()) + "\n")  # no secret on disk
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()


def canonical_order(path: Path, order: dict[str, int]) -> None:
    """Rewrite a complete file once, in task order, so equal seeds give equal files (atomic)."""
    with open(path, encoding="utf-8") as handle:
        lines = [line for line in handle if line.strip()]
    lines.sort(key=lambda line: order.get(json.loads(line)["id"], len(order)))
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(lines), encoding="utf-8")
    os.replace(tmp, path)
