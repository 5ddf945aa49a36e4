"""The Numba engine behind `tiling.encode`, `tiling.decode` and `tiling.relayout`.

`encode_into`/`decode_into` have the signatures of their twins in `_reference.py`; `codec.py`
has checked every input before they run. This module turns a (layout, array) pair into a
*plan*, the arguments of one kernel from `_kernels.py`, and caches plans per
(dims, strides, layout, element type), so a repeated call costs a dict lookup and one kernel call.

Which kernel runs (`choose_kernel`): the fast paths in `FAST_PATHS` (one 2-D tile, or a 2-D tile
followed by `(p,1)` packing p rows into a 32-bit word; `_fast_form` first rewrites `*` runs and
1-D tile chains into those forms where the array's strides allow), else the generic `move`
kernel, which handles every layout the reference accepts (any `minor_to_major`, repeated tiles,
`*`, tiles longer than the rank, `L(n)`, any `E(n)`); a C-contiguous array of at most
`_PERM_MAX` elements whose `move` plan would copy runs of at most `_PERM_RUN` elements takes the
permutation kernels (`scatter`/`gather`) instead. `is_row_major` tells `codec` when a layout is a
plain byte copy of the C-order array, which it then does without the engine.
"""

from __future__ import annotations

import fcntl
import glob
import math
import os
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

from tiling import _reference
from tiling.dtypes import ElementType
from tiling.layout import COMBINE_DIMENSION, Layout, tile_steps, tiled_positions

__all__ = ["FAST_PATHS", "choose_kernel", "encode_into", "decode_into", "relayout_into",
           "load_kernels"]

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
# Arrays as (flat memory span, base offset, element strides)


