"""Shared fixtures: the shipped movie domain (loaded once) and small experiment configs.

`CRSIM_TEST_WITHOUT=xllamacpp,pandas,...` runs the tests as if those packages were not installed
(each is made unimportable before any test module loads): the tests that need an optional extra or
model must then skip with their reason, never fail (tests/core/test_optional_skips.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

for _hidden in filter(None, os.environ.get("CRSIM_TEST_WITHOUT", "").split(",")):
    sys.modules[_hidden.strip()] = None  # type: ignore[assignment]  # `import` raises, find_spec is None

from crsim.core import plugins as registry  # noqa: E402  (after the packages a run hides are hidden)
from crsim.domains.movielens import movie_domain  # noqa: E402
from crsim.model.domain import Domain  # noqa: E402


@pytest.fixture(autouse=True)
def _restore_registries() -> Iterator[None]:
    """Components a test registers are unregistered after it. Test modules register theirs inside
    tests or fixtures, never at import (tests/core/test_tests_layout.py checks it), so none leaks."""
    with registry.temporarily():
        yield


@pytest.fixture(scope="session")
def domain() -> Domain:
    return movie_domain()
