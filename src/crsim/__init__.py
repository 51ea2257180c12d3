"""crsim: simulation-based evaluation of conversational recommender systems.

In a notebook: `crsim.run(config)`, `crsim.evaluate(run_folder)` and `crsim.load(run_folder)` return a
`crsim.api.Result` (summary, dialogue, score and comparison dataframes). They are imported on first
use, so `import crsim` stays cheap.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

__all__ = ["CallableRunPackage", "__version__", "evaluate", "load", "run"]

#: Names served by `crsim.api`, imported when first used.
_API = ("evaluate", "load", "Result")


class CallableRunPackage(ModuleType):
    """The class of the `crsim.run` package: calling it is `crsim.api.run` (the package has the name
    the API wants). Library code never calls it; only the top-level API module is reached this way."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from crsim.api import run

        return run(*args, **kwargs)


def _version() -> str:
    from crsim.version import installed_version

    found = installed_version()
    globals()["__version__"] = found
    return found


def __getattr__(name: str) -> Any:
    if name == "__version__":
        return _version()
    if name in _API:
        from crsim import api

        return getattr(api, name)
    if name == "run":  # not imported yet: importing it sets the attribute to the (callable) package
        import crsim.run

        return crsim.run
    raise AttributeError(f"module 'crsim' has no attribute {name!r}")