def _geometry(a: np.ndarray) -> tuple[int, tuple[int, ...]] | None:
    """(offset of `a[0,...,0]` from the lowest address, strides), in elements; None if a stride
    is not a multiple of the item size (the caller then copies)."""
    item = a.itemsize
    if any(s % item for s in a.strides):
        return None
    strides = tuple(s // item for s in a.strides)
    return sum((d - 1) * -s for d, s in zip(a.shape, strides) if s < 0), strides


def _span(a: np.ndarray) -> np.ndarray:
    """A 1-D C-contiguous view of the memory `a` spans, from its lowest address (no copy).

    `a.size > 0` and its strides are multiples of its item size.
    """
    if a.flags.c_contiguous:
        return a.reshape(-1)
    item = a.itemsize
    span = 1 + sum((d - 1) * abs(s) for d, s in zip(a.shape, a.strides)) // item
    lowest = a[tuple(slice(None, None, -1) if s < 0 else slice(None) for s in a.strides)]
    return np.lib.stride_tricks.as_strided(lowest, shape=(span,), strides=(item,),
                                           writeable=lowest.flags.writeable)


def _as_words(a: np.ndarray) -> np.ndarray:
    """The uint64 view of a c128 (16-byte void) array: one more dim of size 2."""
    return a[..., None].view(np.uint64)


# ---------------------------------------------------------------------------------------------
# Tables for the generic kernel


@dataclass(frozen=True, slots=True)
class _Side:
    """Where each element of the index space sits on one side (see `_kernels.move`)."""

    grp: tuple[int, ...]      # per logical dim: its group
    rad: tuple[int, ...]      # per logical dim: its radix inside the group
    tables: tuple[np.ndarray, ...]  # per group: position of each group index


def _strided_side(shape: tuple[int, ...], base: int, strides: tuple[int, ...]) -> _Side:
    tables = [np.arange(d, dtype=np.int64) * s for d, s in zip(shape, strides)]
    tables[0] = tables[0] + base
    return _Side(tuple(range(len(shape))), (1,) * len(shape), tuple(tables))


def _positions(cols: list[np.ndarray], physical: tuple[int, ...], tiles) -> np.ndarray:
    """Linear positions of physical indices (one int64 column per physical dim), spec §3.6."""
    steps = tile_steps(physical, tiles)
    final = steps[-1].after if steps else physical
    return tiled_positions(cols, steps, final, (cols[0].shape[0] if cols else 1,))


def _layout_groups(physical: tuple[int, ...], tiles) -> list[list[int]]:
    """Physical dims that a `*` merge ties together (each group sorted major to minor)."""
    parent = list(range(len(physical)))

    def root(i):
        while parent[i] != i:
            i = parent[i]
        return i

    deps: list[frozenset[int]] = [frozenset([i]) for i in range(len(physical))]
    for step in tile_steps(physical, tiles):
        deps = [frozenset()] * (len(step.ones) - len(deps)) + deps
        start = len(step.ones) - len(step.spec)
        merged, acc = deps[:start], frozenset()
        for j, entry in enumerate(step.spec):
            acc = acc | deps[start + j]
            if entry != COMBINE_DIMENSION:
                merged.append(acc)
                acc = frozenset()
        for dep in merged:
            ids = sorted(dep)
            for i in ids[1:]:
                parent[root(i)] = root(ids[0])
        p = len(merged) - len(step.tile)
        deps = merged[:p] + merged[p:] + merged[p:]
    groups: dict[int, list[int]] = {}
    for i in range(len(physical)):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


def _layout_side(dims: tuple[int, ...], layout: Layout, scale: int) -> _Side:
    """Tables giving each logical element's position (in elements, times `scale`)."""
    m2m = layout.major_to_minor
    physical = tuple(dims[a] for a in m2m)
    tiles = layout.tiles
    grp = [0] * len(dims)
    rad = [1] * len(dims)
    tables = []
    for g, members in enumerate(_layout_groups(physical, tiles)):
        sizes = [physical[p] for p in members]
        grid = np.indices(sizes, dtype=np.int64).reshape(len(sizes), -1)
        cols = [np.zeros(grid.shape[1], np.int64) for _ in physical]
        radix = 1
        for k in range(len(members) - 1, -1, -1):
            cols[members[k]] = grid[k]
            grp[m2m[members[k]]] = g
            rad[m2m[members[k]]] = radix
            radix *= sizes[k]
        tables.append(_positions(cols, physical, tiles) * scale)
    return _Side(tuple(grp), tuple(rad), tuple(tables))


def _dummy_side(base: int = 0) -> _Side:
    return _Side((0,), (1,), (np.array([base], np.int64),))


def _add_word_dim(side: _Side) -> _Side:
    """c128 moves as two uint64 words: a most-minor index dim of size 2 at offsets 0 and 1."""
    return _Side(side.grp + (len(side.tables),), side.rad + (1,),
                 side.tables + (np.arange(2, dtype=np.int64),))


def _run_of(table: np.ndarray) -> tuple[int, int]:
    """(run, step) with table[k] == table[k - k % run] + (k % run) * step for every k.

    The run is the first arithmetic stretch; when the rest of the table does not repeat that
    pattern, (1, 0): one lookup per element.
    """
    n = table.size
    if n <= 1:
        return 1, 0
    diffs = np.diff(table)
    step = int(diffs[0])
    changes = np.flatnonzero(diffs != step)
    run = n if changes.size == 0 else int(changes[0]) + 1
    if run < n:
        k = np.arange(n)
        if not np.array_equal(table, table[k - k % run] + (k % run) * step):
            return 1, 0
    return run, step


def _arithmetic(table: np.ndarray) -> int | None:
    """The step of a table that is base + k*step throughout, else None."""
    if table.size <= 1:
        return 0
    diffs = np.diff(table)
    return int(diffs[0]) if (diffs == diffs[0]).all() else None


def _mergeable(side, k: int, sizes: list[int]) -> bool:
    """Can loop dims k (outer) and k+1 become one dim of size sizes[k]*sizes[k+1] on `side`?"""
    grp, rad, tables = side
    if grp[k] == grp[k + 1]:  # one group, adjacent radices: the group index is unchanged
        return rad[k] == sizes[k + 1] * rad[k + 1]
    solo = [g for g in (grp[k], grp[k + 1]) if grp.count(g) == 1 and rad[grp.index(g)] == 1]
    if len(solo) < 2:
        return False
    outer, inner = _arithmetic(tables[grp[k]]), _arithmetic(tables[grp[k + 1]])
    return outer is not None and inner is not None and outer == sizes[k + 1] * inner


def _merge(side, k: int, sizes: list[int]):
    grp, rad, tables = side
    if grp[k] == grp[k + 1]:
        return grp[:k] + grp[k + 1:], rad[:k] + rad[k + 1:], tables
    outer, inner = tables[grp[k]], tables[grp[k + 1]]
    step = _arithmetic(inner)
    merged = outer[0] + inner[0] + np.arange(sizes[k] * sizes[k + 1], dtype=np.int64) * step
    tables = list(tables)
    tables[grp[k + 1]] = merged
    tables[grp[k]] = np.zeros(1, np.int64)  # group kept (no loop dim refers to it any more)
    return grp[:k] + grp[k + 1:], rad[:k] + rad[k + 1:], tables


# Cost model for picking the inner loop dim of `move`, fitted to 4096x4096 / 64^3 timings on the
# benchmark machine: about 5.3 ns per run (table lookups, loop set-up), plus per element ~1.2 ns
# for a stride past a cache line and 2.5 ns (read) / 4.2 ns (write) for one past a page.
_RUN_NS = 5.3


def _stride_ns(step_bytes: int, write: bool) -> float:
    if step_bytes <= 64:
        return 0.0
    if step_bytes <= 2048:
        return 1.2
    return 4.2 if write else 2.5


def _kernel_args(sides: list[_Side], order: tuple[int, ...], sizes, *, item: int,
                 writes: int) -> tuple:
    """`move` arguments for the sides (side `writes` is the destination, elements of `item`
    bytes), dims in loop `order` except the inner dim, picked by the cost model; size-1 dims
    dropped and neighbours merged where every side allows it, so the inner loop is long."""
    sizes = [int(n) for n in sizes]
    loop = [([side.grp[d] for d in order], [side.rad[d] for d in order], list(side.tables))
            for side in sides]

    def inner_cost(k):
        shortest, cost = None, 0.0
        for index, (g, r, t) in enumerate(loop):
            run, step = _run_of(t[g[k]]) if r[k] == 1 else (1, 0)
            shortest = run if shortest is None else min(shortest, run)
            cost += _stride_ns(abs(step) * item if run > 1 else 1 << 30, index == writes)
        return _RUN_NS / shortest + cost

    candidates = [k for k in range(len(sizes)) if sizes[k] > 1]
    if candidates and 0 not in sizes:
        best = min(candidates, key=lambda k: (inner_cost(k), -k))
        sizes = sizes[:best] + sizes[best + 1:] + [sizes[best]]
        loop = [(g[:best] + g[best + 1:] + [g[best]], r[:best] + r[best + 1:] + [r[best]], t)
                for g, r, t in loop]
    for k in range(len(sizes) - 1, -1, -1):  # a size-1 dim only adds its table's first entry
        if sizes[k] == 1 and len(sizes) > 1:
            sizes.pop(k)
            loop = [(g[:k] + g[k + 1:], r[:k] + r[k + 1:], t) for g, r, t in loop]
    k = len(sizes) - 2 if 0 not in sizes else -1  # (nothing moves when a dim is empty)
    while k >= 0:
        if all(_mergeable(side, k, sizes) for side in loop):
            loop = [_merge(side, k, sizes) for side in loop]
            sizes[k:k + 2] = [sizes[k] * sizes[k + 1]]
        k -= 1
    args = [np.array(sizes, np.int64)]
    for grp, rad, tables in loop:
        toff = np.cumsum([0] + [t.size for t in tables[:-1]]).astype(np.int64)
        tab = np.concatenate(tables).astype(np.int64)
        run, step = _run_of(tables[grp[-1]]) if rad[-1] == 1 else (1, 0)
        args.append((np.array(grp, np.int64), np.array(rad, np.int64), toff, tab, run, step))
    return tuple(args)


# ---------------------------------------------------------------------------------------------
# Numba is imported on first need. Importing numba and initialising its compiler takes 0.5-1 s,
# far more than the numpy reference needs for a small array, so until the kernels are loaded,
# arrays of at most SMALL_BYTES (FAST_REFERENCE_BYTES for the fast-path formats, below) go to
# `_reference` (bit-identical, and held so by the tests); the kernels load on the first larger
# array, or once the reference has spent REFERENCE_BUDGET_SECONDS in this process.

_kernels = None
SMALL_BYTES = 1 << 20
REFERENCE_BUDGET_SECONDS = 0.05
_reference_seconds = 0.0


def load_kernels():
    """Imports `tiling._kernels` (and numba); later calls always take the Numba engine."""
    global _kernels
    if _kernels is None:
        from tiling import _kernels as kernels
        _kernels = kernels
    return _kernels


# The fast-path formats (`choose_kernel` "tiled"/"packed") run in the reference at 15-50 ms for
# 64 MiB (measured, 4096x4096 f32/bf16/s8/s4/pred), a tenth of numba's load time, so a process's
# first call takes the reference up to FAST_REFERENCE_BYTES for them; the budget then ends it.
FAST_REFERENCE_BYTES = 64 << 20


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
# in about 2 µs, so 1 MiB already gains (1.3-1.7x, measured on 2 cores); numba's own `workqueue`
# layer takes about 60 µs, so once the first launch shows that layer, the threshold rises to
# WORKQUEUE_PARALLEL_BYTES (against 100-200 µs serial for 4 MiB, measured).
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
`_kernels._store_block`; the packed decoders up to 1.25x this size only in part: `_stream_mode`).
At exactly this size (s8 4096x4096 with a 32 MiB cache, repeated calls on 2 threads, medians of
four interleaved runs), plain stores encoded 1.05-1.2x faster and streaming ones decoded
1.03-1.17x faster; called once on evicted data, both took the same time. From 1.25x this size
up, streaming encoded faster (s8 4608x4608: 1.07x, 5120x5120: 1.37x)."""
_NO_CARRY = np.empty(0, np.uint8)  # the tiled kernels' carry slots when they do not stream


def _stream_mode(nbytes: int, encode: bool, packed: bool) -> int:
    """The packed and tiled kernels' `stream` for an array and buffer of `nbytes` together: 0
    plain stores, 1 streaming stores, 2 (packed decoders) streaming stores for the rows of each
    tile's first half of word groups and plain ones for the rest (the plain half can stay in
    the cache beside the input, the streamed half reads no lines in). From the cache size to
    1.25x it, that mix decoded faster than streaming every row: 2 threads, repeated calls, both
    kernels in one process, median ratio of 30-40 rounds: s8 4096x4096 (32 MiB) 0.87-0.88 in
    three runs, bf16 2048x4096 0.82, bf16 2560x4096 (40 MiB) 0.85, s8 5120x4096 (40 MiB) 1.03;
    at 48 MiB (s8 6144x4096) 1.08, so above 1.25x every row streams."""
    if encode:
        return int(nbytes > STREAM_BYTES)
    if nbytes < STREAM_BYTES:
        return 0
    return 2 if packed and 4 * nbytes <= 5 * STREAM_BYTES else 1

PARALLEL_BYTES = 1 << 20
WORKQUEUE_PARALLEL_BYTES = 8 << 20
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
_MAX_PLANS = 512
PLAN_CACHE_BYTES = 256 << 20
"""The plans' tables (permutations, position tables) held at most: past it the cache starts
afresh, so distinct large shapes never pile up (a permutation costs 4 bytes per element)."""
_plan_bytes = 0
_ON_FORGET: list = []  # other caches holding plans (codec's per-call shortcuts), emptied too


_BY_ID: dict = {}


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
    _BY_ID.clear()
    _plan_bytes = 0
    for forget in _ON_FORGET:
        forget()


def _plan(key, layout, build):
    """The plan for `key` (which holds everything but the layout) and `layout`.

    Looked up by the layout object's id first (hashing a Layout costs about as much as a small
    kernel call), then by value; the id entry keeps the layout alive, so ids are never reused.
    """
    global _plan_bytes
    entry = _BY_ID.get((id(layout),) + key)
    if entry is not None and entry[0] is layout:
        return entry[1]
    plan = _PLANS.get((layout,) + key)
    if plan is None:
        plan = build()
        size = _held_bytes(plan)
        if len(_PLANS) >= _MAX_PLANS or _plan_bytes + size > PLAN_CACHE_BYTES:
            _forget_plans()
        _PLANS[(layout,) + key] = plan
        _plan_bytes += size
    if len(_BY_ID) >= _MAX_PLANS:
        _BY_ID.clear()
    _BY_ID[(id(layout),) + key] = (layout, plan)
    return plan


def _storage_bits(layout: Layout, element: ElementType) -> int:
    return layout.element_size_in_bits or element.storage_bits


def _num_final(physical: tuple[int, ...], layout: Layout) -> int:
    steps = tile_steps(physical, layout.tiles)
    return math.prod(steps[-1].after if steps else physical)


def _batch_offsets(shape, strides, base: int) -> np.ndarray:
    """Element offset of the first element of every batch (all dims but the last two)."""
    off = np.full(1, base, np.int64)
    for d, s in zip(shape, strides):
        off = (off[:, None] + np.arange(d, dtype=np.int64) * s).reshape(-1)
    return off


def _fast_form(dims: tuple[int, ...], strides: tuple[int, ...], tiles):
    """An equivalent (physical dims, strides, tiles) the fast paths may take, else the inputs.

    Two rewrites, each exact where its checks pass:
    - a `*` run in the first tile merges its physical dims (spec §3.5) when one stride walks the
      row-major merged index (`T(2,*,128)` over a C-order array is `T(2,128)`);
    - a 1-D tile chain `(k)(m)` with m | k and m | the minor dim is `(k/m, m)` over that dim
      split into rows of m (`bf16[N]{0:T(1024)(128)(2,1)}` is `T(8,128)(2,1)` on [N/128, 128]);
      later tiles of at most two entries act on the same two dims in both forms.
    """
    if tiles and COMBINE_DIMENSION in tiles[0] and len(tiles[0]) <= len(dims):
        start = len(dims) - len(tiles[0])
        new_dims, new_strides, first = list(dims[:start]), list(strides[:start]), []
        size, stride = 1, 0
        for d, st, entry in zip(dims[start:], strides[start:], tiles[0]):
            if size == 1 or d == 1:
                size, stride = size * d, (st if size == 1 else stride)
            elif stride == d * st:
                size, stride = size * d, st
            else:
                return dims, strides, tiles
            if entry != COMBINE_DIMENSION:
                new_dims.append(size)
                new_strides.append(stride)
                first.append(entry)
                size, stride = 1, 0
        dims, strides, tiles = tuple(new_dims), tuple(new_strides), (tuple(first),) + tiles[1:]
    if (len(tiles) >= 2 and len(tiles[0]) == 1 and len(tiles[1]) == 1 and dims
            and all(len(t) <= 2 for t in tiles[2:])):
        (k,), (m,) = tiles[:2]
        if k % m == 0 and dims[-1] % m == 0:
            dims = dims[:-1] + (dims[-1] // m, m)
            strides = strides[:-1] + (m * strides[-1], strides[-1])
            tiles = ((k // m, m),) + tiles[2:]
    return dims, strides, tiles


_UNITS = {16: np.dtype(np.uint16), 32: np.dtype(np.uint32), 64: np.dtype(np.uint64)}


def _paired_rows(dims, strides, base: int, tiles, nbits: int, natural: int):
    """`T(a,tc)(p,1)` over rows that sit side by side in memory (row stride 1: a transposed
    array) is `T(a/p, tc)` over units of p elements, each read or written as one word:
    (dims, strides, base, tiles, unit dtype) of that form, else None."""
    if (len(tiles) != 2 or len(tiles[0]) != 2 or len(tiles[1]) != 2 or tiles[1][1] != 1
            or nbits != natural or len(dims) < 2 or strides[-2] != 1):
        return None
    (a, tc), (p, _) = tiles
    unit = _UNITS.get(p * nbits)
    if (unit is None or a % p or dims[-2] % p or base % p
            or any(st % p for st in strides[:-2] + strides[-1:])):
        return None
    return (dims[:-2] + (dims[-2] // p, dims[-1]),
            tuple(st // p for st in strides[:-2]) + (1, strides[-1] // p), base // p,
            ((a // p, tc),), unit)


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

    tiny = kind == "tiled" and tr > 1 and tc <= _PERM_RUN and row_step is None
    if tiny and cs == 1:  # (`_kernels.tiny_tiles`)
        word = unit or a.dtype
        kernel, par = _kernels.tiny_tiles(tr, tc)[0 if encode else 1::2]
        args = (boffs, rs, R, C)
        step = -(-C // tc) * tr * tc
    elif tiny and a.flags.c_contiguous and a.size <= _PERM_MAX:
        return None  # runs this short: the permutation path is 2.5x faster (T(2,3), measured)
    elif kind == "tiled":
        word = unit or a.dtype
        square = _square_rows(tr, tc, rs, cs, word.itemsize)
        if square:
            kernel = _kernels.encode_square if encode else _kernels.decode_square
        else:
            kernel = _kernels.encode_tiled if encode else _kernels.decode_tiled
        par = getattr(_kernels, kernel.__name__ + "_par")
        args = (boffs, rs, cs, R, C, tr, tc) + ((square,) if square else ())
        step = -(-C // tc) * tr * tc
    else:
        word = np.dtype(np.uint32)
        kernel = _kernels.encode_packed if encode else _kernels.decode_packed
        par = getattr(_kernels, kernel.__name__ + "_par")
        args = (boffs, rs, cs, R, C, tr, tc, tiles[1][0], nbits)
        step = -(-C // tc) * (tr // tiles[1][0]) * tc
    nbytes = a.nbytes
    # the packed and tiled kernels' last argument: streaming stores (`_kernels._store_block`);
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
    # The closures below run on every call: each step they skip saves 0.05-0.15 us of a few
    # microseconds of Python per call (the 64^3 decode's kernel takes about 20 us).
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


def _square_rows(a: int, tc: int, rs: int, cs: int, itemsize: int) -> int:
    """Tile rows per square block when T(a, tc) moves through `_kernels`' square kernels (a
    transposed source of 32- or 64-bit elements: rows side by side, columns cs apart), else 0."""
    n = 64 // itemsize
    if cs == 1 or rs != 1 or itemsize not in (4, 8) or tc % n or a not in (2, 4, 8):
        return 0
    return n // a


def _side_for_array(a: np.ndarray) -> _Side:
    """Tables of a strided logical container array (c128: plus its two-word dim)."""
    words = _words(a)
    base, strides = _geometry(words)
    side = _dummy_side(base) if a.ndim == 0 else _strided_side(a.shape, base, strides[:a.ndim])
    if words.ndim > a.ndim:
        side = _Side(side.grp + (len(side.tables),), side.rad + (1,),
                     side.tables + (np.arange(2, dtype=np.int64) * strides[-1],))
    return side


def _side_for_layout(dims: tuple[int, ...], layout: Layout, scale: int) -> _Side:
    if not dims:
        return _Side((0,), (1,), (_positions([], (), layout.tiles) * scale,))
    return _layout_side(dims, layout, scale)


def _loop(dims: tuple[int, ...], layout: Layout, words: int):
    """Loop order (physical, major to minor) and sizes for the generic kernel."""
    order = tuple(layout.major_to_minor) if dims else (0,)
    sizes = tuple(dims[d] for d in order) if dims else (1,)
    if words == 2:
        order, sizes = order + (len(order),), sizes + (2,)
    return order, np.array(sizes, np.int64)


def _words(a: np.ndarray) -> np.ndarray:
    return _as_words(a) if a.itemsize == 16 else a


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
    if (words == 1 and nbits == natural and 0 < a.size <= _PERM_MAX and a.flags.c_contiguous
            and min(array_args[4], layout_args[4]) <= _PERM_RUN):
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
# _PERM_MAX elements whose `move` plan has an inner run of at most _PERM_RUN elements; its int32
# table costs 4 bytes per element, held in the plan cache.
_PERM_MAX = 1 << 21
_PERM_RUN = 4


def _buffer_positions(dims: tuple[int, ...], layout: Layout) -> np.ndarray:
    """int32 buffer position (in elements) of every element of the C-order array of `dims`."""
    side = _side_for_layout(dims, layout, 1)
    pos = np.zeros(dims, np.int64)
    for g, table in enumerate(side.tables):
        gidx = np.zeros([1] * len(dims), np.int64)
        for d, n in enumerate(dims):
            if side.grp[d] == g:
                shape = [1] * len(dims)
                shape[d] = n
                gidx = gidx + np.arange(n, dtype=np.int64).reshape(shape) * side.rad[d]
        pos += table[gidx]
    return pos.reshape(-1).astype(np.int32)


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
# relayout: buffer in one layout -> buffer in another, without the logical array


def _logical_view(buf: np.ndarray, dims: tuple[int, ...], layout: Layout, container: np.dtype):
    """The logical array an untiled, natural-width buffer holds, as a strided view of it."""
    physical = tuple(dims[d] for d in layout.major_to_minor)
    n = math.prod(dims)
    flat = buf[:n * container.itemsize].view(container)
    return flat.reshape(physical).transpose(np.argsort(layout.major_to_minor))


def _is_plain(layout: Layout, element: ElementType) -> bool:
    """No tiles and whole-container storage: the buffer is a strided view of the array."""
    return not layout.tiles and _storage_bits(layout, element) == element.container.itemsize * 8


# Banded relayout: when both layouts tile only the two most-minor physical dims (tiles of at
# most two entries, no `*`) in the same physical order, every batch plane's band of tile rows is
# a buffer of its own, so a band is decoded into a small temporary and encoded into the
# destination with the fast kernels: one pass over memory, the logical array never built, and
# 2.3x faster than `move` for 4096x4096 f32 T(8,128) -> T(2,128) (measured). Swapping the two
# minor dims goes band by band too (`_transposed_relayout`); `move` remains for the rest.
_BAND_BYTES = 2 << 20
_BAND_MAX_BYTES = 32 << 20
_BAND = threading.local()  # per thread: the temporary a band goes through (kept for reuse)


def _band_temporary(shape: tuple[int, int], dtype: np.dtype) -> np.ndarray:
    tmp = getattr(_BAND, "tmp", None)
    if tmp is None or tmp.dtype != dtype or tmp.size < shape[0] * shape[1]:
        tmp = _BAND.tmp = np.empty(shape[0] * shape[1], dtype)
    return tmp[:shape[0] * shape[1]].reshape(shape)


def _band_side(layout: Layout, R: int, C: int, element: ElementType):
    """(rows per tile row, the layout of one [R, C] plane, bytes per tile row, bytes per plane)
    for a layout that tiles only the two most-minor dims in whole bytes per tile row, else None."""
    tiles = tuple(t.dimensions for t in layout.tiles)
    if not tiles or any(len(t) > 2 or COMBINE_DIMENSION in t for t in tiles):
        return None
    rows = tiles[0][0] if len(tiles[0]) == 2 else 1
    plane = Layout((1, 0), layout.tiles, layout.element_size_in_bits)
    row_bits = _num_final((rows, C), plane) * _storage_bits(layout, element)
    if row_bits % 8:
        return None
    return rows, plane, row_bits // 8, -(-R // rows) * row_bits // 8


def _band_rows(unit: int, C: int, element: ElementType) -> int | None:
    """Rows per band: a multiple of `unit`, about _BAND_BYTES; None past _BAND_MAX_BYTES."""
    item = element.container.itemsize
    if unit * C * item > _BAND_MAX_BYTES:
        return None  # rows so long that one band would be a large temporary
    return unit * max(1, _BAND_BYTES // (unit * C * item))


def _banded_relayout(dims, src: Layout, dst: Layout, element: ElementType):
    """A relayout plan going band by band through the fast kernels, or None (see above)."""
    if src.major_to_minor != dst.major_to_minor or not dims:
        return None
    phys = (1, 1) + tuple(dims[d] for d in src.major_to_minor)
    R, C = phys[-2], phys[-1]
    planes = math.prod(phys[:-2])
    s_side, d_side = _band_side(src, R, C, element), _band_side(dst, R, C, element)
    if s_side is None or d_side is None:
        return None
    (s_rows, s_plane, s_row, s_size), (d_rows, d_plane, d_row, d_size) = s_side, d_side
    band = _band_rows(math.lcm(s_rows, d_rows), C, element)
    if band is None:
        return None

    def run(buf, out):
        for p in range(planes):
            for r0 in range(0, R, band):
                k = min(band, R - r0)
                s0, d0 = p * s_size + r0 // s_rows * s_row, p * d_size + r0 // d_rows * d_row
                tmp = _band_temporary((k, C), element.container)
                decode_into(buf[s0:s0 + -(-k // s_rows) * s_row], s_plane, element, tmp)
                encode_into(tmp, d_plane, element, out[d0:d0 + -(-k // d_rows) * d_row])
        out[planes * d_size:] = 0
    return run


def _transposed_relayout(dims, src: Layout, dst: Layout, element: ElementType):
    """A relayout plan for layouts that swap the two most-minor physical dims, or None.

    A band of the source's tile rows is decoded into a temporary and encoded, transposed (a
    strided view), into the band of tile columns it fills in every destination tile row: the
    fast kernels write tile rows `row_step` apart (`_fast_plan`). 3.7x faster than `move` for
    4096x4096 bf16 (8,128)(2,1) to its transpose (measured).
    """
    ps, pd = src.major_to_minor, dst.major_to_minor
    if len(dims) < 2 or pd != ps[:-2] + (ps[-1], ps[-2]):
        return None
    phys = (1, 1) + tuple(dims[d] for d in ps)
    R, C = phys[-2], phys[-1]  # the source plane; the destination plane is [C, R]
    planes = math.prod(phys[:-2])
    s_side, d_side = _band_side(src, R, C, element), _band_side(dst, C, R, element)
    if s_side is None or d_side is None or len(dst.tiles[0].dimensions) != 2:
        return None
    (s_rows, s_plane, s_row, s_size), (d_rows, d_plane, d_row, d_size) = s_side, d_side
    d_tc = dst.tiles[0].dimensions[1]
    tiles_per_row = -(-R // d_tc)
    if d_row % tiles_per_row:
        return None
    d_tile = d_row // tiles_per_row  # bytes of one destination tile
    band = _band_rows(math.lcm(s_rows, d_tc), C, element)
    if band is None:
        return None
    container = element.container
    plans = {}
    for k in {min(band, R), R % band or band}:  # a full band and the last one
        plans[k] = _fast_plan(np.empty((k, C), container).T, d_plane, element, True,
                              row_step=d_row)
        if plans[k] is None:
            return None
    d_span = {k: (-(-C // d_rows) - 1) * d_row + -(-k // d_tc) * d_tile for k in plans}

    def run(buf, out):
        for p in range(planes):
            for r0 in range(0, R, band):
                k = min(band, R - r0)
                s0, d0 = p * s_size + r0 // s_rows * s_row, p * d_size + r0 // d_tc * d_tile
                tmp = _band_temporary((k, C), container)
                decode_into(buf[s0:s0 + -(-k // s_rows) * s_row], s_plane, element, tmp)
                plans[k](tmp.T, out[d0:d0 + d_span[k]])
        out[planes * d_size:] = 0
    return run


def _plan_relayout(dims, src: Layout, dst: Layout, element: ElementType):
    load_kernels()
    container = element.container
    n = math.prod(dims)
    if n == 0:
        return lambda buf, out: out.fill(0)
    src_used = -(-_num_final(tuple(dims[d] for d in src.major_to_minor), src)
                 * _storage_bits(src, element) // 8)
    if _is_plain(src, element):
        def run(buf, out):  # one pass: the source buffer is a strided view of the array
            encode_into(_logical_view(buf, dims, src, container), dst, element, out)
        return run
    if _is_plain(dst, element):
        used = n * container.itemsize

        def run(buf, out):  # one pass: decode straight into the destination buffer
            decode_into(buf[:src_used], src, element, _logical_view(out, dims, dst, container))
            out[used:] = 0
        return run
    banded = (_banded_relayout(dims, src, dst, element)
              or _transposed_relayout(dims, src, dst, element))
    if banded is not None:
        return banded
    words = 2 if container.itemsize == 16 else 1
    word = np.dtype(np.uint64) if words == 2 else container
    natural = container.itemsize * 8
    order, sizes = _loop(dims, dst, words)
    sides = []
    for layout in (src, dst):
        side = _side_for_layout(dims, layout, words)
        sides.append(_add_word_dim(side) if words == 2 else side)
    sizes, *sides = _kernel_args(sides, order, sizes, item=word.itemsize, writes=1)
    s_bits, d_bits = _storage_bits(src, element), _storage_bits(dst, element)
    s_final = _num_final(tuple(dims[d] for d in src.major_to_minor), src)
    d_final = _num_final(tuple(dims[d] for d in dst.major_to_minor), dst)
    d_used = -(-d_final * d_bits // 8)
    has_padding = d_final > n

    def run(buf, out):
        s = _stored(buf, element, s_bits, natural, s_final, src_used, word)
        if d_bits == natural:
            d = out[:d_used].view(word)
            if has_padding:
                d.fill(0)
        else:
            d = (np.zeros if has_padding else np.empty)(d_final, container)
        _call(_kernels.move, sizes, s, *sides[0], d, *sides[1])
        _store(d, element, d_bits, natural, d_used, out)
    return run


def relayout_into(buf: np.ndarray, dims: tuple[int, ...], src: Layout, dst: Layout,
                  element: ElementType, out: np.ndarray) -> None:
    """Rewrites `buf` (uint8, layout `src`) into `out` (uint8, layout `dst`); inputs checked."""
    if not _on_reference(buf.size + out.size):
        key = ("r", dims, dst, element.name)
        try:
            return _plan(key, src, lambda: _plan_relayout(dims, src, dst, element))(buf, out)
        except NotReady:
            pass
    logical = np.empty(dims, element.container)
    _timed(_reference.decode_into, buf, src, element, logical)
    _timed(_reference.encode_into, logical, dst, element, out)


# ---------------------------------------------------------------------------------------------
# Copy-equivalent layouts: when every element sits at its row-major position (e.g. one
# f32[8,128] tile under T(8,128)), the buffer is the C-order array's bytes and a plain copy is
# the whole encode/decode. `codec` caches this per (layout, dtype, dims) to cut per-call cost.

_ROW_MAJOR_MAX = 1 << 16  # larger arrays never profit (the kernel is at copy speed there)


def is_row_major(dims: tuple[int, ...], layout: Layout, element: ElementType) -> bool:
    """Whether `layout` puts element i of the C-order array at buffer element i, with no
    padding and whole containers (so encode and decode are byte copies)."""
    natural = element.container.itemsize * 8
    n = math.prod(dims)
    if (not dims or n == 0 or n > _ROW_MAJOR_MAX or element.bit_width != natural
            or _storage_bits(layout, element) != natural):
        return False
    m2m = layout.major_to_minor
    physical = tuple(dims[d] for d in m2m)
    if _num_final(physical, layout) != n or n % layout.tail_padding_alignment_in_elements:
        return False  # (L(n) pads the buffer past the array's bytes: not a byte copy)
    idx = np.indices(dims, dtype=np.int64).reshape(len(dims), -1)
    return bool(np.array_equal(_positions([idx[d] for d in m2m], physical, layout.tiles),
                               np.arange(n)))
