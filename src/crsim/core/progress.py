"""The one progress protocol: what long work tells a progress display.

Work that takes a while (holding dialogues, scoring them, annotating, measuring, judging pairs,
downloading) takes an optional `progress: Progress` and calls `set_total` once it knows how many
items there are, then `advance` as items finish, saying whether one failed. The command line passes
a meter of its rich display (`crsim.runner.progress.PhaseMeter`); a notebook may pass anything with
these two methods, e.g. a tqdm wrapper. A callback stays a callback only where it hands over data
the caller keeps (e.g. the Ray executor's `record`), never to count.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Progress"]


class Progress(Protocol):
    """A progress display: the number of items, then each batch of finished items."""

    def set_total(self, total: int) -> None:
        """The number of items, once it is known (a display without it shows a count only)."""

    def advance(self, count: int = 1, *, error: bool = False) -> None:
        """`count` more items finished; `error`: one of them failed."""
