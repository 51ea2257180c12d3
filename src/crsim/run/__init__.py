"""Running experiments: build (config -> objects), loop (one dialogue), batch (a run folder).

The package is also callable: `crsim.run(config)` is the notebook API `crsim.api.run` (the name is
taken by this package, so the package answers the call; see `crsim.__init__`).
"""

import sys

from crsim import CallableRunPackage

sys.modules[__name__].__class__ = CallableRunPackage
