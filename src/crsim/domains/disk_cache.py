"""A built domain kept on disk: the read catalogue and what runs build from it, reused across runs.

Reading a large catalogue and building its title linker, lexicon, item index and retrieval text index
costs a minute at a million items; a later run on the same catalogue loads them instead. An entry is
one file in the user's cache folder (`crsim.core.cache_dir`, subfolder `domains`), named by the
domain and its key. The key is a SHA-256 over the domain file's bytes, the item file's bytes, the
path of the domain file and the size and time of every other file it names, the source of the modules
whose objects the entry holds, and the versions of crsim, Python and the libraries those objects come
from: any change to the catalogue or to the code builds a new entry (old ones stay until
`crsim cache domains --clear`).

An entry is written only for catalogues of at least `MIN_CACHED_ITEMS` items (below that, building
is quicker than loading), under a lock (`filelock`) and atomically (a temporary file renamed into
place), so concurrent runs never see half an entry. It ends with a header that records the key, the
crsim version, the code fingerprint and the length and SHA-256 of the pickled payload; an entry whose
header, length or checksum does not match is rebuilt with a warning, never unpickled. The payload is
a pickle: the cache folder must be as private as the Python environment itself.
"""

from __future__ import annotations

import hashlib
import json
import logging
import pickle
import platform
import time
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import yaml
from filelock import FileLock, Timeout

from crsim.core.atomic_files import atomic_output
from crsim.core.cache_dir import user_cache_dir
from crsim.core.collector import long_lived_objects_frozen
from crsim.core.version import installed_version
from crsim.core.yaml_files import load_yaml
from crsim.model.domain import KEPT_BUILDS, Domain, built_parts

logger = logging.getLogger(__name__)

#: Entries of catalogues smaller than this are not written (reading and building them is quicker).
MIN_CACHED_ITEMS = 20_000
#: The first line of every entry; the number is the layout of the file (header, then payload).
MAGIC = b"crsim-domain-cache 1\n"
#: Modules whose objects an entry pickles: a change to any of them changes every key.
MODULES = (
    "crsim.model.items",
    "crsim.model.packed_columns",
    "crsim.model.value_index",
    "crsim.model.domain",
    "crsim.model.linking",
    "crsim.model.title_table",
    "crsim.model.title_cues",
    "crsim.model.weak_titles",
    "crsim.model.text",
    "crsim.domains.loader",
    "crsim.domains.item_reader",
    "crsim.domains.item_records",
    "crsim.domains.slot_checks",
    "crsim.domains.disk_cache",
    "crsim.language.cues",
    "crsim.language.domain_cues",
    "crsim.language.lexicon",
    "crsim.crs.popular",
    "crsim.crs.item_index",
    "crsim.crs.ranked_top",
    "crsim.crs.dialogue_state",
    "crsim.crs.retrieval",
    "crsim.crs.tfidf",
)
#: Libraries whose objects (arrays, sparse matrices, models) an entry pickles.
LIBRARIES = ("numpy", "scipy", "scikit-learn", "pydantic", "pydantic-core", "rapidfuzz")
#: How long a writer waits for another process writing the same entry before giving up (seconds).
LOCK_TIMEOUT = 600.0


def cache_folder() -> Path | None:
    """Where domain cache entries live, or None when caching is off (`CRSIM_CACHE_DIR=off`)."""
    return user_cache_dir("domains")


@dataclass(frozen=True)
class CacheRef:
    """The entry a domain belongs to, and which kept builds that entry already holds."""

    path: Path
    key: str
    held: frozenset[str]


def domain_key(domain_file: Path) -> str | None:
    """The cache key of a domain file (see the module docstring), or None when the file cannot be
    read as a mapping with an item file (then reading it reports the problem, uncached)."""
    try:
        text = domain_file.read_bytes()
        data = load_yaml(text.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError):
        return None
    items = data.get("items") if isinstance(data, dict) else None
    item_path = items.get("path") if isinstance(items, dict) else None
    if not isinstance(item_path, str):
        return None
    digest = hashlib.sha256()
    digest.update(f"{MAGIC!r} {domain_file.resolve()}\n".encode())
    digest.update(hashlib.sha256(text).digest())
    try:
        with (domain_file.parent / item_path).open("rb") as handle:
            digest.update(hashlib.file_digest(handle, "sha256").digest())
    except OSError:
        return None
    for other in _named_files(data):
        digest.update(_stat_line(domain_file.parent / other).encode())
    return digest.hexdigest()


def _named_files(data: dict[str, Any]) -> list[str]:
    """The other files a domain file names (ratings, profiles, phrasing files)."""
    found: list[str] = []
    ratings = data.get("ratings")
    if isinstance(ratings, dict) and isinstance(ratings.get("path"), str):
        found.append(ratings["path"])
    if isinstance(data.get("profiles"), str):
        found.append(data["profiles"])
    phrasings = data.get("phrasings")
    if isinstance(phrasings, dict):
        found += [v for v in phrasings.values() if isinstance(v, str)]
    return found


