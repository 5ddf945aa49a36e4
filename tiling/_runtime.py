"""The runtime under the tiling engine: loading numba, calling kernels safely, the machine.

- Loading: numba is imported on first need (`load_kernels`); until then, and while a kernel
  compiles on the background thread (`NotReady`), the numpy reference serves calls
  (`on_reference`, `timed`).
- Calling: `call` runs a serial kernel, `call_fast` a fast-path kernel or its `_par` twin; a
  kernel's first call in a process runs under a cross-process file lock (`_first_call`).
- Safety: fork handlers (a fork never inherits a held lock), one Python thread at a time in a
  parallel kernel, forked children of a parallel process stay serial.
- The machine: the last-level cache size (`STREAM_BYTES`, `stream_mode`) and whether parallel
  kernels may run (`parallel_allowed`).
- `Plan`: what the planners (`tiling._fast_plans`, `tiling._generic_plans`, `tiling.relayout`)
  hand the engine for one kind of call.
"""

from __future__ import annotations

import _imp
import _thread
import fcntl
import glob
import importlib
import importlib._bootstrap as _bootstrap
import importlib.machinery
import logging  # noqa: F401 (its at-fork handlers registered before ours, which must run first)
import math
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from tiling._tuning import (
    FAST_REFERENCE_BYTES, PARALLEL_BYTES, REFERENCE_BUDGET_SECONDS, SMALL_BYTES,
    WORKQUEUE_PARALLEL_BYTES,
)


@dataclass(frozen=True, slots=True, eq=False)
class Plan:
    """What every call of one kind (direction, layout, array geometry) runs, decided once.

    `run(src, dst)` does the work; the other fields say what it does, for tests, readers and
    `tiling.engine_info`: the kernel it calls (as `tiling._kernels` names it; "copy" for a
    byte copy, or the relayout's strategy), that kernel's index arguments, whether the kernel's
    `_par` twin may run (numba's threads, decided again on each call: `call_fast`), its stores
    (0 plain, 1 streaming: `stream_mode`), and the numba dispatchers it calls.
    """

    kernel: str
    run: Callable = field(repr=False)
    geometry: tuple = field(default=(), repr=False)
    threads: bool = False
    stream: int = 0
    logical: bool = False  # `run` takes the logical array, not only its container view
    dispatchers: tuple = field(default=(), repr=False)  # the serial kernels `run` calls
    parallel: object = field(default=None, repr=False)  # the `_par` twin it may call instead


# ---------------------------------------------------------------------------------------------
# Numba is imported on first need. Importing numba and initialising its compiler takes 0.5-1 s,
# far more than the numpy reference needs for a small array, so until the kernels are loaded,
# arrays of at most SMALL_BYTES (FAST_REFERENCE_BYTES for the fast-path formats, below) go to
# `_reference` (bit-identical, and held so by the tests); the kernels load on the first larger
# array, or once the reference has spent REFERENCE_BUDGET_SECONDS in this process.

_kernels = None
_reference_seconds = 0.0


def load_kernels():
    """Imports `tiling._kernels` (and numba, whose 0.5-1 s `import tiling` must not pay); later
    calls always take the Numba engine."""
    global _kernels
    if _kernels is None:
        _kernels = guarded_import("tiling._kernels")
    return _kernels


def guarded_import(name: str):
    """The module `name`, imported on first need (numba's kernels; jax for `Layout.to_jax`)
    under _FIRST_CALL_LOCK, which a fork waits for ("Fork safety"): a child never inherits the
    module lock of an import half done in another thread. `tiling` imports nothing else inside
    a function (tests/tiling/test_exit_and_fork.py checks it)."""
    _register_fork_handlers()
    with _FIRST_CALL_LOCK:
        return importlib.import_module(name)


def on_reference(nbytes: int, fast_format: bool) -> bool:
    """Whether the numpy reference serves a call of `nbytes` (array and buffer) because numba is
    not loaded yet. The fast-path formats (`fast_format`) run in the reference in a tenth of
    numba's load time, so a process's first calls take it up to FAST_REFERENCE_BYTES for them;
    the budget then ends it. Past the limits numba loads, on the background thread when there
    is one (the reference serving meanwhile)."""
    if _kernels is not None:
        return False
    if _reference_seconds < REFERENCE_BUDGET_SECONDS and nbytes <= (
            FAST_REFERENCE_BYTES if fast_format else SMALL_BYTES):
        return True
    if not _background(_LOAD):
        return False
    _queue(_LOAD, ())
    return True


