"""How the kernels are compiled and cached: the decorators every family uses.

Kernels compile lazily on their first call (no signature lists, which would compile every
variant at import) and are cached on disk unless `TILING_NUMBA_CACHE=0`, in a per-user directory
(`CACHE_DIR`), never inside the installed package, which may be read-only and whose leftover
`__pycache__` would outlive an uninstall. Numba writes each cache file to a temporary name and
renames it into place; `tiling._runtime` serialises first calls across processes (numba
issues 4807, 10128) and recovers from a broken entry by compiling in memory.

Numba keys a cache entry on its own source file only, but kernels here call functions of the
other modules of this package and constants of `tiling._tuning`: every entry is stamped with all
of those files, so an edit to any of them recompiles every kernel (`_Locator.get_source_stamp`).
"""

from __future__ import annotations

import glob
import os

import numba
import numpy as np
from numba.core.caching import (
    CompileResultCacheImpl, FunctionCache, _CacheLocator, _SourceFileBackedLocatorMixin,
)

CACHE_ENABLED = os.environ.get("TILING_NUMBA_CACHE", "1").strip().lower() not in (
    "0", "false", "no", "off")
"""Whether kernels use numba's on-disk cache; set `TILING_NUMBA_CACHE=0` to turn it off."""


def _cache_dir() -> str:
    base = os.environ.get("TILING_NUMBA_CACHE_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        home = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(home, "layout-toolkit", "numba")
    # numba's cache index does not record NUMBA_BOUNDSCHECK: checked code gets its own cache
    return os.path.join(base, "boundscheck") if numba.config.BOUNDSCHECK else base


CACHE_DIR = _cache_dir()
"""Where the kernels are cached: `TILING_NUMBA_CACHE_DIR`, else `$XDG_CACHE_HOME` (or
`~/.cache`) + `/layout-toolkit/numba`; one subdirectory per checkout (numba's naming)."""


_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_TUNING = os.path.join(os.path.dirname(_PACKAGE), "_tuning.py")

LOCK_FILE = os.path.join(CACHE_DIR, _CacheLocator.get_suitable_cache_subpath(__file__),
                         "first-call.lock")
"""The file a kernel's first call locks (`tiling._runtime._first_call`): in numba's subdirectory
of `CACHE_DIR` for this package's kernels, which no other installation's cache files share, so
a process never waits for another installation's compiles."""


class _Locator(_SourceFileBackedLocatorMixin, _CacheLocator):
    """Numba's cache locator for this package's functions, pointing into `CACHE_DIR`."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = os.path.join(CACHE_DIR, self.get_suitable_cache_subpath(py_file))

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        files = glob.glob(os.path.join(_PACKAGE, "*.py")) + [_TUNING]
        stats = [os.stat(f) for f in sorted(files)]
        return max(st.st_mtime for st in stats), sum(st.st_size for st in stats)


class _CacheImpl(CompileResultCacheImpl):
    _locator_classes = [_Locator]


class _Cache(FunctionCache):
    _impl_class = _CacheImpl


def _cached(dispatcher):
    """`dispatcher` with the disk cache in `CACHE_DIR` when it is on and can be written;
    otherwise it compiles in memory."""
    if CACHE_ENABLED:
        try:
            dispatcher._cache = _Cache(dispatcher.py_func)
        except RuntimeError:  # no writable directory: numba finds no locator
            pass
    return dispatcher


_u = np.uint64
"""Every array index is cast to unsigned: numba then skips its negative-index wraparound branch,
which otherwise kept LLVM from vectorising the copy loops (3x slower, measured)."""


def _kernel(fn, parallel=False):
    # error_model="numpy": integer division never raises (divisors are checked by the planner).
    return _cached(numba.njit(nogil=True, error_model="numpy", parallel=parallel)(fn))


def _parallel_kernel(fn):
    return _kernel(fn, parallel=True)


def _for_each(*names):
    """Marks a kernel compiled once for each value of its arguments `names`, which its body
    passes to `numba.literally`: numba prunes the branches for other values before typing them,
    so each format compiles and caches its own code alone. `tiling._runtime.signature` reads the
    positions (`literal_args`)."""
    def mark(dispatcher):
        dispatcher.literal_args = tuple(dispatcher.py_func.__code__.co_varnames.index(n)
                                        for n in names)
        return dispatcher
    return mark


def _helper(fn):
    # Row functions and their helpers are separate (non-inlined) functions: inlined into one big
    # kernel, the same loops ran 2x slower (the packed kernels inline their thin row functions
    # and 1-bit packers alone: `packed`). Only kernels call them, so they need no Python or C
    # entry points (which cost about 0.1 s of a cold compile).
    return _cached(numba.njit(nogil=True, error_model="numpy", no_cpython_wrapper=True,
                              no_cfunc_wrapper=True)(fn))


_inline = numba.njit(inline="always", nogil=True, error_model="numpy")
"""For the small index helpers every loop calls: inlined at numba's IR level."""

# Constant int arguments of the row functions, as int64 values: numba compiles a function again
# for each literal it is called with (0.9 s more for `_encode_tiled_row` with Literal[int](1)).
_ONE, _ZERO = np.int64(1), np.int64(0)
