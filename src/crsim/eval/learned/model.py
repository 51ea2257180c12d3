"""Deprecated alias of `crsim.fitting.model`, where this module moved (issue 18: eval/ split by concern).

Kept for one release so that user code importing `crsim.eval.learned.model` keeps working; import from
`crsim.fitting.model` instead. Only the public names are re-exported, not the submodules.
"""

import warnings

from crsim.fitting.model import *  # noqa: F403

warnings.warn(
    "`crsim.eval.learned.model` moved to `crsim.fitting.model`; import from there",
    DeprecationWarning,
    stacklevel=2,
)
