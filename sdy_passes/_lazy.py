"""Modules imported on first use and safe to fork around: numpy and ml_dtypes (only float
constants need them), xarray and `sharding.cost` (the cost report), the names of the package that
import xarray or the propagation passes. Importing them with the package would make every
`import sdy_passes` pay (issue 37 item 3: <= 0.3 s). A process forked while another thread is
importing one would inherit that module's import lock held and hang on its first use, so a fork
waits (at-fork handler) until no import made here is in flight.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading

_LOCK = threading.RLock()


def load(name: str):
    """The module `name`, imported under the fork lock the first time."""
    module = sys.modules.get(name)
    spec = getattr(module, "__spec__", None)
    if module is not None and not getattr(spec, "_initializing", False):
        return module
    with _LOCK:
        return importlib.import_module(name)


os.register_at_fork(before=_LOCK.acquire, after_in_parent=_LOCK.release, after_in_child=_LOCK.release)
