"""tools/dump/ropecheck_capture.py: the capture is the package's module `ropecheck.capture`
(python/ropecheck/capture.py; docs/capture.md). This file only re-exports it, so scripts written for the
capture's old home keep working:

    import sys; sys.path.insert(0, "tools/dump")
    from ropecheck_capture import ropecheck_capture

It puts this checkout's python/ at the front of sys.path (unless it is on it already), so the capture imported is
the one of this source tree rather than another installed ropecheck (unless `ropecheck` was imported before).
New code: `from ropecheck.capture import ropecheck_capture` with the package installed
(pip install --no-build-isolation python/) or python/ on PYTHONPATH.
"""

import os
import sys

_PYTHON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
if os.path.realpath(_PYTHON) not in (os.path.realpath(p) for p in sys.path if p):
    sys.path.insert(0, os.path.realpath(_PYTHON))

from ropecheck.capture import *  # noqa: E402,F401,F403  (the module's __all__)
from ropecheck.capture import __all__  # noqa: E402,F401
