"""Garbage-collector settings for bulk work that builds many long-lived, acyclic objects.

Parsing and scoring thousands of dialogues allocates millions of small objects that stay alive
(the parsed corpus, the score records) or die by reference counting. With the default thresholds
the cyclic collector runs every 700 allocations and its older generations re-scan everything alive
so far (modules, domains, lexicons, the corpus being built): at 1,000 GCDF1 dialogues that scanning
cost as much as the parsing, at 100,000 evaluated dialogues more than it.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: Allocations between young collections while bulk work runs (the default is 700).
BULK_THRESHOLD = 20_000


@contextmanager
def long_lived_objects_frozen() -> Iterator[None]:
    """Leave what exists now out of every collection and let young collections run less often.

    Objects alive on entry are moved to the permanent generation (`gc.freeze`), so collections
    triggered by the work do not re-scan them; cycles the work creates are still collected. Both
    settings are restored on exit (the frozen objects join the oldest generation again).
    """
    thresholds = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(max(thresholds[0], BULK_THRESHOLD), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection while a large, acyclic structure is built (an index over a catalogue).

    Every young collection that the build's allocations trigger would otherwise promote its objects
    and, now and then, re-scan everything alive (a million items): a fifth of the time of building a
    title linker. Reference counting still frees what dies; cycles left behind are collected after.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def young_collections_only(every: int = 10) -> Iterator[Callable[[], None]]:
    """Automatic collections off inside the block; the `tick()` it yields runs a collection of the
    young generations (0 and 1) every `every` calls.

    For a stream that keeps a batch alive at a time and grows a few large containers (a streaming
    evaluation's running summaries: an entry per dialogue seen): with automatic collections, each
    batch that outlives a young collection is promoted, the oldest generation fills, and every full
    collection traverses those containers again, so the time per batch grows with the stream. Young
    collections still free cycles among recent objects; automatic collections resume on exit.
    """
    enabled = gc.isenabled()
    gc.disable()
    calls = 0

    def tick() -> None:
        nonlocal calls
        calls += 1
        if calls % every == 0:
            gc.collect(1)

    try:
        yield tick
    finally:
        if enabled:
            gc.enable()
