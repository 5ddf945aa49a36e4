"""Imports deferred to first use, and forks while other threads import.

`import sharding` stays light: xarray (the simulation), numpy (the traffic and cost of a plan),
dask (lazy shards) and matplotlib (pictures) load when first needed, through `load`, the
package's one place for deferred imports.

A child forked while another thread imports inherits that module's import lock held by a thread
it does not have, and hangs on its own first use of the module (`sharding.DeviceMesh` during
another thread's first use; as much xarray's own deferred imports, such as dask's, inside it).
So the at-fork handlers below:

* before a fork, wait (at most `WAIT` seconds) until no other thread is inside an import,
  except imports that wait on the forking thread itself (those could never finish), then hold
  the interpreter's import lock until the fork so that none starts;
* in the child, forget the imports still in flight after all (their module locks, and the
  half-made modules of Python source, which the child then imports again). A half-initialized
  extension module cannot be made again in the same process: the wait above is what keeps those
  whole.
"""

from __future__ import annotations

import _imp
import _thread
import importlib
import importlib._bootstrap as _bootstrap
import importlib.machinery
import os
import sys
import time

__all__ = ["load", "WAIT"]

WAIT = 30.0
"""The longest a fork waits for other threads' imports (seconds)."""


def load(name: str):
    """`importlib.import_module(name)`: a deferred import of the package."""
    return importlib.import_module(name)



def pyplot(error: type, what: str, instead: str):
    """matplotlib's pyplot on the Agg backend, or `error` saying that `what` needs the `plot`
    extra and what works `instead`."""
    try:
        load("matplotlib").use("Agg")
        return load("matplotlib.pyplot")
    except ImportError:
        raise error(f"{what} needs matplotlib (pip install 'layout-toolkit[plot]'); {instead} works without "
                    "it") from None

def _held_locks():
    """`(name, lock)` of the module locks other threads hold (importlib's own bookkeeping)."""
    me = _thread.get_ident()
    for name, entry in list(getattr(_bootstrap, "_module_locks", {}).items()):
        lock = entry() if callable(entry) else entry  # a weak reference (3.11) or the lock
        if lock is not None and getattr(lock, "count", 0) and getattr(lock, "owner", me) != me:
            yield name, lock


def _waits_on(tid: int, me: int) -> bool:
    """Whether thread `tid` waits (through a chain of module locks) on thread `me`."""
    blocking = getattr(_bootstrap, "_blocking_on", None) or {}
    seen = set()
    while tid not in seen:
        seen.add(tid)
        entry = blocking.get(tid)
        locks = entry if isinstance(entry, list) else [entry] if entry is not None else []
        owners = [getattr(lock, "owner", None) for lock in locks]
        if me in owners:
            return True
        if not owners or owners[0] is None:
            return False
        tid = owners[0]
    return False


_holding = False  # whether `_wait_for_imports` holds the import lock across the fork


def _wait_for_imports() -> None:
    global _holding
    me = _thread.get_ident()
    deadline = time.monotonic() + WAIT
    while True:
        _imp.acquire_lock()  # no import starts while it is held (`_get_module_lock` needs it)
        if all(_waits_on(lock.owner, me) for _, lock in _held_locks()) or time.monotonic() > deadline:
            _holding = True
            return
        _imp.release_lock()
        time.sleep(0.001)  # lets the importing threads go on


def _release() -> None:
    global _holding
    if _holding:
        _holding = False
        _imp.release_lock()


def _forget_imports_of_lost_threads() -> None:
    _release()  # the child keeps the lock `_wait_for_imports` took (as after a fork inside an import)
    locks = getattr(_bootstrap, "_module_locks", None)
    forgotten = []
    for name, _ in list(_held_locks()):
        locks.pop(name, None)
        module = sys.modules.get(name)
        spec = getattr(module, "__spec__", None)
        if getattr(spec, "_initializing", False) and not isinstance(
                getattr(spec, "loader", None), importlib.machinery.ExtensionFileLoader):
            forgotten.append(name)
        elif module is not None and "." in name:  # made, but not yet bound to its package
            parent, _, child = name.rpartition(".")
            if parent in sys.modules and not hasattr(sys.modules[parent], child):
                setattr(sys.modules[parent], child, module)
    for name in forgotten:  # with its submodules: a package made again binds them again
        for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
            del sys.modules[key]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_wait_for_imports, after_in_parent=_release,
                        after_in_child=_forget_imports_of_lost_threads)
