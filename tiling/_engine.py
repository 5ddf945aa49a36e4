"""The Numba engine behind `tiling.encode`, `tiling.decode` and `tiling.relayout`.

How a call flows: `tiling.codec.encode` validates the array, the layout and `out`, then calls
`encode_into(bits, layout, element, out)` here (`bits`: the array viewed as its unsigned
container). `encoder` turns (array geometry, layout) into a *plan*, `run(x, out)`, cached per
(layout, dims, strides, element type) so a repeated call costs a dict lookup and one kernel call:

1. `_fast_plan`: `_fast_form` (in `tiling._geometry`, with the other pure geometry and tables)
   rewrites `*` runs and 1-D tile chains into one 2-D tile where the array's strides allow;
   `choose_kernel` names the family of the result ("tiled", "packed", or "generic"); the plan
   then takes, from `tiling._kernels`, `tiny_tiles` (T(a, tc), tc <= 4,
   (a, tc) in `TINY_TILES`), `encode_square` (a transposed source of 32/64-bit elements),
   `encode_tiled`, or `encode_packed`, with its `_par` twin for arrays of PARALLEL_BYTES or more;
2. else `_generic_plan`: tables for `move` (any layout the reference accepts), or the
   permutation kernels `scatter`/`gather` for C-contiguous arrays of at most PERM_MAX elements
   whose runs are at most PERM_RUN long.

Until numba is loaded, and while a kernel compiles on the background thread (`NotReady`), the
plan is None and `tiling._reference` serves the call, bit-identically. `_call`/`_call_fast` run a
kernel, its first call in a process under the locks of "Calling kernels" and "Fork safety".
`decode_into` mirrors all of it; `relayout_into` plans a buffer-to-buffer rewrite.

To add a fast path: write the kernel pair beside its family in `tiling/_kernels/` (a new family:
a module with its reference behaviour in its docstring, and `_par` twins in `parallel.py`),
export it from `tiling/_kernels/__init__.py`, pick it in `_fast_plan` (and, for a new tile form,
in `choose_kernel`, with a row in `FAST_PATHS`), and add its layouts to `tests/tiling/
test_kernels.py` (against `_reference`, including the bounds and guard-page children) and to
`asv_bench/benchmarks/tiling.py`. Tuning constants go into `tiling/_tuning.py`.
"""

from __future__ import annotations

import fcntl
import glob
import math
import os
import sys
import threading
import time

import numpy as np

from tiling import _reference
from tiling._geometry import (
    _add_word_dim, _batch_offsets, _buffer_positions, _fast_form, _geometry, _kernel_args, _loop,
    _num_final, _paired_rows, _positions, _Side, _side_for_array, _side_for_layout, _span,
    _square_rows, _storage_bits, _words,
)
from tiling._tuning import (
    FAST_REFERENCE_BYTES, MAX_PLANS, PARALLEL_BYTES, PERM_MAX, PERM_RUN, PLAN_CACHE_BYTES,
    REFERENCE_BUDGET_SECONDS, ROW_MAJOR_MAX, SMALL_BYTES, STREAM_SHARE, WORKQUEUE_PARALLEL_BYTES,
)
from tiling.dtypes import ElementType
from tiling.layout import COMBINE_DIMENSION, Layout

__all__ = ["FAST_PATHS", "choose_kernel", "encode_into", "decode_into", "load_kernels"]

FAST_PATHS: dict[tuple[int, tuple[tuple[int, ...], ...]], str] = {
    # (bits per stored element, tiles) -> kernel family. Any other single tile of one or two
    # entries also takes "tiled", and any other (a,tc)(p,1) with p*bits == 32, a % p == 0 takes
    # "packed"; these rows are the formats the benchmarks and tests pin down.
    (32, ((8, 128),)): "tiled",
    (32, ((4, 128),)): "tiled",
    (32, ((2, 128),)): "tiled",
    (32, ((1, 128),)): "tiled",
    (16, ((8, 128), (2, 1))): "packed",
    (8, ((8, 128), (4, 1))): "packed",
    (4, ((8, 128), (8, 1))): "packed",
    (1, ((32, 128), (32, 1))): "packed",
}


