"""Imports deferred to first use, and what a forked child does about imports in flight.

`import sharding` stays light: xarray (the simulation), numpy (the traffic and cost of a plan),
dask (lazy shards) and matplotlib (pictures) load when first needed, through `load`, the
package's one place for deferred imports.

A child forked while another thread imports inherits that module's import lock held by a thread
it does not have, and hangs on its own first use of the module (`sharding.DeviceMesh` during
another thread's first use; as much xarray's own deferred imports, such as dask's, inside that
use). The at-fork handler below makes the child forget the imports other threads had in flight:
their half-made modules leave `sys.modules` and their locks are dropped, so the child imports
them again, as a fresh interpreter would.
"""

from __future__ import annotations

import _thread
import importlib
import importlib._bootstrap as _bootstrap
import os
import sys

__all__ = ["load"]


def load(name: str):
    """`importlib.import_module(name)`: a deferred import of the package."""
    return importlib.import_module(name)


def _forget_imports_of_lost_threads() -> None:
    """In a forked child: drop the module locks other (now absent) threads held, and the
    modules they were making."""
    me = _thread.get_ident()
    locks = getattr(_bootstrap, "_module_locks", None)
    if locks is None:  # pragma: no cover - an interpreter without importlib's module locks
        return
    for name, entry in list(locks.items()):
        lock = entry() if callable(entry) else entry  # a weak reference (3.11) or the lock (3.12+)
        if lock is None or not getattr(lock, "count", 0) or getattr(lock, "owner", me) == me:
            continue
        locks.pop(name, None)
        module = sys.modules.get(name)
        if module is not None and getattr(getattr(module, "__spec__", None), "_initializing", False):
            del sys.modules[name]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_imports_of_lost_threads)
