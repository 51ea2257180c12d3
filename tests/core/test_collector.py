"""`crsim.core.collector`: the garbage collector's bulk-work settings apply inside the block only."""

from __future__ import annotations

import gc

import pytest

from crsim.core.collector import BULK_THRESHOLD, long_lived_objects_frozen


def test_inside_the_block_what_existed_is_frozen_and_young_collections_are_rarer() -> None:
    before = gc.get_threshold()
    with long_lived_objects_frozen():
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold()[0] == max(before[0], BULK_THRESHOLD)
        assert gc.get_threshold()[1:] == before[1:]
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_settings_are_restored_when_the_work_fails() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), long_lived_objects_frozen():
        raise RuntimeError("the work failed")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_cycles_made_inside_the_block_are_still_collected() -> None:
    with long_lived_objects_frozen():
        cycle: list[object] = []
        cycle.append(cycle)
        del cycle
        assert gc.collect() >= 1
