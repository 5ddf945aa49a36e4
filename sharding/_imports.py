"""Imports deferred to first use, safe under `os.fork`.

`import sharding` stays light: xarray (the simulation), numpy (the traffic and cost of a plan),
dask (lazy shards) and matplotlib (pictures) load when first needed. A child forked while another
thread imports a module inherits that module's held import lock and hangs on its own first use
of it. So every deferred import of the package goes through `load`, under one lock that an
at-fork handler takes before the fork: a fork waits until the import in flight is done.
"""

from __future__ import annotations

import importlib
import os
import threading

__all__ = ["load"]

_LOCK = threading.RLock()


def load(name: str):
    """`importlib.import_module(name)` under the package's fork-safe import lock."""
    with _LOCK:
        return importlib.import_module(name)


if hasattr(os, "register_at_fork"):  # the child is the forking thread alone: it owns the lock
    os.register_at_fork(before=_LOCK.acquire, after_in_parent=_LOCK.release, after_in_child=_LOCK.release)