def choose_kernel(bits: int, container_bits: int, tiles: tuple[tuple[int, ...], ...]) -> str:
    """"tiled", "packed" or "generic" for a layout's tiles and storage bits.

    >>> choose_kernel(16, 16, ((8, 128), (2, 1))), choose_kernel(32, 32, ((4, 8), (2, 1)))
    ('packed', 'generic')
    """
    if any(COMBINE_DIMENSION in t for t in tiles) or container_bits > 64:
        return "generic"
    if bits == container_bits and (not tiles or (len(tiles) == 1 and len(tiles[0]) <= 2)):
        return "tiled"
    if (len(tiles) == 2 and len(tiles[0]) == 2 and len(tiles[1]) == 2 and tiles[1][1] == 1
            and bits <= container_bits and tiles[1][0] * bits == 32
            and tiles[0][0] % tiles[1][0] == 0 and (bits >= 8 or container_bits == 8)):
        return "packed"
    return "generic"


# ---------------------------------------------------------------------------------------------
# Numba is imported on first need. Importing numba and initialising its compiler takes 0.5-1 s,
# far more than the numpy reference needs for a small array, so until the kernels are loaded,
# arrays of at most SMALL_BYTES (FAST_REFERENCE_BYTES for the fast-path formats, below) go to
# `_reference` (bit-identical, and held so by the tests); the kernels load on the first larger
# array, or once the reference has spent REFERENCE_BUDGET_SECONDS in this process.

_kernels = None
_reference_seconds = 0.0


def load_kernels():
    """Imports `tiling._kernels` (and numba); later calls always take the Numba engine."""
    global _kernels
    if _kernels is None:
        from tiling import _kernels as kernels
        _kernels = kernels
    return _kernels


# The fast-path formats (`choose_kernel` "tiled"/"packed") run in the reference in a tenth of
# numba's load time, so a process's first call takes the reference up to FAST_REFERENCE_BYTES
# for them; the budget then ends it.


def _on_reference(nbytes: int, layout: Layout | None = None,
                  element: ElementType | None = None) -> bool:
    if _kernels is not None:
        return False
    if _reference_seconds < REFERENCE_BUDGET_SECONDS and nbytes <= SMALL_BYTES:
        return True
    if (_reference_seconds < REFERENCE_BUDGET_SECONDS and layout is not None
            and nbytes <= FAST_REFERENCE_BYTES
            and choose_kernel(_storage_bits(layout, element), element.container.itemsize * 8,
                              tuple(t.dimensions for t in layout.tiles)) != "generic"):
        return True
    if not BACKGROUND_COMPILE or _LOAD in _FOREGROUND:
        return False
    _queue(_LOAD, ())  # numba loads on the background thread; the reference serves meanwhile
    return True


def _timed(fn, *args) -> None:
    global _reference_seconds
    start = time.perf_counter()
    fn(*args)
    _reference_seconds += time.perf_counter() - start


# ---------------------------------------------------------------------------------------------
# Calling kernels: the first call of each kernel in a process runs under a file lock


_WARM: set = set()  # the kernels past their first call in this process
_FIRST_CALL_LOCK = threading.Lock()  # held by a thread through a kernel's first call
_flock_handle = None  # the lock file while a first call holds its flock


def _call(kernel, *args) -> None:
    if kernel in _WARM:
        kernel(*args)
    elif not BACKGROUND_COMPILE or kernel in _FOREGROUND:
        _first_call(kernel, args)
    else:
        _queue(kernel, args)
        raise NotReady


# ---------------------------------------------------------------------------------------------
# Background compiles. No public call waits for numba: a call that needs a kernel that has not
# had its first call in this process (a compile, or a load from the on-disk cache) queues that
# first call on one daemon thread and raises NotReady, which `encode_into`, `decode_into`,
# `relayout_into` and `tiling.codec` answer with the numpy reference (bit-identical); once the
# thread has compiled the kernel, calls take it. Loading numba itself goes the same way (`_LOAD`).
# The thread runs one job at a time under _FIRST_CALL_LOCK, so a fork waits for at most the
# compile in progress (see "Fork safety"); a forked child starts its own thread when it needs
# one. A job that fails leaves its kernel to the caller's own first call (`_FOREGROUND`), where
# the error surfaces as it would have without the thread.
# BACKGROUND_COMPILE False (TILING_BACKGROUND_COMPILE=0): first calls compile in the calling
# thread, as a script that runs a few calls and exits needs to fill the on-disk cache (the
# thread is a daemon: an exit drops its compile), and the tests' kernel checks need.

BACKGROUND_COMPILE = os.environ.get("TILING_BACKGROUND_COMPILE", "1") != "0"


