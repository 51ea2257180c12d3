"""Deprecated alias of `crsim.fitting.cv`, where this module moved (issue 18: eval/ split by concern).

Kept for one release so that user code importing `crsim.eval.learned.cv` keeps working; import from
`crsim.fitting.cv` instead. Only the public names are re-exported, not the submodules.
"""

import warnings

from crsim.fitting.cv import *  # noqa: F403

warnings.warn(
    "`crsim.eval.learned.cv` moved to `crsim.fitting.cv`; import from there",
    DeprecationWarning,
    stacklevel=2,
)