def timed(fn, *args) -> None:
    global _reference_seconds
    start = time.perf_counter()
    fn(*args)
    _reference_seconds += time.perf_counter() - start


# ---------------------------------------------------------------------------------------------
# Calling kernels: the first call of each kernel in a process runs under a file lock


class Kernel:
    """A numba dispatcher called with one kind of arguments (`facts`: their dtypes and
    contiguity, fixed by the plans that call it): what `_WARM` holds. A dispatcher compiles once
    per argument types, so the packed kernel warm for uint16 arrays is not yet for uint8 ones,
    whose first call would otherwise compile in the caller's thread. One object per
    (dispatcher, facts) (`specialised`), hashed by identity: `in _WARM` stays a pointer lookup.
    A dispatcher compiled for the values of some arguments (`literal_args`) has those values in
    its facts too. `run`: what a warm call calls (`_warm`)."""

    __slots__ = ("dispatcher", "facts", "run", "__name__")

    def __init__(self, dispatcher, facts: tuple):
        self.dispatcher, self.facts, self.run = dispatcher, facts, dispatcher
        self.__name__ = dispatcher.__name__

    def __repr__(self) -> str:
        return f"Kernel({self.__name__}, {self.facts})"


_KERNELS: dict = {}


def specialised(dispatcher, *facts) -> Kernel:
    """The `Kernel` of `dispatcher` for arguments described by `facts`."""
    key = (dispatcher, facts)
    found = _KERNELS.get(key)
    return found if found is not None else _KERNELS.setdefault(key, Kernel(dispatcher, facts))


def signature(dispatcher, args) -> tuple:
    """The argument types `dispatcher` compiles for `args`: numba's, but for the arguments it is
    compiled for the value of (`numba.literally` in its body; their positions in its
    `literal_args`: `_kernels.jit._for_each`), whose literal types carry the value."""
    literal = getattr(dispatcher, "literal_args", ())
    return tuple(_kernels.numba.types.literal(a) if i in literal else dispatcher.typeof_pyval(a)
                 for i, a in enumerate(args))


def _compiled(dispatcher, args) -> bool:
    """Whether `dispatcher` has code for the types of `args` in this process already."""
    return signature(dispatcher, args) in dispatcher.overloads


def _warm(kernel: Kernel, args) -> None:
    """Marks `kernel` past its first call (with `args`). A kernel compiled for argument values
    is then called through that code's entry point: numba's dispatcher, which types arguments
    without their values, would take its compile path (about 20 ms) on every call."""
    if getattr(kernel.dispatcher, "literal_args", ()):
        kernel.run = kernel.dispatcher.overloads[signature(kernel.dispatcher, args)].entry_point
    _WARM.add(kernel)


_WARM: set = set()  # the `Kernel`s past their first call in this process
_FIRST_CALL_LOCK = threading.Lock()  # held by a thread through a kernel's first call
_flock_handle = None  # the lock file while a first call holds its flock


def call(kernel: Kernel, *args) -> None:
    if kernel in _WARM:
        kernel.run(*args)
    elif _compiled(kernel.dispatcher, args):  # (by the thread, or for another plan: no lock,
        _warm(kernel, args)                   # which the thread may hold for its next compile)
        kernel.run(*args)
    elif not _background(kernel.dispatcher):
        _first_call(kernel.dispatcher, args)
        _warm(kernel, args)
    else:
        _queue(kernel.dispatcher, args)
        raise NotReady


# ---------------------------------------------------------------------------------------------
# Background compiles. No public call waits for numba: a call that needs a kernel that has not
# had its first call in this process (a compile, or a load from the on-disk cache) queues that
# first call on one thread and raises NotReady, which `encode_into`, `decode_into`,
# `relayout_into` and `tiling.codec` answer with the numpy reference (bit-identical); once the
# thread has compiled the kernel, calls take it. Loading numba itself goes the same way (`_LOAD`).
# The thread runs one job at a time under _FIRST_CALL_LOCK, so a fork waits for at most the
# compile in progress (see "Fork safety"); a forked child starts its own thread when it needs
# one. A job that fails leaves its kernel to the caller's own first call (`_FOREGROUND`), where
# the error surfaces as it would have without the thread.
# Exit: interpreter shutdown must never meet a compile in flight (LLVM, torn down under it,
# aborted, asserted or segfaulted in 3-6 of 10 scripts that exited mid-compile: issue 37). So
# the thread is not a daemon: an exit (a return from the script, `sys.exit`, an uncaught
# exception) joins it before finalising, and once the main thread has ended the thread starts
# no further job. An exit therefore waits for at most the job in progress (one compile, a few
# seconds at most), whose kernel is then cached on disk for the next run. Calls made during
# shutdown (atexit handlers) compile in the calling thread (`_background`).
# BACKGROUND_COMPILE False (TILING_BACKGROUND_COMPILE=0): first calls compile in the calling
# thread, as the tests' kernel checks need; `tiling.precompile` does the same for its layouts
# (`foreground`).