class NotReady(Exception):
    """A kernel the call needs is still compiling on the background thread."""


_LOAD = "load numba"  # the job that imports `tiling._kernels`
_QUEUE: list = []  # [(kernel or _LOAD, numba signature)], oldest first
_QUEUED: set = set()  # every kernel queued or compiling (never twice)
_FOREGROUND: set = set()  # jobs that failed on the thread: the caller does them itself
_QUEUE_LOCK = threading.Lock()
_worker: threading.Thread | None = None


def _queue(kernel, args) -> None:
    """Queues `kernel`'s first call for the types of `args`, starting the thread if none runs."""
    global _worker
    with _QUEUE_LOCK:
        if kernel in _QUEUED:
            return
        _QUEUED.add(kernel)
        _QUEUE.append((kernel, tuple(kernel.typeof_pyval(a) for a in args)
                       if kernel is not _LOAD else ()))
        if _worker is None:
            _worker = threading.Thread(target=_work, name="tiling-compile", daemon=True)
            _worker.start()


def _work() -> None:
    global _worker
    import logging  # noqa: F401 (its at-fork handlers first: ours must run before them)
    _register_fork_handlers()
    while True:
        with _QUEUE_LOCK:
            if not _QUEUE:
                _worker = None
                return
            kernel, signature = _QUEUE.pop(0)
        try:
            if kernel is _LOAD:
                with _FIRST_CALL_LOCK:
                    load_kernels()
            else:
                _first_call(kernel, signature=signature)
        except Exception:
            _FOREGROUND.add(kernel)


def _after_fork_in_queue_child() -> None:
    """The thread does not survive a fork: the child queues afresh what it needs."""
    global _QUEUE_LOCK, _worker
    _QUEUE_LOCK = threading.Lock()
    _QUEUE.clear()
    _QUEUED.clear()
    _worker = None


os.register_at_fork(after_in_child=_after_fork_in_queue_child)


def _first_call(kernel, args=(), signature=None) -> None:
    """Runs a kernel's first call in this process (or with `signature`, compiles it for those
    types without running it) under a cross-process file lock.

    Two processes filling one cold numba cache can pair an index entry with the other's data file
    (numba issues 4807, 10128); the lock serialises compile-and-save between processes using this
    package. Should loading a cache entry fail anyway, the kernel drops its cache and compiles in
    memory, so a damaged cache costs time, never the user's call. First calls also hold
    _FIRST_CALL_LOCK, which a fork waits for (see "Fork safety" below).
    """
    global _flock_handle
    _register_fork_handlers()
    with _FIRST_CALL_LOCK:
        if _kernels.CACHE_ENABLED:
            try:
                os.makedirs(_kernels.CACHE_DIR, exist_ok=True)
                _flock_handle = open(os.path.join(_kernels.CACHE_DIR, "first-call.lock"), "a")
                fcntl.flock(_flock_handle, fcntl.LOCK_EX)
            except OSError:  # no lock to be had: numba's atomic renames still apply
                _close_flock()
        run = kernel.compile if signature is not None else kernel
        args = (signature,) if signature is not None else args
        try:
            try:
                run(*args)
            except Exception:
                if not _kernels.CACHE_ENABLED:
                    raise
                from numba.core.caching import NullCache
                kernel._cache = NullCache()
                run(*args)
        finally:
            _close_flock()
        _WARM.add(kernel)


def _close_flock() -> None:
    global _flock_handle
    if _flock_handle is not None:
        _flock_handle.close()
        _flock_handle = None


# Fork safety. A fork while another thread is in a first call would leave the child with locks
# whose owner does not exist there: the flock, held on an open file description the child
# inherits (so the parent's lock would also last until the child exits), numba's compiler lock
# (held while compiling and while loading from the cache) and LLVM's own. So a fork first waits
# for the first call and any compile in progress to end, holding both locks across the fork.
# The handlers are registered at the first first call, after numba and `logging` have registered
# theirs: `before` handlers run in reverse order, so ours waits while no other handler holds a
# lock that the compile may need (logging's, in a compile that imports scipy, did deadlock).
# Should the wait exceed FORK_WAIT_SECONDS, the fork goes ahead and the child drops the
# parent's holds: the flock's descriptor is pointed at /dev/null and the locks are replaced.
FORK_WAIT_SECONDS = 120.0
_HELD_AT_FORK: list = []
_locks_at_fork: tuple = ()
_fork_handlers_registered = False


