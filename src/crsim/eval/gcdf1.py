"""Deprecated alias of `crsim.gcdf1`, where this module moved (issue 18: eval/ split by concern).

Kept for one release so that user code importing `crsim.eval.gcdf1` keeps working; import from
`crsim.gcdf1` instead. Only the public names are re-exported, not the submodules.
"""

import warnings

from crsim.gcdf1 import *  # noqa: F403

warnings.warn(
    "`crsim.eval.gcdf1` moved to `crsim.gcdf1`; import from there",
    DeprecationWarning,
    stacklevel=2,
)
