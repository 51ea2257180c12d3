"""Deprecated alias of `crsim.studies.compare`, where this module moved (issue 18: eval/ split by concern).

Kept for one release so that user code importing `crsim.eval.compare` keeps working; import from
`crsim.studies.compare` instead. Only the public names are re-exported, not the submodules.
"""

import warnings

from crsim.studies.compare import *  # noqa: F403

warnings.warn(
    "`crsim.eval.compare` moved to `crsim.studies.compare`; import from there",
    DeprecationWarning,
    stacklevel=2,
)
