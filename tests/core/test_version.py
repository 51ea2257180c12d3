"""`crsim.__version__` is the installed distribution's version, looked up only when asked for."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version

import pytest

import crsim


def test_the_version_is_the_distributions() -> None:
    try:
        expected = version("crsim")
    except PackageNotFoundError:
        expected = "0.0.0"
    assert crsim.__version__ == expected
    from crsim import __version__

    assert __version__ == expected


def test_other_names_are_still_missing() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = crsim.nope  # type: ignore[attr-defined]


def test_importing_crsim_does_not_look_the_version_up() -> None:
    probe = "import sys, crsim; print('importlib.metadata' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "False"
