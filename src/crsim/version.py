"""The installed version of crsim, looked up once, on first use.

`importlib.metadata` and the search for the installed distribution cost every command ~0.05 s at
start-up that only `--version`, manifests and reports need (bench/startup.py), so nothing asks at import.
"""

from __future__ import annotations

from functools import cache


@cache
def installed_version() -> str:
    """crsim's version, or "0.0.0" when running from a source tree that was never installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("crsim")
    except PackageNotFoundError:
        return "0.0.0"
