"""The response cache: SQLite, keyed by model identity, messages, generation parameters and trial.

Re-running an evaluation hits the cache for every call (0 provider calls); a new trial index gives
new keys, so repeated simulation trials are sampled afresh. Safe for several processes writing one
file (WAL journal, busy timeout). A cache can also note what it stores (`journal`), so a process
on another machine can send its new answers to the one that owns the run folder (`put_rows`).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from crsim.core.errors import ConfigError
from crsim.llm.config import CacheMode
from crsim.llm.types import Completion, Message, ResolvedGeneration

#: Bump when the key recipe changes, so old entries are never read under new semantics.
KEY_VERSION = 1


def cache_key(identity: str, messages: list[Message], generation: ResolvedGeneration, trial: int) -> str:
    payload = {
        "v": KEY_VERSION,
        "model": identity,
        "messages": [[m["role"], m["content"]] for m in messages],
        "generation": generation.model_dump(mode="json"),
        "trial": trial,
    }
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CacheStats:
    path: Path
    entries: int
    size_bytes: int
    by_model: dict[str, int]


class ResponseCache:
    """Completions stored by key. `mode` read-only never writes; off never reads or writes."""

    def __init__(self, path: Path, mode: CacheMode = "read-write") -> None:
        self.path, self.mode = path, mode
        self.hits = self.misses = 0
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._closed = False
        #: When a list: every stored answer is also appended to it as (key, model, created, completion).
        self.journal: list[tuple[str, str, float, str]] | None = None
        if mode != "off":
            self._db = _connect(path, create=mode == "read-write")

    def get(self, key: str) -> Completion | None:
        db = self._db if self._db is not None or not self._closed else self._reopen()
        if db is None:
            return None
        with self._lock:
            row = db.execute("SELECT completion FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return Completion.model_validate_json(row[0]).model_copy(update={"cached": True, "latency": 0.0})

    def put(self, key: str, completion: Completion) -> None:
        db = self._db if self._db is not None or not self._closed else self._reopen()
        if db is None or self.mode != "read-write":
            return
        row = (key, completion.model, time.time(), completion.model_dump_json())
        with self._lock:
            db.execute(
                "INSERT OR REPLACE INTO responses (key, model, created, completion) VALUES (?, ?, ?, ?)", row
            )
            if self.journal is not None:
                self.journal.append(row)

    def put_rows(self, rows: list[tuple[str, str, float, str]]) -> int:
        """Store rows another cache journaled; keys already here are kept. Returns the rows added."""
        db = self._db if self._db is not None or not self._closed else self._reopen()
        if db is None or self.mode != "read-write" or not rows:
            return 0
        with self._lock:
            before = db.total_changes
            db.execute("BEGIN")
            try:
                db.executemany(
                    "INSERT OR IGNORE INTO responses (key, model, created, completion) VALUES (?, ?, ?, ?)",
                    rows,
                )
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return db.total_changes - before

    def close(self) -> None:
        """Close the database; a later `get` or `put` opens it again (the counts go on)."""
        if self._db is not None:
            with self._lock:
                self._db.close()
            self._db = None
            self._closed = True

    def _reopen(self) -> sqlite3.Connection | None:
        with self._lock:
            if self._db is None and self._closed:
                self._db = _connect(self.path, create=self.mode == "read-write")
                self._closed = False
            return self._db


def _connect(path: Path, *, create: bool) -> sqlite3.Connection | None:
    if not create and not path.exists():
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(
            "PRAGMA synchronous=NORMAL"
        )  # with WAL: durable across crashes of crsim, no fsync per answer
        db.execute(
            "CREATE TABLE IF NOT EXISTS responses "
            "(key TEXT PRIMARY KEY, model TEXT NOT NULL, created REAL NOT NULL, completion TEXT NOT NULL)"
        )
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"{path}: cannot open as an LLM response cache ({exc})") from None
    return db


def cache_stats(path: str | Path) -> CacheStats:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no LLM cache here")
    db = _connect(path, create=False)
    assert db is not None
    try:
        rows = db.execute("SELECT model, COUNT(*) FROM responses GROUP BY model ORDER BY model").fetchall()
    finally:
        db.close()
    size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())
    return CacheStats(path, sum(n for _, n in rows), size, {m: n for m, n in rows})


def clear_cache(path: str | Path) -> int:
    """Delete every entry; returns how many there were."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no LLM cache here")
    db = _connect(path, create=False)
    assert db is not None
    try:
        (count,) = db.execute("SELECT COUNT(*) FROM responses").fetchone()
        db.execute("DELETE FROM responses")
        db.execute("VACUUM")
    finally:
        db.close()
    return int(count)
