"""The tiling tests compile kernels in the calling thread, so that a test's first call runs the
kernel it checks; child processes inherit that unless a test passes TILING_BACKGROUND_COMPILE=1
(the background mode's own tests in test_hardening.py)."""

import os

from tiling import _runtime

os.environ["TILING_BACKGROUND_COMPILE"] = "0"
_runtime.BACKGROUND_COMPILE = False
