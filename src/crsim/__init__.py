"""crsim: simulation-based evaluation of conversational recommender systems.

In a notebook: `crsim.run(config)`, `crsim.evaluate(run_folder)` and `crsim.load(run_folder)` return a
`crsim.api.Result` (summary, dialogue, score and comparison dataframes). They are imported on first
use, so `import crsim` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crsim.api import Result, evaluate, load, run

__all__ = ["Result", "__version__", "evaluate", "load", "run"]

#: Names served by `crsim.api`, imported when first used.
_API = ("run", "evaluate", "load", "Result")


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from crsim.core.version import installed_version

        return installed_version()
    if name in _API:
        from crsim import api

        return getattr(api, name)
    raise AttributeError(f"module 'crsim' has no attribute {name!r}")
