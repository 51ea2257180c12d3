"""`crsim data download NAME`: fetch the official full releases of the supported datasets.

Each file is downloaded to a temporary file next to its destination, checked (sha256 where a
checksum is published, else the archive's CRCs or the file's syntax) and only then renamed into
place, so an interrupted, corrupted or missing download never leaves a partial file behind.
`base_url` (or the `CRSIM_DOWNLOAD_BASE` environment variable) replaces the official locations
with a mirror laid out as `<base>/<dataset>/<file path>`, which is how the tests serve fixtures.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import shutil
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import IO, Literal

from pydantic import BaseModel, Field

from crsim.core.atomic_files import PART_SUFFIX
from crsim.core.errors import CrsimError, DataError
from crsim.core.plugins import Registry
from crsim.core.progress import Progress

#: Environment variable that overrides the download locations with a mirror.
BASE_URL_ENV = "CRSIM_DOWNLOAD_BASE"
_CHUNK = 1 << 16


class SourceFile(BaseModel):
    """One published file of a dataset and how to verify it."""

    url: str = Field(description="Official location.")
    path: str = Field(description="Path under the dataset's folder (and under a mirror's dataset folder).")
    kind: Literal["zip", "json", "jsonl", "csv", "tsv"]
    sha256: str | None = Field(None, description="Published checksum; None when nobody publishes one.")
    sha256_source: str | None = Field(None, description="Where the checksum is stated.")
    members: list[str] = Field(default_factory=list, description="Zip: files extracted (by base name).")


class DatasetSource(BaseModel):
    """A dataset's official release: its files, licence and home page."""

    name: str
    description: str
    homepage: str
    licence: str
    files: list[SourceFile]


def _github(repo: str, path: str, kind: Literal["json", "jsonl", "csv", "tsv"]) -> SourceFile:
    """A file on a repository's default branch (no checksum is published for those)."""
    return SourceFile(url=f"https://raw.githubusercontent.com/{repo}/HEAD/{path}", path=path, kind=kind)


_USERSIMCRS = "iai-group/UserSimCRS"
REDIAL = DatasetSource(
    name="redial",
    description="ReDial: 11,348 movie recommendation dialogues (train 10,006 + test 1,342).",
    homepage="https://redialdata.github.io/website/",
    licence="CC BY 4.0",
    files=[
        SourceFile(
            url="https://github.com/ReDialData/website/raw/data/redial_dataset.zip",
            path="redial_dataset.zip",
            kind="zip",
            sha256="b48756681ec6f84e0af36979c5e9baa21ea8d9e7036b8764ea9b787bb0baf69b",
            sha256_source="facebookresearch/ParlAI parlai/tasks/redial/build.py",
            members=["train_data.jsonl", "test_data.jsonl", "movies_with_mentions.csv"],
        )
    ],
)
INSPIRED = DatasetSource(
    name="inspired",
    description="INSPIRED: 1,001 sociable recommendation dialogues with strategy labels.",
    homepage="https://github.com/sweetpeach/Inspired",
    licence="none stated (the repository has no licence file)",
    files=[
        _github("sweetpeach/Inspired", f"data/dialog_data/{split}.tsv", "tsv")
        for split in ("train", "dev", "test")
    ]
    + [_github("sweetpeach/Inspired", "data/movie_database.tsv", "tsv")],
)
IARD = DatasetSource(
    name="iard",
    description="IARD: 336 ReDial dialogues annotated with user intents and recommender actions.",
    homepage="https://github.com/wanlingcai1997/umap_2020_IARD",
    licence="MIT",
    files=[_github("wanlingcai1997/umap_2020_IARD", "umap2020_IARD_Cai.json", "json")],
)
USERSIMCRS = DatasetSource(
    name="usersimcrs",
    description="UserSimCRS data: annotated IARD (gold and partial), MovieBot and INSPIRED samples.",
    homepage="https://github.com/iai-group/UserSimCRS",
    licence="Apache-2.0",
    files=[
        _github(_USERSIMCRS, f"data/datasets/{path}", "json")
        for path in (
            "iard/formatted_IARD_annotated_gold.json",
            "iard/formatted_IARD_annotated_partially.json",
            "moviebot/annotated_dialogues.json",
            "inspired/annotated_sample.json",
        )
    ],
)
OPENDIALKG = DatasetSource(
    name="opendialkg",
    description="OpenDialKG: 15K dialogues grounded in a knowledge graph (the raw CSV).",
    homepage="https://github.com/facebookresearch/opendialkg",
    licence="CC BY-NC 4.0",
    files=[_github("facebookresearch/opendialkg", "data/opendialkg.csv", "csv")],
)
CRSARENA_DIAL = DatasetSource(
    name="crsarena_dial",
    description="CRSArena-Dial: 474 dialogues of crowd users with nine CRSs (open and closed).",
    homepage="https://github.com/iai-group/crsarena-dial",
    licence="none stated (the repository has no licence file)",
    files=[
        _github("iai-group/crsarena-dial", f"data/crs_arena_dial_{setting}.json", "json")
        for setting in ("open", "closed")
    ],
)
CRSARENA_EVAL = DatasetSource(
    name="crsarena_eval",
    description="CRSArena-Eval: 467 CRSArena-Dial dialogues with turn and dialogue labels.",
    homepage="https://github.com/informagi/face",
    licence="none stated (no licence file next to the data)",
    files=[_github("informagi/face", "dataset/crs_arena_eval.json", "json")],
)
MOVIELENS = DatasetSource(
    name="movielens",
    description="MovieLens latest-small: 100,836 ratings of 9,742 movies by 610 users.",
    homepage="https://grouplens.org/datasets/movielens/",
    licence="GroupLens terms of use (research use, no redistribution without permission)",
    files=[
        SourceFile(
            url="https://files.grouplens.org/datasets/movielens/ml-latest-small.zip",
            path="ml-latest-small.zip",
            kind="zip",
            members=["movies.csv", "ratings.csv", "links.csv", "tags.csv"],
        )
    ],
)

