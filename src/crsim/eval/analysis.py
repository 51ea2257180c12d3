"""Deprecated alias of `crsim.studies.language`, where this module moved (issue 18: eval/ split by concern).

Kept for one release so that user code importing `crsim.eval.analysis` keeps working; import from
`crsim.studies.language` instead. Only the public names are re-exported, not the submodules.
"""

import warnings

from crsim.studies.language import *  # noqa: F403

warnings.warn(
    "`crsim.eval.analysis` moved to `crsim.studies.language`; import from there",
    DeprecationWarning,
    stacklevel=2,
)
