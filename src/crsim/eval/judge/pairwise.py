"""Deprecated alias of `crsim.studies.pairwise`, where this module moved (issue 18: eval/ split by concern).

Kept for one release so that user code importing `crsim.eval.judge.pairwise` keeps working; import from
`crsim.studies.pairwise` instead. Only the public names are re-exported, not the submodules.
"""

import warnings

from crsim.studies.pairwise import *  # noqa: F403

warnings.warn(
    "`crsim.eval.judge.pairwise` moved to `crsim.studies.pairwise`; import from there",
    DeprecationWarning,
    stacklevel=2,
)