#: The downloadable datasets by name: the `crsim.download` entry points (the built-ins above are
#: declared in pyproject.toml), each naming a `DatasetSource`.
download_catalogue: Registry[DatasetSource] = Registry("download")


class _CatalogView(Mapping[str, DatasetSource]):
    """`CATALOG`: the download catalogue read as a mapping (name -> source), loading on lookup."""

    def __getitem__(self, name: str) -> DatasetSource:
        if name not in download_catalogue:
            raise KeyError(name)
        return download_catalogue.get(name)

    def __iter__(self) -> Iterator[str]:
        return iter(download_catalogue.names())

    def __len__(self) -> int:
        return len(download_catalogue.names())


CATALOG: Mapping[str, DatasetSource] = _CatalogView()


def download_dataset(
    name: str,
    out_dir: str | Path,
    *,
    base_url: str | None = None,
    timeout: float = 60.0,
    catalog: Mapping[str, DatasetSource] | None = None,
    progress: Progress | None = None,
) -> list[Path]:
    """Fetch every file of dataset `name` into `out_dir/name`; returns the files written. `progress`
    advances by the bytes received."""
    out_dir = Path(out_dir)
    catalog = CATALOG if catalog is None else catalog
    if name not in catalog:
        raise CrsimError(
            f"unknown dataset {name!r} to download; expected one of: {', '.join(sorted(catalog))}"
        )
    base = base_url if base_url is not None else os.environ.get(BASE_URL_ENV) or None
    target = out_dir / name
    target.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for source in catalog[name].files:
        url = f"{base.rstrip('/')}/{name}/{source.path}" if base else source.url
        written.extend(_fetch_file(source, url, target, timeout, progress))
    return written