def _register_fork_handlers() -> None:
    global _fork_handlers_registered
    if not _fork_handlers_registered:
        _fork_handlers_registered = True
        os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                            after_in_child=_after_fork_in_first_call_child)


def _numba_locks() -> tuple:
    """numba's compiler lock, once numba is loaded (it may be loading on the compile thread)."""
    module = sys.modules.get("numba.core.compiler_lock")
    return () if module is None else (module.global_compiler_lock._lock,)


def _before_fork() -> None:
    global _locks_at_fork
    _locks_at_fork = (_FIRST_CALL_LOCK,) + _numba_locks()
    for lock in _locks_at_fork:
        if lock.acquire(timeout=FORK_WAIT_SECONDS):
            _HELD_AT_FORK.append(lock)


def _after_fork_in_parent() -> None:
    while _HELD_AT_FORK:
        _HELD_AT_FORK.pop().release()


def _after_fork_in_first_call_child() -> None:
    global _FIRST_CALL_LOCK, _flock_handle
    if len(_HELD_AT_FORK) == len(_locks_at_fork):
        _after_fork_in_parent()
        return
    _HELD_AT_FORK.clear()  # a wait that timed out: drop what another thread holds
    if _flock_handle is not None:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, _flock_handle.fileno())
        os.close(null)
        _flock_handle = None
    _FIRST_CALL_LOCK = threading.Lock()
    if _numba_locks():
        sys.modules["numba.core.compiler_lock"].global_compiler_lock._lock = threading.RLock()


# ---------------------------------------------------------------------------------------------
# Parallel fast paths: arrays of at least PARALLEL_BYTES run the kernels' `_par` twins (numba
# threads over tile rows) when the numba cache is on (`_parallel_allowed`). OpenMP and TBB launch
# in about 2 µs, so 1 MiB already gains; numba's own `workqueue`
# layer takes about 60 µs, so once the first launch shows that layer, the threshold rises to
# WORKQUEUE_PARALLEL_BYTES.
# The threading layer numba picks (TBB, else OpenMP, else its own `workqueue`) has two ways to
# abort the process, which the guard below keeps a user's call from reaching:
#   - `workqueue` is not reentrant: two Python threads launching parallel kernels at once
#     terminate the process. Only the thread holding _PARALLEL_LOCK runs a `_par` kernel; a
#     thread that finds it taken runs the serial kernel instead (same bits, no waiting). Parallel
#     numba code of the user's own, run concurrently from another thread, is outside this guard.
#   - GNU OpenMP terminates a fork()ed child that runs a parallel region after its parent did,
#     so once one process has launched a `_par` kernel, its forked children stay serial (set by an
#     at-fork hook; a child of a process that never launched one may go parallel: asv's forkserver
#     and multiprocessing workers).
# The thread count is numba's (`NUMBA_NUM_THREADS`, `numba.set_num_threads`); with
# NUMBA_NUM_THREADS=1 every call stays serial.

def _last_level_cache_bytes() -> int:
    """The largest CPU cache (Linux sysfs), else 32 MiB."""
    sizes = []
    for path in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*/size"):
        try:
            with open(path) as f:
                text = f.read().strip().upper()
            sizes.append(int(text.rstrip("KMG")) << {"K": 10, "M": 20, "G": 30}.get(text[-1], 0))
        except (OSError, ValueError, IndexError):
            pass
    return max(sizes, default=32 << 20)


STREAM_BYTES = _last_level_cache_bytes()
"""Decodes whose array and buffer together take at least this many bytes, and encodes that take
more, write their output with streaming stores where their kernel has them (see
`_kernels.llvm._store_block`; the packed decoders up to STREAM_SHARE times this size only in part:
`_stream_mode`). At about this size plain stores encode faster and streaming ones decode faster;
well above it, streaming encodes faster too."""
_NO_CARRY = np.empty(0, np.uint8)  # the tiled kernels' carry slots when they do not stream


def _stream_mode(nbytes: int, encode: bool, packed: bool) -> int:
    """The packed and tiled kernels' `stream` for an array and buffer of `nbytes` together: 0
    plain stores, 1 streaming stores, 2 (packed decoders) streaming stores for the rows of each
    tile's first half of word groups and plain ones for the rest (the plain half can stay in
    the cache beside the input, the streamed half reads no lines in): from the cache size to
    STREAM_SHARE times it, that mix decoded faster than streaming every row."""
    if encode:
        return int(nbytes > STREAM_BYTES)
    if nbytes < STREAM_BYTES:
        return 0
    return 2 if packed and nbytes <= STREAM_SHARE * STREAM_BYTES else 1

