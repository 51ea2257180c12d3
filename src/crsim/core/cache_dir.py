"""Where crsim keeps what it can rebuild (item embeddings, built domains): the user's cache folder.

`$CRSIM_CACHE_DIR` when set (`off` keeps nothing), else `$XDG_CACHE_HOME/crsim`, else `~/.cache/crsim`.
Each kind of cached thing has its own subfolder.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The environment variable that moves (or, set to `off`, turns off) every cache of crsim.
CACHE_DIR_ENV = "CRSIM_CACHE_DIR"


def user_cache_dir(kind: str) -> Path | None:
    """The folder of one kind of cached thing (`embeddings`, `domains`), or None when caching is off."""
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured == "off":
        return None
    if configured:
        return Path(configured) / kind
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "crsim" / kind