def _stat_line(path: Path) -> str:
    try:
        stat = path.stat()
    except OSError:
        return f"{path} missing\n"
    return f"{path} {stat.st_size} {stat.st_mtime_ns}\n"


_ENVIRONMENT: str | None = None


def code_fingerprint() -> str:
    """A SHA-256 over crsim's, Python's and the libraries' versions and the kept modules' source."""
    global _ENVIRONMENT
    if _ENVIRONMENT is None:
        lines = [f"crsim {installed_version()}", f"python {platform.python_version()}"]
        for library in LIBRARIES:
            try:
                lines.append(f"{library} {version(library)}")
            except PackageNotFoundError:
                lines.append(f"{library} missing")
        for module in MODULES:
            spec = find_spec(module)
            origin = spec.origin if spec is not None else None
            source = Path(origin).read_bytes() if origin else b""
            lines.append(f"{module} {hashlib.sha256(source).hexdigest()}")
        _ENVIRONMENT = hashlib.sha256(("\n".join(lines) + "\n").encode()).hexdigest()
    return _ENVIRONMENT


def entry_path(folder: Path, name: str, key: str) -> Path:
    return folder / f"{name}-{key[:32]}.domain"


def load_domain(domain_file: Path) -> tuple[Domain | None, CacheRef | None]:
    """The domain of `domain_file` from its cache entry, or None (no entry, caching off, or an entry
    that is not sound: then a warning, and the entry is removed). The reference says where to save."""
    folder = cache_folder()
    key = domain_key(domain_file) if folder is not None else None
    if folder is None or key is None:
        return None, None
    name = _name_of(domain_file)
    path = entry_path(folder, name, key)
    seen = _identity(path)
    if seen is None:
        return None, CacheRef(path, key, frozenset())
    try:
        domain, held = _read_entry(path, key)
    except _Unsound as exc:
        logger.warning("domain cache: %s: %s; rebuilding it", path, exc)
        try:
            with FileLock(str(path) + ".lock", timeout=LOCK_TIMEOUT):
                if _identity(path) == seen:  # not meanwhile replaced by another run's sound entry
                    _remove(path)
        except (OSError, Timeout):
            pass  # the rebuilt entry replaces it, or the next run warns again
        return None, CacheRef(path, key, frozenset())
    ref = CacheRef(path, key, frozenset(held))
    domain.__dict__["_cache"] = ref
    return domain, ref


def _identity(path: Path) -> tuple[int, int, int] | None:
    """Which file is at `path` (inode, size, modification time), or None when there is none."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def _name_of(domain_file: Path) -> str:
    """A file-name-safe label for an entry: the domain file's folder name (the domain's name is inside)."""
    label = domain_file.resolve().parent.name or "domain"
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in label)[:40]


class _Unsound(Exception):
    """A cache entry that cannot be trusted (what is wrong with it)."""


def _read_entry(path: Path, key: str) -> tuple[Domain, set[str]]:
    """The domain and kept builds of a sound entry; `_Unsound` saying what is wrong otherwise. The
    payload's length and checksum are verified (streaming) before anything is unpickled."""
    header = read_header(path)
    if header is None:
        raise _Unsound("truncated, damaged or not a domain cache entry (no readable header)")
    if header.get("key") != key:
        raise _Unsound("its header does not match the catalogue (another key)")
    if header.get("crsim") != installed_version() or header.get("code") != code_fingerprint():
        raise _Unsound(
            f"written by crsim {header.get('crsim')} with other code or libraries "
            f"(this is crsim {installed_version()})"
        )
    size = header.get("payload_bytes")
    with path.open("rb") as handle:
        handle.seek(len(MAGIC))
        digest, left = hashlib.sha256(), size if isinstance(size, int) else -1
        while left > 0:
            chunk = handle.read(min(left, 1 << 22))
            if not chunk:
                break
            digest.update(chunk)
            left -= len(chunk)
        if left != 0 or digest.hexdigest() != header.get("payload_sha256"):
            raise _Unsound("its content does not match its checksum (truncated or damaged)")
        handle.seek(len(MAGIC))
        try:
            with long_lived_objects_frozen():
                domain, built = pickle.load(handle)  # checksummed, in the user's own cache
        except Exception as exc:  # noqa: BLE001 - any failure to rebuild the objects
            raise _Unsound(f"cannot be loaded ({type(exc).__name__}: {exc})") from None
    if not isinstance(domain, Domain) or not isinstance(built, dict):
        raise _Unsound("it holds something other than a domain")
    built_parts(domain).update(built)
    return domain, set(built)