def _fetch_file(
    source: SourceFile, url: str, target: Path, timeout: float, progress: Progress | None
) -> list[Path]:
    """Download, verify and put one source file (or its archive members) into place."""
    fd, temp_name = tempfile.mkstemp(prefix=".download.", suffix=PART_SUFFIX, dir=target)
    temp = Path(temp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            digest = _stream(url, handle, timeout, progress)
        _verify(source, url, temp, digest)
        if source.kind == "zip":
            return _extract(source, url, temp, target)
        destination = target / PurePosixPath(source.path).name
        os.replace(temp, destination)
        return [destination]
    finally:
        temp.unlink(missing_ok=True)


def _stream(url: str, handle: IO[bytes], timeout: float, progress: Progress | None) -> str:
    """Copy the body at `url` into `handle`; returns its sha256. HTTP and network errors become DataError."""
    digest = hashlib.sha256()
    received = 0
    request = urllib.request.Request(url, headers={"User-Agent": "crsim-download"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            declared = response.headers.get("Content-Length", "")
            while chunk := response.read(_CHUNK):
                digest.update(chunk)
                handle.write(chunk)
                received += len(chunk)
                if progress is not None:
                    progress.advance(len(chunk))
    except urllib.error.HTTPError as exc:
        raise DataError(f"download failed: HTTP {exc.code} {exc.reason}", path=url) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DataError(f"download failed: {reason}", path=url) from None
    except http.client.HTTPException as exc:  # e.g. a garbled status line
        raise DataError(f"download failed: {type(exc).__name__}", path=url) from None
    # urllib ends a body cut short silently; a CSV or TSV would then pass its checks as complete
    if declared.isdigit() and received != int(declared):
        raise DataError(f"download failed: connection closed after {received} of {declared} bytes", path=url)
    return digest.hexdigest()


def _verify(source: SourceFile, url: str, temp: Path, digest: str) -> None:
    """The checksum when one is published; otherwise the archive's CRCs or the file's syntax."""
    if source.sha256 is not None and digest != source.sha256:
        raise DataError(
            f"sha256 mismatch: expected {source.sha256} (stated in {source.sha256_source}), got {digest}; "
            "the download is corrupted or the release changed",
            path=url,
        )
    if source.kind == "zip":
        _check_zip(source, url, temp)
    elif source.kind == "json":
        _check_json(url, temp)
    else:
        _check_lines(source, url, temp)


def _check_zip(source: SourceFile, url: str, temp: Path) -> None:
    try:
        with zipfile.ZipFile(temp) as archive:
            bad = archive.testzip()
            names = {PurePosixPath(n).name for n in archive.namelist()}
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise DataError(f"not a valid zip archive (truncated or corrupted: {exc})", path=url) from None
    if bad is not None:
        raise DataError(f"corrupted zip archive: member {bad!r} fails its CRC check", path=url)
    missing = [m for m in source.members if m not in names]
    if missing:
        raise DataError(f"zip archive lacks the expected file(s) {', '.join(missing)}", path=url)


def _check_json(url: str, temp: Path) -> None:
    try:
        with open(temp, encoding="utf-8") as handle:
            json.load(handle)
    except UnicodeDecodeError as exc:
        raise DataError(f"downloaded file is not UTF-8 text (byte {exc.start})", path=url) from None
    except json.JSONDecodeError as exc:
        raise DataError(
            f"downloaded file is not valid JSON ({exc.msg} at line {exc.lineno})", path=url
        ) from None
    except (ValueError, RecursionError) as exc:  # an over-long integer, nesting too deep
        raise DataError(f"downloaded file is not readable JSON ({type(exc).__name__})", path=url) from None


def _check_lines(source: SourceFile, url: str, temp: Path) -> None:
    """Text files: UTF-8 throughout, non-empty, and (JSON Lines) every line parses."""
    lines = 0
    try:
        with open(temp, encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    continue
                lines += 1
                if source.kind == "jsonl":
                    json.loads(line)
    except UnicodeDecodeError as exc:
        raise DataError(f"downloaded file is not UTF-8 text (byte {exc.start})", path=url) from None
    except json.JSONDecodeError as exc:
        raise DataError(f"line {lines}: not valid JSON ({exc.msg})", path=url) from None
    except (ValueError, RecursionError) as exc:
        raise DataError(f"line {lines}: not readable JSON ({type(exc).__name__})", path=url) from None
    if lines == 0:
        raise DataError("downloaded file is empty", path=url)


def _extract(source: SourceFile, url: str, archive_path: Path, target: Path) -> list[Path]:
    """Extract the expected members (flattened to their base names), each through a temp file."""
    written = []
    with zipfile.ZipFile(archive_path) as archive:
        by_name = {PurePosixPath(n).name: n for n in archive.namelist() if not n.endswith("/")}
        for member in source.members:
            destination = target / member
            fd, temp_name = tempfile.mkstemp(prefix=f".{member}.", suffix=PART_SUFFIX, dir=target)
            try:
                with os.fdopen(fd, "wb") as out, archive.open(by_name[member]) as data:
                    shutil.copyfileobj(data, out, _CHUNK)
                os.replace(temp_name, destination)
            except (zipfile.BadZipFile, OSError) as exc:
                raise DataError(f"cannot extract {member}: {exc}", path=url) from None
            finally:
                Path(temp_name).unlink(missing_ok=True)
            written.append(destination)
    return written