_parallel_bytes = PARALLEL_BYTES  # WORKQUEUE_PARALLEL_BYTES once numba's layer is known to be it
_PARALLEL_LOCK = threading.Lock()
_PARALLEL_PID: int | None = None  # the process that launched a `_par` kernel, once one has


def _after_fork_in_child() -> None:
    global _parallel_bytes, _PARALLEL_LOCK
    if _PARALLEL_PID is not None:  # the parent launched a `_par` kernel: stay serial
        _parallel_bytes = math.inf
    _PARALLEL_LOCK = threading.Lock()  # a parent thread's hold on it ends with the fork


os.register_at_fork(after_in_child=_after_fork_in_child)


def _parallel_allowed(nbytes: int) -> bool:
    """Whether a plan for an array of `nbytes` may take the `_par` kernels.

    Not without the on-disk cache: a `_par` kernel compiles in about 2.5 s against 1.0 s for the
    serial one (f32 T(8,128), measured), which an uncached process would pay every run to save
    about 1 ms per 64 MiB call. With the cache the extra compile happens once per machine.
    """
    return (nbytes >= PARALLEL_BYTES and _kernels.CACHE_ENABLED
            and _kernels.numba.config.NUMBA_NUM_THREADS > 1)


def _call_fast(kernel, par, nbytes, *args) -> None:
    """`par(*args)` when allowed (see above), else `kernel(*args)`; `par` None means serial.
    (`_call` written out: this runs on every call of the fast paths.)"""
    if (par is not None and nbytes >= _parallel_bytes
            and (par in _WARM or not BACKGROUND_COMPILE or par in _FOREGROUND)
            and _PARALLEL_LOCK.acquire(False)):
        try:
            if _PARALLEL_PID is None:
                _first_parallel_call(par, args)
            elif par in _WARM:
                par(*args)
            else:
                _first_call(par, args)
        finally:
            _PARALLEL_LOCK.release()
    elif kernel in _WARM:
        kernel(*args)
        if (par is not None and nbytes >= _parallel_bytes and par not in _WARM
                and BACKGROUND_COMPILE and par not in _FOREGROUND):
            _queue(par, args)
    else:
        _call(kernel, *args)


def _first_parallel_call(par, args) -> None:
    """The process's first `_par` launch: remembers the process (see above), and raises the
    threshold once it knows numba's layer is `workqueue`."""
    global _PARALLEL_PID, _parallel_bytes
    _PARALLEL_PID = os.getpid()
    _call(par, *args)
    if _kernels.numba.threading_layer() == "workqueue":
        _parallel_bytes = WORKQUEUE_PARALLEL_BYTES


# ---------------------------------------------------------------------------------------------
# Plans: everything that depends only on (dims, strides, dtype, layout), computed once


_PLANS: dict = {}
"""Plans by (layout, direction, dims, strides, dtype, element type), keyed by value (`Layout`
keeps its hash); emptied, with the caches holding plans (`_ON_FORGET`), past MAX_PLANS entries or
PLAN_CACHE_BYTES of tables (permutations, position tables), so distinct large shapes never pile
up."""
_plan_bytes = 0
_ON_FORGET: list = []  # other caches holding plans (codec's calls), emptied too


def _held_bytes(obj, depth: int = 0) -> int:
    """The bytes of the numpy arrays a plan holds (through closures, tuples, `_Side`s)."""
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if depth > 6:
        return 0
    if isinstance(obj, (tuple, list)):
        return sum(_held_bytes(x, depth + 1) for x in obj)
    if isinstance(obj, dict):
        return sum(_held_bytes(x, depth + 1) for x in obj.values())
    if isinstance(obj, _Side):
        return _held_bytes(obj.tables, depth + 1)
    cells = getattr(obj, "__closure__", None) or ()
    return sum(_held_bytes(c.cell_contents, depth + 1) for c in cells
               if c.cell_contents is not obj)


def _forget_plans() -> None:
    global _plan_bytes
    _PLANS.clear()
    _plan_bytes = 0
    for forget in _ON_FORGET:
        forget()