BACKGROUND_COMPILE = os.environ.get("TILING_BACKGROUND_COMPILE", "1") != "0"


class NotReady(Exception):
    """A kernel the call needs is still compiling on the background thread."""


_LOAD = "load numba"  # the job that imports `tiling._kernels`
_QUEUE: list = []  # [(key, job, tracked)]: a kernel's compile, numba's load, a precompile
_QUEUED: set = set()  # every key queued, running or done (never twice)
_FOREGROUND: set = set()  # jobs that failed on the thread: the caller does them itself
_IN_FLIGHT: dict = {}  # dispatcher -> its compiles queued or running
_QUEUE_LOCK = threading.Lock()
_worker: threading.Thread | None = None
_HERE = threading.local()  # `foreground`: this thread's first calls compile in place


def _background(kernel) -> bool:
    """Whether `kernel`'s first call (or numba's load, `_LOAD`) goes to the thread."""
    return (BACKGROUND_COMPILE and kernel not in _FOREGROUND
            and not getattr(_HERE, "foreground", False)
            and threading.main_thread().is_alive())


class foreground:
    """A context in which this thread's first calls compile in place (`tiling.precompile`)."""

    def __enter__(self):
        self.before = getattr(_HERE, "foreground", False)
        _HERE.foreground = True

    def __exit__(self, *exc):
        _HERE.foreground = self.before


def _queue(kernel, args) -> None:
    """Queues the dispatcher `kernel`'s compile for the types of `args` (or numba's load,
    `_LOAD`)."""
    if kernel is _LOAD:
        queue_job(_LOAD, load_kernels)
        return
    types = signature(kernel, args)
    if (kernel, types) in _QUEUED:
        return

    def job():
        try:
            _first_call(kernel, types=types)
        except Exception:
            _FOREGROUND.add(kernel)
            raise
    queue_job((kernel, types), job, kernel)


def queue_job(key, job, tracked=None) -> None:
    """Queues `job()` on the thread under `key` (once: a key queued or done is not queued
    again), starting the thread if none runs; `queued(tracked)` holds until it has run."""
    global _worker
    with _QUEUE_LOCK:
        if key in _QUEUED:
            return
        _QUEUED.add(key)
        _QUEUE.append((key, job, tracked))
        _IN_FLIGHT[tracked] = _IN_FLIGHT.get(tracked, 0) + 1
        if _worker is None:
            _worker = threading.Thread(target=_work, name="tiling-compile")
            _worker.start()


def queued(kernel) -> bool:
    """Whether the dispatcher `kernel` (or numba's load, `_LOAD`, or what `queue_job` was told
    it tracks) has a compile queued or running on the thread."""
    if kernel is _LOAD:
        return _LOAD in _QUEUED and _kernels is None and _LOAD not in _FOREGROUND
    return _IN_FLIGHT.get(kernel, 0) > 0


def _work() -> None:
    global _worker
    _register_fork_handlers()
    while True:
        with _QUEUE_LOCK:
            if not _QUEUE or not threading.main_thread().is_alive():  # (exiting: see above)
                _QUEUE.clear()
                _IN_FLIGHT.clear()
                _worker = None
                return
            key, job, tracked = _QUEUE.pop(0)
        try:
            job()
        except Exception:
            _FOREGROUND.add(key)
        finally:
            with _QUEUE_LOCK:
                _IN_FLIGHT[tracked] -= 1


def _after_fork_in_queue_child() -> None:
    """The thread does not survive a fork: the child queues afresh what it needs."""
    global _QUEUE_LOCK, _worker
    _QUEUE_LOCK = threading.Lock()
    _QUEUE.clear()
    _QUEUED.clear()
    _IN_FLIGHT.clear()
    _worker = None


