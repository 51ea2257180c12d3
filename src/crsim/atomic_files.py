"""Atomic file output: a file appears complete at its path, or not at all.

Used by the library writers (meta-evaluation run files, GCDF1 corpora) and by the command line's
output files; it lives below every layer so that none of them has to import the CLI for it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

#: The suffix of a file being written; a crash leaves `.<name>.part`, never a half-written `<name>`.
PART_SUFFIX = ".part"


@contextmanager
def atomic_output(path: Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Write `path` through a temporary file in the same folder, renamed into place on success only.

    A failure (or an interrupt) part-way leaves no partial file at `path` and removes the temp file.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=PART_SUFFIX, dir=path.parent)
    try:
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(fd, mode, encoding=encoding) as handle:
            yield handle
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