def _plan(key, layout, build):
    """The plan for `key` (which holds everything but the layout) and `layout`."""
    global _plan_bytes
    plan = _PLANS.get((layout,) + key)
    if plan is None:
        plan = build()
        size = _held_bytes(plan)
        if len(_PLANS) >= MAX_PLANS or _plan_bytes + size > PLAN_CACHE_BYTES:
            _forget_plans()
        _PLANS[(layout,) + key] = plan
        _plan_bytes += size
    return plan


def _fast_plan(a: np.ndarray, layout: Layout, element: ElementType, encode: bool,
               row_step: int | None = None):
    """Plan for the "tiled"/"packed" kernels, or None. `a` is the logical container array.

    `row_step` (encode only): bytes between tile rows in `out` when `out` is a band of tile
    columns of a wider buffer (`_transposed_relayout`); `out` then starts at the band's first
    tile and nothing past its tiles is written.
    """
    nbits = _storage_bits(layout, element)
    geometry = _geometry(a)
    if a.size == 0 or geometry is None:
        return None
    base, strides = geometry
    m2m = layout.major_to_minor
    physical = tuple(a.shape[d] for d in m2m)
    used = -(-_num_final(physical, layout) * nbits // 8)
    dims, pstrides, tiles = _fast_form(physical, tuple(strides[d] for d in m2m),
                                       tuple(t.dimensions for t in layout.tiles))
    unit = None
    paired = _paired_rows(dims, pstrides, base, tiles, nbits, a.itemsize * 8)
    if paired is not None:
        dims, pstrides, base, tiles, unit = paired
        nbits = unit.itemsize * 8
    kind = choose_kernel(nbits, (unit or a.dtype).itemsize * 8, tiles)
    if kind == "generic":
        return None
    phys, pstrides = (1, 1) + dims, (0, 0) + pstrides
    R, C = phys[-2], phys[-1]
    if not tiles:
        tr, tc = 1, C
    elif len(tiles[0]) == 2:
        tr, tc = tiles[0]
    else:
        tr, tc = 1, tiles[0][0]
    while len(phys) > 2 and R % tr == 0 and pstrides[-3] == R * pstrides[-2]:
        # a batch dim that walks on from the last row is more rows of whole tile rows: longer
        # runs per kernel call (the square kernels align their blocks once per batch)
        R *= phys[-3]
        phys, pstrides = phys[:-3] + (R, C), pstrides[:-3] + pstrides[-2:]
    boffs = _batch_offsets(phys[:-2], pstrides[:-2], base)
    rs, cs = pstrides[-2], pstrides[-1]

    short = kind == "tiled" and tr > 1 and tc <= PERM_RUN and row_step is None
    if short and cs == 1 and (tr, tc) in _kernels.TINY_TILES:
        word = unit or a.dtype
        kernel, par = _kernels.tiny_tiles(tr, tc)[0 if encode else 1::2]
        args = (boffs, rs, R, C)
        step = -(-C // tc) * tr * tc
    elif short and a.flags.c_contiguous and a.size <= PERM_MAX:
        return None  # runs this short: the permutation path is faster
    elif kind == "tiled":
        word = unit or a.dtype
        square = _square_rows(tr, tc, rs, cs, word.itemsize)
        if square and encode:
            kernel, par = _kernels.encode_square, _kernels.encode_square_par
        elif square:
            kernel, par = _kernels.decode_square, _kernels.decode_square_par
        elif encode:
            kernel, par = _kernels.encode_tiled, _kernels.encode_tiled_par
        else:
            kernel, par = _kernels.decode_tiled, _kernels.decode_tiled_par
        args = (boffs, rs, cs, R, C, tr, tc) + ((square,) if square else ())
        step = -(-C // tc) * tr * tc
    else:
        word = np.dtype(np.uint32)
        kernel, par = ((_kernels.encode_packed, _kernels.encode_packed_par) if encode
                       else (_kernels.decode_packed, _kernels.decode_packed_par))
        args = (boffs, rs, cs, R, C, tr, tc, tiles[1][0], nbits)
        step = -(-C // tc) * (tr // tiles[1][0]) * tc
    nbytes = a.nbytes
    # the packed and tiled kernels' last argument: streaming stores (`_kernels.llvm._store_block`);
    # the tiled ones then take a carry slot per tile row (and row of a tile, decoding) after it
    stream = _stream_mode(nbytes + used, encode, kind == "packed")
    tiled = kernel in (_kernels.encode_tiled, _kernels.decode_tiled)
    last = (stream,) if kind == "packed" else (stream, _NO_CARRY) if tiled else ()
    carry = boffs.size * -(-R // tr) * (1 if encode else tr) * 64 if tiled and stream else 0
    if not _parallel_allowed(nbytes):
        par = None
    if row_step is not None:  # the band's tile rows: all but the last one row_step apart
        rows = boffs.size * -(-R // tr)
        used = (rows - 1) * row_step + step * word.itemsize
        step = row_step // word.itemsize
    # The closures below run on every call: each step they skip counts against a few
    # microseconds of Python per call.
    contiguous = a.flags.c_contiguous  # (every array a plan serves has a's strides)
    target, container = unit or a.dtype, a.dtype

    def span(x):  # x: `a`'s kind of container view, or the logical array (same item size;
        # as `a` first: numpy's as_strided, under `_span`, refuses ml_dtypes' float8 types)
        return (x.ravel() if contiguous else _span(x.view(container))).view(target)
    # (a carry per call: calls from several Python threads may run at once)
    if encode:
        def run(x, out):
            whole = used == out.size
            tail = (stream, np.empty(carry, np.uint8)) if carry else last
            _call_fast(kernel, par, nbytes, span(x), *args,
                       (out if whole else out[:used]).view(word), step, *tail)
            if not whole:
                out[used:] = 0
    else:
        def run(buf, out):
            tail = (stream, np.empty(carry, np.uint8)) if carry else last
            _call_fast(kernel, par, nbytes, (buf if used == buf.size else buf[:used]).view(word),
                       *args, span(out), step, *tail)
    run.takes_logical = True  # `tiling.codec` may skip the container view (see `span`)
    return run


def _generic_plan(a: np.ndarray, layout: Layout, element: ElementType, encode: bool):
    """Plan for the table-driven `move` kernel; `a` is the logical container array."""
    if _geometry(a) is None:
        return None
    dims = a.shape
    nbits = _storage_bits(layout, element)
    natural = a.itemsize * 8
    words = 2 if a.itemsize == 16 else 1
    word = np.dtype(np.uint64) if words == 2 else a.dtype
    physical = tuple(dims[d] for d in layout.major_to_minor)
    n_final = _num_final(physical, layout)
    used = -(-n_final * nbits // 8)
    order, sizes = _loop(dims, layout, words)
    side = _side_for_layout(dims, layout, words)
    if words == 2:
        side = _add_word_dim(side)
    sizes, array_args, layout_args = _kernel_args([_side_for_array(a), side], order, sizes,
                                                  item=word.itemsize, writes=1 if encode else 0)
    has_padding = n_final > a.size
    if (words == 1 and nbits == natural and 0 < a.size <= PERM_MAX and a.flags.c_contiguous
            and min(array_args[4], layout_args[4]) <= PERM_RUN):
        return _perm_plan(dims, layout, word, used, n_final, encode)

    if encode:
        def run(x, out):
            if x.size == 0:
                out.fill(0)
                return
            if nbits == natural:
                dst = out[:used].view(word)
            else:
                dst = np.zeros(n_final * words, word) if has_padding else np.empty(n_final, word)
            if has_padding and nbits == natural:
                dst.fill(0)
            _call(_kernels.move, sizes, _span(_words(x)), *array_args, dst, *layout_args)
            _store(dst, element, nbits, natural, used, out)
    else:
        def run(buf, out):
            if out.size == 0:
                return
            src = _stored(buf, element, nbits, natural, n_final, used, word)
            _call(_kernels.move, sizes, src, *layout_args, _span(_words(out)), *array_args)
    return run


def _stored(buf, element, nbits, natural, n_final, used, word):
    """The `n_final` stored elements of `buf` as containers (a view when stored at full width)."""
    if nbits == natural:
        return buf[:used].view(word)
    if nbits < 8:
        values = np.empty(n_final, np.uint8)
        _call(_kernels.unpack_bits, buf, nbits, values)
        return values
    return np.ascontiguousarray(_reference.unpack(buf, element, nbits, n_final))


def _store(values, element, nbits, natural, used, out):
    """Writes containers `values` into `out` at `nbits` per element and zeroes the tail; at full
    width `values` already is `out[:used]`."""
    if nbits >= 8 and nbits != natural:
        _reference.pack(values, element, nbits, out)
        return
    if nbits < 8:
        _call(_kernels.pack_bits, values, nbits, out[:used])
    out[used:] = 0


# The permutation path (`_kernels.scatter`/`gather`): for C-contiguous arrays of at most
# PERM_MAX elements whose `move` plan has an inner run of at most PERM_RUN elements; its int32
# table costs 4 bytes per element, held in the plan cache.


def _perm_plan(dims, layout: Layout, word: np.dtype, used: int, n_final: int, encode: bool):
    perm = _buffer_positions(dims, layout)
    if encode:
        def run(x, out):
            dst = out[:used].view(word)
            if n_final > perm.size:
                dst.fill(0)
            _call(_kernels.scatter, x.reshape(-1), perm, dst)
            out[used:] = 0
    else:
        def run(buf, out):
            _call(_kernels.gather, buf[:used].view(word), perm, out.reshape(-1))
    return run


def _array_plan(a: np.ndarray, layout: Layout, element: ElementType, encode: bool):
    load_kernels()
    plan = _fast_plan(a, layout, element, encode) or _generic_plan(a, layout, element, encode)
    if plan is not None:
        return plan
    # strides that are not whole elements: work on a C-contiguous copy
    inner = _array_plan(np.empty(a.shape, a.dtype), layout, element, encode)
    if encode:
        return lambda x, out: inner(np.ascontiguousarray(x), out)

    def run(buf, out):
        tmp = np.empty(out.shape, out.dtype)
        inner(buf, tmp)
        out[...] = tmp
    return run


def encoder(bits: np.ndarray, layout: Layout, element: ElementType, nbytes: int):
    """The plan `run(bits, out)` for arrays like `bits` (container view: its shape, strides and
    dtype) into `nbytes` of `layout`, or None while the numpy reference serves such calls."""
    if _on_reference(nbytes, layout, element):
        return None
    key = (True, bits.shape, bits.strides, bits.dtype, element.name)
    return _plan(key, layout, lambda: _array_plan(bits, layout, element, True))


def decoder(out: np.ndarray, layout: Layout, element: ElementType, nbytes: int):
    """The plan `run(buf, out)` from `nbytes` of `layout` into arrays like `out`, or None (see
    `encoder`)."""
    if _on_reference(nbytes, layout, element):
        return None
    key = (False, out.shape, out.strides, out.dtype, element.name)
    return _plan(key, layout, lambda: _array_plan(out, layout, element, False))


def encode_into(bits: np.ndarray, layout: Layout, element: ElementType, out: np.ndarray) -> None:
    """Writes the logical array `bits` (container view, any strides) into `out` (uint8)."""
    run = encoder(bits, layout, element, out.size)
    if run is not None:
        try:
            return run(bits, out)
        except NotReady:
            pass
    _timed(_reference.encode_into, bits, layout, element, out)


def decode_into(buf: np.ndarray, layout: Layout, element: ElementType, out: np.ndarray) -> None:
    """Reads `buf` (uint8) into `out`, the container view of the logical result array."""
    run = decoder(out, layout, element, buf.size)
    if run is not None:
        try:
            return run(buf, out)
        except NotReady:
            pass
    _timed(_reference.decode_into, buf, layout, element, out)


# ---------------------------------------------------------------------------------------------
# Copy-equivalent layouts: when every element sits at its row-major position (e.g. one
# f32[8,128] tile under T(8,128)), the buffer is the C-order array's bytes and a plain copy is
# the whole encode/decode. `codec` caches this per (layout, dtype, dims) to cut per-call cost.



def is_row_major(dims: tuple[int, ...], layout: Layout, element: ElementType) -> bool:
    """Whether `layout` puts element i of the C-order array at buffer element i, with no
    padding and whole containers (so encode and decode are byte copies)."""
    natural = element.container.itemsize * 8
    n = math.prod(dims)
    if (not dims or n == 0 or n > ROW_MAJOR_MAX or element.bit_width != natural
            or _storage_bits(layout, element) != natural):
        return False
    m2m = layout.major_to_minor
    physical = tuple(dims[d] for d in m2m)
    if _num_final(physical, layout) != n or n % layout.tail_padding_alignment_in_elements:
        return False  # (tile padding, `L(n)` padding)
    idx = np.indices(dims, dtype=np.int64).reshape(len(dims), -1)
    return bool(np.array_equal(_positions([idx[d] for d in m2m], physical, layout.tiles),
                               np.arange(n)))