os.register_at_fork(after_in_child=_after_fork_in_queue_child)


def _first_call(kernel, args=(), types=None) -> None:
    """Runs a kernel's first call in this process (or with `types`, compiles it for those
    argument types without running it) under a cross-process file lock.

    Two processes filling one cold numba cache can pair an index entry with the other's data file
    (numba issues 4807, 10128); the lock serialises compile-and-save between processes using this
    installation of the package (`_kernels.LOCK_FILE`: others have cache files of their own). Should loading a cache entry fail anyway, the kernel drops its cache and compiles in
    memory, so a damaged cache costs time, never the user's call. First calls also hold
    _FIRST_CALL_LOCK, which a fork waits for (see "Fork safety" below).
    """
    global _flock_handle
    _register_fork_handlers()
    with _FIRST_CALL_LOCK:
        if _kernels.CACHE_ENABLED:
            try:
                os.makedirs(os.path.dirname(_kernels.LOCK_FILE), exist_ok=True)
                _flock_handle = open(_kernels.LOCK_FILE, "a")
                fcntl.flock(_flock_handle, fcntl.LOCK_EX)
            except OSError:  # no lock to be had: numba's atomic renames still apply
                _close_flock()
        literal = types is None and getattr(kernel, "literal_args", ())
        if literal:  # compiled for the values, then run through the code's entry point (`_warm`)
            types = signature(kernel, args)
        run, given = (kernel.compile, (types,)) if types is not None else (kernel, args)
        try:
            try:
                run(*given)
            except Exception:
                if not _kernels.CACHE_ENABLED:
                    raise
                kernel._cache = _kernels.NullCache()
                run(*given)
            if literal:
                kernel.overloads[types].entry_point(*args)
        finally:
            _close_flock()


def _close_flock() -> None:
    global _flock_handle
    if _flock_handle is not None:
        _flock_handle.close()
        _flock_handle = None


# Fork safety. A fork while another thread is in a first call would leave the child with locks
# whose owner does not exist there: the flock, held on an open file description the child
# inherits (so the parent's lock would also last until the child exits), and the locks of the
# compiler stack, each held by whichever thread is inside it (`_COMPILER_LOCKS`): numba's
# compiler lock (compiles and cache loads), numba's threading-layer lock (held while the layer's
# library loads, on a `_par` kernel's first load) and llvmlite's lock around every LLVM call
# (also taken outside any compile, by the finalizers that free LLVM modules, which the garbage
# collector runs in whatever thread allocates). A child that inherits one held hangs on its
# first compile, or on its first garbage collection that frees an LLVM object. So a fork first
# waits for the first call in progress and then takes every one of those locks, holding them
# across the fork, in the order in which a compile nests them (_FIRST_CALL_LOCK, then numba's,
# then LLVM's, which is held only for one C call and never waits on another).
# Imports: a child forked while another thread imports inherits that module's lock held and
# hangs on its own first use of the module, as children did on `np.ma`, which numba's `typeof`
# of an array imports on first use, outside any compile. So, after numba's locks and before
# LLVM's (a compile imports; a finalizer freeing LLVM objects may run inside an import), the
# fork waits until no other thread is inside an import that does not wait on the forking thread
# itself, then holds the interpreter's import lock so that none starts; the child forgets the
# imports still in flight after all (a half-made module of Python source is made again; an
# extension module cannot be, which the wait is for).
# The handlers are registered at the first first call, after numba and `logging` have registered
# theirs: `before` handlers run in reverse order, so ours waits while no other handler holds a
# lock that the compile may need (logging's, in a compile that imports scipy, did deadlock).
# Should a wait exceed FORK_WAIT_SECONDS, the fork goes ahead and the child drops the
# parent's holds: the flock's descriptor is pointed at /dev/null and the locks are replaced.
FORK_WAIT_SECONDS = 120.0
_HELD_AT_FORK: list = []
_locks_at_fork: tuple = ()
_fork_handlers_registered = False

_COMPILER_LOCKS = (  # (module, attribute path to the owner, the lock's attribute): in nesting order
    ("numba.core.compiler_lock", ("global_compiler_lock",), "_lock"),
    ("numba.np.ufunc.parallel", (), "_backend_init_thread_lock"),
)
_LLVM_LOCK = ("llvmlite.binding.ffi", ("lib", "_lock"), "_lock")


