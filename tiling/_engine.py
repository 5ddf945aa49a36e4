"""The engine behind `tiling.encode`, `tiling.decode` and `tiling.relayout`: plans, cached.

How a call flows: `tiling.codec.encode` validates the array, the layout and `out`, then asks
`encoder(bits, layout, element, nbytes)` here for the `Plan` of such calls (`bits`: the array
viewed as its unsigned container; the plan depends only on its shape, strides and dtype, the
layout and the element type, and is cached on them) and runs `plan.run(x, out)`. `make_plan`
decides, in this order:

1. "copy": layouts that put every element at its row-major place (`is_row_major`, e.g. one
   f32[8,128] tile under T(8,128)) are a byte copy of a C-contiguous array;
2. `tiling._fast_plans.fast_plan`: one 2-D tile, or its packed forms, through the hand-written
   kernels (tiled, packed, square, tiny), parallel and streaming by size;
3. `tiling._generic_plans.generic_plan`: tables for `move`, or the permutation kernels;
4. strides that are not whole elements: the plan for a C-contiguous copy of the array.

Until numba is loaded (`_runtime.on_reference`) `encoder` returns None and the numpy reference
(`tiling._reference`, bit-identical) serves the call, as it does while a kernel compiles on the
background thread (`run` raises `_runtime.NotReady`). `decoder` and `decode_into` mirror it all.

To add a fast path: write the kernel pair beside its family in `tiling/_kernels/` (a new family:
a module with the reference behaviour it must equal in its docstring, and `_par` twins in
`parallel.py`), export it from `tiling/_kernels/__init__.py`, pick it in
`tiling._fast_plans.fast_plan` (and, for a new tile form, in `choose_kernel`, with a row in
`FAST_PATHS`), and add its layouts to `tests/tiling/test_kernels.py` (the plan's `kernel`, and
bit-exactness against `_reference`, including the bounds and guard-page children) and to
`asv_bench/benchmarks/tiling.py`. Tuning constants go into `tiling/_tuning.py`.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from tiling import _reference, _runtime
from tiling._fast_plans import FAST_PATHS, choose_kernel, fast_plan
from tiling._generic_plans import generic_plan
from tiling._geometry import _num_final, _positions, _Side, _storage_bits
from tiling._runtime import NotReady, Plan, load_kernels, timed
from tiling._tuning import MAX_PLANS, PLAN_CACHE_BYTES, ROW_MAJOR_MAX
from tiling.dtypes import ElementType
from tiling.layout import Layout

__all__ = ["FAST_PATHS", "Plan", "choose_kernel", "decode_into", "decoder", "encode_into",
           "encoder", "load_kernels", "make_plan"]


def _on_reference(nbytes: int, layout: Layout, element: ElementType) -> bool:
    """Whether the numpy reference serves a call of `nbytes` because numba is not loaded (the
    fast-path formats up to a larger size: `_runtime.on_reference`)."""
    if _runtime._kernels is not None:
        return False
    tiles = tuple(t.dimensions for t in layout.tiles)
    kind = choose_kernel(_storage_bits(layout, element), element.container.itemsize * 8, tiles)
    return _runtime.on_reference(nbytes, kind != "generic")


# ---------------------------------------------------------------------------------------------
# The plan cache: everything that depends only on (dims, strides, dtype, layout), computed once


_PLANS: dict = {}
"""Plans by (layout, direction, dims, strides, dtype, element type), keyed by value (`Layout`
keeps its hash); emptied, with the caches holding plans (`ON_FORGET`), past MAX_PLANS entries or
PLAN_CACHE_BYTES of tables (permutations, position tables), so distinct large shapes never pile
up."""
_plan_bytes = 0
ON_FORGET: list = []  # other caches holding plans (codec's calls), emptied too


def _held_bytes(obj, depth: int = 0) -> int:
    """The bytes of the numpy arrays a plan holds (through closures, tuples, `_Side`s)."""
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if depth > 6:
        return 0
    if isinstance(obj, Plan):
        return _held_bytes(obj.run, depth + 1)
    if isinstance(obj, (tuple, list)):
        return sum(_held_bytes(x, depth + 1) for x in obj)
    if isinstance(obj, dict):
        return sum(_held_bytes(x, depth + 1) for x in obj.values())
    if isinstance(obj, _Side):
        return _held_bytes(obj.tables, depth + 1)
    cells = getattr(obj, "__closure__", None) or ()
    return sum(_held_bytes(c.cell_contents, depth + 1) for c in cells
               if c.cell_contents is not obj)


def forget_plans() -> None:
    """Empties the plan cache and every cache holding plans."""
    global _plan_bytes
    _PLANS.clear()
    _plan_bytes = 0
    for forget in ON_FORGET:
        forget()


def cached_plan(key, build):
    """The plan for `key` (hashable, by value), made by `build()` on first need."""
    global _plan_bytes
    plan = _PLANS.get(key)
    if plan is None:
        plan = build()
        size = _held_bytes(plan)
        if len(_PLANS) >= MAX_PLANS or _plan_bytes + size > PLAN_CACHE_BYTES:
            forget_plans()
        _PLANS[key] = plan
        _plan_bytes += size
    return plan


# ---------------------------------------------------------------------------------------------
# Plans for arrays


def make_plan(a: np.ndarray, layout: Layout, element: ElementType, encode: bool, *,
              cache_bytes: int | None = None) -> Plan:
    """The plan for arrays like `a` (the logical container array, or an array of the same
    shape, strides and item size) into (`encode`) or out of a buffer in `layout`, uncached.
    `cache_bytes`: the last-level cache size its stores are chosen for (default: this
    machine's)."""
    if a.flags.c_contiguous and is_row_major(a.shape, layout, element):
        return _copy_plan(element, encode)
    load_kernels()
    plan = (fast_plan(a, layout, element, encode, cache_bytes=cache_bytes)
            or generic_plan(a, layout, element, encode))
    if plan is not None:
        return plan
    # strides that are not whole elements: work on a C-contiguous copy
    inner = make_plan(np.empty(a.shape, a.dtype), layout, element, encode,
                      cache_bytes=cache_bytes)
    run = inner.run
    if encode:
        def copied(x, out):
            run(np.ascontiguousarray(x), out)
    else:
        def copied(buf, out):
            tmp = np.empty(out.shape, out.dtype)
            run(buf, tmp)
            out[...] = tmp
    return Plan(inner.kernel, copied, inner.geometry, inner.threads, inner.stream, False,
                inner.dispatchers, inner.parallel)


def _exports_buffer(dtype: np.dtype) -> bool:
    try:
        memoryview(np.empty(0, dtype))
    except ValueError:
        return False
    return True


_U8 = np.dtype(np.uint8)


def _copy_plan(element: ElementType, encode: bool) -> Plan:
    """A byte copy, through memoryviews where the logical dtype allows (ml_dtypes' do not):
    cheaper than numpy's view-and-assign for a few KiB, most of whose cost is making the
    views. It takes the logical array (`codec` skips the container view)."""
    memory = _exports_buffer(element.dtype)
    if encode and memory:
        def run(x, out):
            out.data[:] = x.data.cast("B")
    elif encode:
        def run(x, out):
            out[...] = x.reshape(-1).view(_U8)  # (item assignment: cheaper than np.copyto)
    elif memory:
        def run(buf, out):
            out.data.cast("B")[:] = buf.data
    else:
        def run(buf, out):
            out.reshape(-1).view(_U8)[...] = buf
    return Plan("copy", run, logical=True)


@functools.lru_cache(maxsize=MAX_PLANS)
def is_row_major(dims: tuple[int, ...], layout: Layout, element: ElementType) -> bool:
    """Whether `layout` puts element i of the C-order array at buffer element i, with no
    padding and whole containers (so encode and decode are byte copies). Remembered: calls the
    reference serves until numba loads ask again each time, and the answer costs index arrays
    of up to ROW_MAJOR_MAX elements."""
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


def _planned(a: np.ndarray, layout: Layout, element: ElementType, nbytes: int, encode: bool):
    key = (layout, encode, a.shape, a.strides, a.dtype, element.name)
    plan = _PLANS.get(key)
    if plan is None:
        if (not (a.flags.c_contiguous and is_row_major(a.shape, layout, element))
                and _on_reference(nbytes, layout, element)):
            return None
        plan = cached_plan(key, lambda: make_plan(a, layout, element, encode))
    return plan


def encoder(bits: np.ndarray, layout: Layout, element: ElementType, nbytes: int) -> Plan | None:
    """The plan, `run(bits, out)`, for arrays like `bits` (container view: its shape, strides
    and dtype) into `nbytes` of `layout`; None while the numpy reference serves such calls."""
    return _planned(bits, layout, element, nbytes, True)


def decoder(out: np.ndarray, layout: Layout, element: ElementType, nbytes: int) -> Plan | None:
    """The plan, `run(buf, out)`, from `nbytes` of `layout` into arrays like `out` (see
    `encoder`)."""
    return _planned(out, layout, element, nbytes, False)


def encode_into(bits: np.ndarray, layout: Layout, element: ElementType, out: np.ndarray) -> None:
    """Writes the logical array `bits` (container view, any strides) into `out` (uint8)."""
    _run(encoder(bits, layout, element, out.size), _reference.encode_into, bits, layout, element,
         out)


def decode_into(buf: np.ndarray, layout: Layout, element: ElementType, out: np.ndarray) -> None:
    """Reads `buf` (uint8) into `out`, the container view of the logical result array."""
    _run(decoder(out, layout, element, buf.size), _reference.decode_into, buf, layout, element,
         out)


def _run(plan: Plan | None, reference, src, layout: Layout, element: ElementType, dst) -> None:
    """`plan.run(src, dst)`, or the numpy reference while there is no plan or a kernel it needs
    is still compiling."""
    if plan is not None:
        try:
            return plan.run(src, dst)
        except NotReady:
            pass
    timed(reference, src, layout, element, dst)


# ---------------------------------------------------------------------------------------------
# What serves a kind of call now (`tiling.engine_info`), and warming it (`tiling.precompile`)


def kernel_state(kernel: _runtime.Kernel) -> str:
    """"ready" (loaded in this process for these arguments), "compiling" (queued or compiling
    on the thread) or "absent" (not in this process: its first call loads it from the disk
    cache when that holds code for these argument types, else compiles it). Whether the disk
    holds it is not claimed: numba indexes the cache by argument types, which only a call
    computes, and code for other types of the same kernel would not serve this call."""
    if kernel in _runtime._WARM:
        return "ready"
    return "compiling" if _runtime.queued(kernel.dispatcher) else "absent"


def engine_now(like: np.ndarray, layout: Layout, element: ElementType, nbytes: int,
               encode: bool) -> dict:
    """Which engine serves a call like `like` (container view) now, without loading numba or
    compiling anything: a mapping of `engine` ("numpy", "serial" or "parallel"), `kernel`
    (None before numba loads), `state` (`kernel_state`, or for numba itself "compiling" while
    it loads on the thread), and with a `_par` twin `parallel_kernel`, `parallel_state`."""
    if like.flags.c_contiguous and is_row_major(like.shape, layout, element):
        return dict(engine="numpy", kernel="copy", state="ready")
    if _runtime._kernels is None:
        loading = _runtime.queued(_runtime._LOAD)
        serves = (_on_reference(nbytes, layout, element) if not loading else True)
        return dict(engine="numpy" if serves or _runtime.BACKGROUND_COMPILE else "serial",
                    kernel=None, state="compiling" if loading else "absent")
    plan = cached_plan((layout, encode, like.shape, like.strides, like.dtype, element.name),
                       lambda: make_plan(like, layout, element, encode))
    states = [kernel_state(k) for k in plan.dispatchers]
    state = ("ready" if all(s == "ready" for s in states)
             else "compiling" if "compiling" in states else "absent")
    par = plan.parallel
    if (par is not None and like.nbytes >= _runtime._parallel_bytes
            and (par in _runtime._WARM or not _runtime.BACKGROUND_COMPILE)):
        engine = "parallel"
    elif state == "ready" or not _runtime.BACKGROUND_COMPILE:
        engine = "serial"
    else:
        engine = "numpy"
    info = dict(engine=engine, kernel=plan.kernel, state=state)
    if par is not None:
        info.update(parallel_kernel=par.__name__, parallel_state=kernel_state(par))
    return info


def warm(like: np.ndarray, layout: Layout, element: ElementType, nbytes: int,
         encode: bool) -> None:
    """Gives every kernel a call like `like` (a scratch container array) may run its first call
    in this thread: the plan runs once on scratch memory (the `_par` twin where the call would
    take it), and once more on the serial kernel when there is a twin."""
    load_kernels()
    plan = cached_plan((layout, encode, like.shape, like.strides, like.dtype, element.name),
                       lambda: make_plan(like, layout, element, encode))
    buf = np.zeros(nbytes, np.uint8)
    src, dst = (like, buf) if encode else (buf, like)
    with _runtime.foreground():
        plan.run(src, dst)
        if plan.parallel is not None:
            with _runtime.serial():
                plan.run(src, dst)
