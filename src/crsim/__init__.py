"""crsim: simulation-based evaluation of conversational recommender systems."""

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    """`crsim.__version__`, looked up on first use: `importlib.metadata` and the search for the
    installed distribution cost every command ~0.05 s at start-up that only `--version`, manifests
    and reports need (bench/startup.py)."""
    if name != "__version__":
        raise AttributeError(f"module 'crsim' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("crsim")
    except PackageNotFoundError:  # running from a source tree without installation
        found = "0.0.0"
    globals()["__version__"] = found
    return found