def _register_fork_handlers() -> None:
    global _fork_handlers_registered
    if not _fork_handlers_registered:
        _fork_handlers_registered = True
        os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                            after_in_child=_after_fork_in_first_call_child)


def _lock_owners(locks=_COMPILER_LOCKS + (_LLVM_LOCK,)) -> list:
    """`(owner, attribute)` of each of `locks` that exists in this process (a module not
    imported, or half imported, has none yet)."""
    found = []
    for module, path, attribute in locks:
        owner = sys.modules.get(module)
        for name in path:
            owner = getattr(owner, name, None)
        if getattr(owner, attribute, None) is not None:
            found.append((owner, attribute))
    return found


def _before_fork() -> None:
    global _locks_at_fork
    # _FIRST_CALL_LOCK first: numba's import runs under it, so numba's locks are looked up after
    # the import in progress (if any) has ended
    _locks_at_fork = (_FIRST_CALL_LOCK,)
    if _FIRST_CALL_LOCK.acquire(timeout=FORK_WAIT_SECONDS):
        _HELD_AT_FORK.append(_FIRST_CALL_LOCK)
    _hold(_lock_owners(_COMPILER_LOCKS))
    _wait_for_imports()
    _hold(_lock_owners((_LLVM_LOCK,)))


def _hold(owners) -> None:
    global _locks_at_fork
    for owner, attribute in owners:
        lock = getattr(owner, attribute)
        _locks_at_fork += (lock,)
        if lock.acquire(timeout=FORK_WAIT_SECONDS):
            _HELD_AT_FORK.append(lock)


def _imports_of_other_threads():
    """`(name, lock)` of the module locks other threads hold (importlib's own bookkeeping)."""
    me = _thread.get_ident()
    for name, entry in list(getattr(_bootstrap, "_module_locks", {}).items()):
        lock = entry() if callable(entry) else entry  # a weak reference to the lock
        if lock is not None and getattr(lock, "count", 0) and getattr(lock, "owner", me) != me:
            yield name, lock


def _waits_on(tid: int, me: int) -> bool:
    """Whether thread `tid` waits (through a chain of module locks) on thread `me`."""
    blocking = getattr(_bootstrap, "_blocking_on", None) or {}
    seen = set()
    while tid not in seen:
        seen.add(tid)
        entry = blocking.get(tid)
        owners = [getattr(lock, "owner", None) for lock in
                  (entry if isinstance(entry, list) else [entry] if entry is not None else [])]
        if me in owners:
            return True
        if not owners or owners[0] is None:
            return False
        tid = owners[0]
    return False


def _wait_for_imports() -> None:
    """Returns holding the import lock, once no other thread is inside an import (but those
    that wait on this one), or after FORK_WAIT_SECONDS."""
    global _holding_imports
    me = _thread.get_ident()
    deadline = time.monotonic() + FORK_WAIT_SECONDS
    while True:
        _imp.acquire_lock()  # no import starts while it is held
        if time.monotonic() > deadline or all(
                _waits_on(lock.owner, me) for _, lock in _imports_of_other_threads()):
            _holding_imports = True
            return
        _imp.release_lock()
        time.sleep(0.001)  # lets the importing threads go on


_holding_imports = False


def _release_imports() -> None:
    global _holding_imports
    if _holding_imports:
        _holding_imports = False
        _imp.release_lock()


def _forget_imports_of_lost_threads() -> None:
    """In the child: drops the module locks of imports that other threads had in flight."""
    locks = getattr(_bootstrap, "_module_locks", {})
    forgotten = []
    for name, _ in list(_imports_of_other_threads()):
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


def _after_fork_in_parent() -> None:
    while _HELD_AT_FORK:
        _HELD_AT_FORK.pop().release()
    _release_imports()


def _after_fork_in_first_call_child() -> None:
    global _FIRST_CALL_LOCK, _flock_handle
    _forget_imports_of_lost_threads()  # (none, unless the wait timed out)
    if len(_HELD_AT_FORK) == len(_locks_at_fork):
        _after_fork_in_parent()
        return
    _release_imports()
    _HELD_AT_FORK.clear()  # a wait that timed out: drop what another thread holds
    if _flock_handle is not None:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, _flock_handle.fileno())
        os.close(null)
        _flock_handle = None
    _FIRST_CALL_LOCK = threading.Lock()
    for owner, attribute in _lock_owners():
        setattr(owner, attribute, threading.RLock())