class _Hashing:
    """A binary file that hashes and counts what is written through it (the pickled payload)."""

    def __init__(self, out: Any) -> None:
        self.out, self.digest, self.size = out, hashlib.sha256(), 0

    def write(self, data: Any) -> int:
        view = memoryview(data)  # protocol 5 hands large arrays over as `PickleBuffer`s
        self.digest.update(view)
        self.size += view.nbytes
        self.out.write(view)
        return view.nbytes


def save_domain(domain: Domain) -> Path | None:
    """Write (or extend) the cache entry of a domain read through `crsim.domains.domain_named`, when
    it is large enough and holds kept builds its entry lacks; the entry's path, or None when nothing
    was written. A cache that cannot be written only warns: it never fails a run."""
    ref: CacheRef | None = domain.__dict__.get("_cache")
    if ref is None or len(domain.items) < MIN_CACHED_ITEMS:
        return None
    built = {k: v for k, v in built_parts(domain).items() if k in KEPT_BUILDS}
    if ref.held and set(built) <= ref.held:
        return None
    start = time.perf_counter()
    try:
        with FileLock(str(ref.path) + ".lock", timeout=LOCK_TIMEOUT):
            if _holds(ref.path, ref.key, set(built)):  # another process wrote it meanwhile
                domain.__dict__["_cache"] = CacheRef(ref.path, ref.key, frozenset(built))
                return None
            with atomic_output(ref.path, "wb") as out:
                out.write(MAGIC)
                payload = _Hashing(out)
                pickle.dump((domain, built), payload, protocol=pickle.HIGHEST_PROTOCOL)
                header = {
                    "key": ref.key,
                    "crsim": installed_version(),
                    "code": code_fingerprint(),
                    "domain": domain.name,
                    "source": str(domain.source) if domain.source else None,
                    "items": len(domain.items),
                    "built": sorted(built),
                    "payload_bytes": payload.size,
                    "payload_sha256": payload.digest.hexdigest(),
                    "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                }
                encoded = json.dumps(header).encode()
                out.write(encoded + len(encoded).to_bytes(8, "little"))
    except (OSError, Timeout, pickle.PicklingError, TypeError) as exc:
        logger.warning("domain cache: cannot write %s (%s); runs build the domain again", ref.path, exc)
        return None
    domain.__dict__["_cache"] = CacheRef(ref.path, ref.key, frozenset(built))
    logger.info("domain cache: wrote %s in %.1f s", ref.path, time.perf_counter() - start)
    return ref.path


def _holds(path: Path, key: str, built: set[str]) -> bool:
    """Whether a sound-looking entry for `key` already holds every build in `built` (header only)."""
    header = read_header(path)
    return (
        header is not None
        and header.get("key") == key
        and header.get("code") == code_fingerprint()
        and built <= set(header.get("built", []))
    )


def read_header(path: Path) -> dict[str, Any] | None:
    """The header of an entry (what it holds, its size and checksum), or None if it has none. The
    header is at the end (written after the payload): JSON, then its length in 8 bytes."""
    try:
        with path.open("rb") as handle:
            if handle.read(len(MAGIC)) != MAGIC:
                return None
            end = handle.seek(0, 2)
            if end < len(MAGIC) + 8:
                return None
            handle.seek(end - 8)
            length = int.from_bytes(handle.read(8), "little")
            if not 0 < length <= min(end - len(MAGIC) - 8, 1 << 20):
                return None
            handle.seek(end - 8 - length)
            header = json.loads(handle.read(length))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(header, dict) or header.get("payload_bytes") != end - 8 - length - len(MAGIC):
        return None
    return header


@dataclass(frozen=True)
class Entry:
    """One file of the domain cache, as `crsim cache domains` lists it."""

    path: Path
    size_bytes: int
    header: dict[str, Any] | None


def cache_entries(folder: Path | None = None) -> list[Entry]:
    """The entries in the domain cache folder (default: `cache_folder()`), oldest first."""
    folder = folder if folder is not None else cache_folder()
    if folder is None or not folder.is_dir():
        return []
    paths = sorted(folder.glob("*.domain"), key=lambda p: p.stat().st_mtime)
    return [Entry(p, p.stat().st_size, read_header(p)) for p in paths]


def clear_cache(folder: Path | None = None) -> int:
    """Remove every entry (and its lock file) from the domain cache folder; how many entries."""
    entries = cache_entries(folder)
    for entry in entries:
        with FileLock(str(entry.path) + ".lock", timeout=LOCK_TIMEOUT):
            _remove(entry.path)
        _remove(Path(str(entry.path) + ".lock"))
    return len(entries)


def _remove(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        logger.warning("domain cache: cannot remove %s (%s)", path, exc)


__all__ = [
    "MIN_CACHED_ITEMS",
    "CacheRef",
    "Entry",
    "cache_entries",
    "cache_folder",
    "clear_cache",
    "code_fingerprint",
    "domain_key",
    "load_domain",
    "read_header",
    "save_domain",
]
