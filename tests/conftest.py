"""Shared fixtures: the shipped movie domain (loaded once) and small experiment configs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from crsim import registry
from crsim.data.movies import movie_domain
from crsim.model.domain import Domain


@pytest.fixture(autouse=True)
def _restore_registries() -> Iterator[None]:
    """Components a test registers are unregistered after it. Test modules register theirs inside
    tests or fixtures, never at import (tests/core/test_tests_layout.py checks it), so none leaks."""
    with registry.temporarily():
        yield


@pytest.fixture(scope="session")
def domain() -> Domain:
    return movie_domain()