# ---------------------------------------------------------------------------------------------
# Parallel fast paths: arrays of at least PARALLEL_BYTES run the kernels' `_par` twins (numba
# threads over tile rows) when the numba cache is on (`parallel_allowed`). OpenMP and TBB launch
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
more, write their output with streaming stores where their kernel has them (`stream_mode`, see
`_kernels.llvm._store_block`). At about this size plain stores encode faster and streaming ones
decode faster; well above it, streaming encodes faster too."""
NO_CARRY = np.empty(0, np.uint8)  # the tiled kernels' carry slots when they do not stream


def stream_mode(nbytes: int, encode: bool, cache_bytes: int) -> int:
    """The packed and tiled kernels' `stream` (0 plain stores, 1 streaming stores) for an array
    and buffer of `nbytes` together, on a machine whose last-level cache holds `cache_bytes`
    (`STREAM_BYTES` here)."""
    return int(nbytes > cache_bytes if encode else nbytes >= cache_bytes)


_parallel_bytes = PARALLEL_BYTES  # WORKQUEUE_PARALLEL_BYTES once numba's layer is known to be it
_PARALLEL_LOCK = threading.Lock()
_PARALLEL_PID: int | None = None  # the process that launched a `_par` kernel, once one has


def _threads_launched() -> bool:
    """Whether numba has started its threading layer in this process: it does on loading or
    compiling a `_par` kernel, before any runs (the compile thread, `tiling.precompile`), and
    numba's OpenMP layer then terminates (SIGTERM) a forked child that launches a region."""
    module = sys.modules.get("numba.np.ufunc.parallel")
    return bool(getattr(module, "_is_initialized", False))


def _after_fork_in_child() -> None:
    global _parallel_bytes, _PARALLEL_LOCK
    if _PARALLEL_PID is not None or _threads_launched():  # the parent's threads: stay serial
        _parallel_bytes = math.inf
    _PARALLEL_LOCK = threading.Lock()  # a parent thread's hold on it ends with the fork


os.register_at_fork(after_in_child=_after_fork_in_child)


def parallel_allowed(nbytes: int) -> bool:
    """Whether a plan for an array of `nbytes` may take the `_par` kernels.

    Not without the on-disk cache: a `_par` kernel compiles in about 2.5 s against 1.0 s for the
    serial one (f32 T(8,128), measured), which an uncached process would pay every run to save
    about 1 ms per 64 MiB call. With the cache the extra compile happens once per machine.
    """
    return (nbytes >= PARALLEL_BYTES and _kernels.CACHE_ENABLED
            and _kernels.numba.config.NUMBA_NUM_THREADS > 1)


def call_fast(kernel: Kernel, par: Kernel | None, nbytes, *args) -> None:
    """`par`'s code when allowed (see above), else `kernel`'s; `par` None means serial.
    (`call` written out: this runs on every call of the fast paths.)"""
    if (par is not None and nbytes >= _parallel_bytes
            and (par in _WARM or not _background(par.dispatcher)
                 or _compiled(par.dispatcher, args))
            and _PARALLEL_LOCK.acquire(False)):
        try:
            if _PARALLEL_PID is None:
                _first_parallel_call(par, args)
            elif par in _WARM:
                par.run(*args)
            else:
                call(par, *args)
        finally:
            _PARALLEL_LOCK.release()
    elif kernel in _WARM:
        kernel.run(*args)
        if par is not None and nbytes >= _parallel_bytes and par not in _WARM \
                and _background(par.dispatcher):
            _queue(par.dispatcher, args)
    else:
        call(kernel, *args)


class serial:
    """A context in which this thread's fast-path calls take the serial kernels (holding
    _PARALLEL_LOCK, as another thread's parallel call would): `tiling.precompile`."""

    def __enter__(self):
        self.lock = _PARALLEL_LOCK
        self.lock.acquire()

    def __exit__(self, *exc):
        self.lock.release()


def _first_parallel_call(par, args) -> None:
    """The process's first `_par` launch: remembers the process (see above), and raises the
    threshold once it knows numba's layer is `workqueue`."""
    global _PARALLEL_PID, _parallel_bytes
    _PARALLEL_PID = os.getpid()
    call(par, *args)
    if _kernels.numba.threading_layer() == "workqueue":
        _parallel_bytes = WORKQUEUE_PARALLEL_BYTES

