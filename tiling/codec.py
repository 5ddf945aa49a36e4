"""Public `encode`/`decode`: validate everything, then call the engine.

A call's layout or shape, dtype and dims are validated once per kind of call (`_CALLS`, keyed by
value); its buffers and `out` on every call, by the routines every path shares (`in_buffer`,
`out_buffer`, `_out_array`; `tiling.relayout` uses them too). Then the call runs the plan the
engine made for such calls (`_engine.encoder`/`decoder`), or, while there is none,
`_engine.encode_into`/`decode_into`, which serve it from the numpy reference. The engine receives
only checked inputs: the logical array viewed as its unsigned container, a `Layout`, the
`ElementType`, and a C-contiguous, writeable output of exactly the right size.

>>> import numpy as np
>>> x = np.arange(15, dtype=np.float32).reshape(3, 5)
>>> buf = encode(x, "{1,0:T(2,2)}")
>>> buf.dtype, buf.size
(dtype('uint8'), 96)
>>> bool((decode(buf, "f32[3,5]{1,0:T(2,2)}") == x).all())
True
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass

import numpy as np

from tiling import _engine, _runtime
from tiling._checks import describe, read_sequence
from tiling._tuning import MAX_CALLS, WORKQUEUE_PARALLEL_BYTES
from tiling.dtypes import ELEMENT_TYPES, ElementType, element_type_for_dtype
from tiling.errors import LayoutError
from tiling.indexing import byte_size, check_encodable
from tiling.layout import Layout, Shape, as_shape

__all__ = ["encode", "decode", "engine_info", "precompile"]

def _shape_for_array(x: np.ndarray, layout: Layout | Shape | str) -> Shape:
    """The `Shape` `x` is encoded as; checks dtype, rank and dimensions against `layout`."""
    if isinstance(layout, str):
        layout = Layout.parse(layout) if layout.lstrip().startswith("{") else Shape.parse(layout)
    if isinstance(layout, Layout):
        et = element_type_for_dtype(x.dtype)
        if layout.rank != x.ndim:
            raise LayoutError(f"array has rank {x.ndim} (shape {x.shape}) but layout {layout} "
                              f"has rank {layout.rank}")
        return Shape(et.name, x.shape, layout)
    if isinstance(layout, Shape):
        if element_type_for_dtype(x.dtype).name != layout.element_type:
            raise LayoutError(f"array has dtype {x.dtype} but {layout} expects "
                              f"{layout.dtype} ({layout.element_type})")
        if x.shape != layout.dimensions:
            raise LayoutError(f"array has shape {x.shape} but {layout} expects "
                              f"{layout.dimensions}")
        return layout
    raise LayoutError(f"expected a Layout, a Shape or their text, found {describe(layout)}")


# One cache, keyed by value: per direction, `layout`/`shape` as the caller gave it (a `Layout`
# or `Shape` keeps its hash, text has its own), dtype, dims, strides (encode) and
# `allow_nested_padding`, the validated `_Call`. A repeated call then costs a dict lookup, the
# check of its `out` and one kernel call. Its entries hold plans: the engine drops them with its
# own (`_engine.ON_FORGET`), so the plans' byte cap holds for both.
_CALLS: dict = {}
_engine.ON_FORGET.append(_CALLS.clear)
_U8, _BOOL = np.dtype(np.uint8), type(np.dtype(np.bool_))


@dataclass(slots=True)
class _Call:
    """What a call of one kind needs once validated: the `Shape`, the buffer's byte size, the
    element type, and `work(x_or_buffer, out)`, running the engine's plan for such calls
    once it has one (None while the numpy reference serves them)."""

    shape: Shape
    nbytes: int
    element: ElementType
    work: object = None


def _remember(key, call: _Call) -> _Call:
    if len(_CALLS) >= MAX_CALLS:
        _CALLS.clear()
    _CALLS[key] = call
    return call


def _encode_call(key, x: np.ndarray, layout, allow_nested_padding: bool) -> _Call:
    shape = _shape_for_array(x, layout)  # (an unhashable layout is refused here)
    nbytes = byte_size(shape, allow_nested_padding=allow_nested_padding)
    return _remember(key, _Call(shape, nbytes, ELEMENT_TYPES[shape.element_type]))


def _decode_call(key, shape, allow_nested_padding: bool) -> _Call:
    if isinstance(shape, Layout):
        raise LayoutError(f"decode needs a Shape (element type and dimensions), found the "
                          f"layout {shape}; write e.g. 'f32[3,5]{shape}'")
    parsed = as_shape(shape)
    check_encodable(parsed, allow_nested_padding=allow_nested_padding)
    nbytes = byte_size(parsed, allow_nested_padding=allow_nested_padding)
    return _remember(key, _Call(parsed, nbytes, ELEMENT_TYPES[parsed.element_type]))


def _work(call: _Call, like: np.ndarray, encode: bool):
    """`call.work`, made on first need: `work(x, out)` (encode) or `work(buffer, out)` for
    arrays like `like` (its dtype, shape and strides); None while the engine has no plan (the
    numpy reference serving the first calls, a non-native byte order). A kernel still compiling
    raises `NotReady` from `work`: the engine's numpy reference then serves the call."""
    if like.dtype.isnative:
        et = call.element
        plan = (_engine.encoder if encode else _engine.decoder)(
            like.view(et.container), call.shape.layout, et, call.nbytes)
        if plan is not None:
            run, container = plan.run, et.container
            call.work = (run if plan.logical
                         else (lambda x, out: run(x.view(container), out)) if encode
                         else (lambda buf, out: run(buf, out.view(container))))
    return call.work


def _native(x: np.ndarray) -> np.ndarray:
    return x if x.dtype.isnative else x.astype(x.dtype.newbyteorder("="))


def _base_view(a: np.ndarray, name: str) -> np.ndarray:
    """An ndarray subclass (`np.matrix`, masked arrays, ...) as a plain ndarray over the same
    memory: the kernels index what they are given as flat ndarrays, and a subclass's `reshape`
    or indexing (a matrix stays 2-D) must never reach them. A masked array with masked elements
    is refused: its hidden values would be encoded as if they were data."""
    if isinstance(a, np.ma.MaskedArray) and np.ma.getmask(a) is not np.ma.nomask \
            and np.ma.getmask(a).any():
        raise LayoutError(f"{name} is a masked array with masked elements; fill them first "
                          "(e.g. .filled(0)) or pass .data")
    return a.view(np.ndarray)


def _logical_input(array) -> np.ndarray:
    """`array` as a plain ndarray (subclasses as a view, array-likes converted), or LayoutError."""
    if isinstance(array, np.ndarray):
        return _base_view(array, "array")
    try:
        return np.asarray(array)
    except (ValueError, TypeError, OverflowError) as e:  # ragged lists, mixed objects
        raise LayoutError(f"array must be an array-like of one shape and dtype, found "
                          f"{type(array).__name__}: {e}") from None


def _buffer_input(buffer, name: str):
    """A buffer argument as a plain ndarray when it is one (or bytes-like); anything else is left
    for `_check_buffer` to refuse."""
    if isinstance(buffer, np.ndarray):
        return buffer if type(buffer) is np.ndarray else _base_view(buffer, name)
    if isinstance(buffer, (bytes, bytearray, memoryview)):
        view = memoryview(buffer)
        if not view.c_contiguous:
            raise LayoutError(f"{name} must be C-contiguous, found a non-contiguous memoryview")
        return np.frombuffer(view.cast("B") if view.ndim != 1 or view.format != "B" else view,
                             np.uint8)
    return buffer


def _pred_bytes(x: np.ndarray) -> np.ndarray:
    """`x` (bool) with every nonzero byte stored as 1: numpy holds any nonzero byte as True,
    and the packing and widening paths read only the low bit (a copy only when needed)."""
    if x.size and x.view(np.uint8).max() > 1:
        return x.view(np.uint8) != 0
    return x


@functools.cache
def _memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 2**63 - 1


def _size_text(nbytes: int) -> str:
    for unit, shift in (("EiB", 60), ("PiB", 50), ("TiB", 40), ("GiB", 30), ("MiB", 20)):
        if nbytes >= 1 << shift:
            return f"{nbytes} bytes ({nbytes / (1 << shift):.1f} {unit})"
    return f"{nbytes} bytes"


def allocate(dims: tuple[int, ...], dtype, what: str) -> np.ndarray:
    """`np.empty(dims, dtype)`, refused as LayoutError (saying how many bytes it would need)
    before allocating when numpy cannot index it or it exceeds the machine's memory."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(dims) * dtype.itemsize
    # numpy refuses shapes whose non-zero dims overflow its index type, even with a zero dim
    span = math.prod(d for d in dims if d) * dtype.itemsize
    if span > 2**63 - 1:
        raise LayoutError(f"{what} of shape {dims} ({dtype}) cannot be a numpy array: its "
                          f"dimensions multiply to {_size_text(span)}, past numpy's 2**63 - 1")
    memory = _memory_bytes()
    if nbytes > memory:
        raise LayoutError(f"{what} would need {_size_text(nbytes)}, more than this machine's "
                          f"{_size_text(memory)} of memory")
    try:
        return np.empty(dims, dtype)
    except MemoryError:
        raise LayoutError(f"{what} would need {_size_text(nbytes)}, which could not be "
                          "allocated") from None


def encode(array, layout: Layout | Shape | str, *, out: np.ndarray | None = None,
           allow_nested_padding: bool = False) -> np.ndarray:
    """Encodes a logical array into its tiled physical buffer (flat `uint8`, padding zeroed).

    Parameters
    ----------
    array : array_like
        Any strides or memory order; its dtype picks the element type when `layout` is a
        `Layout` (`bool` → pred, `ml_dtypes.bfloat16` → bf16, ...).
    layout : Layout, Shape or str
        `{1,0:T(8,128)(2,1)}` or `bf16[256,512]{1,0:T(8,128)(2,1)}`; a shape must match the
        array's dtype and dimensions.
    out : ndarray, optional
        C-contiguous writeable `uint8` array of exactly `byte_size` bytes, reused as output.
    allow_nested_padding : bool
        Accept later tiles that pad again (see `tiling.check_encodable`).
    """
    x = array if type(array) is np.ndarray else _logical_input(array)
    dtype = x.dtype
    if type(dtype) is _BOOL:  # (numpy's bool dtypes, with metadata too, and no other)
        x = _pred_bytes(x)
    key = (layout, dtype, x.shape, x.strides, allow_nested_padding)
    try:
        call = _CALLS[key]
    except (KeyError, TypeError):  # (a new kind of call, or an unhashable layout)
        call = None
    if call is None:  # (out of the except block: its errors are not chained onto a KeyError)
        call = _encode_call(key, x, layout, allow_nested_padding)
    buf = out_buffer(out, call.nbytes, x, "the input array", call.shape)
    # (a repeated call: the key's lookup, the checks of `out`, and `work`)
    work = call.work or _work(call, x, True)
    if work is not None:
        try:
            work(x, buf)
            return buf if out is None else out
        except _engine.NotReady:
            pass
    et = call.element
    _engine.encode_into(_native(x).view(et.container), call.shape.layout, et, buf)
    return buf if out is None else out


def decode(buffer, shape: Shape | str, *, out: np.ndarray | None = None,
           allow_nested_padding: bool = False) -> np.ndarray:
    """Decodes a tiled physical buffer into the logical array of `shape`.

    Parameters
    ----------
    buffer : ndarray of uint8 or bytes-like
        Exactly `byte_size(shape)` bytes, C-contiguous. Padding is never read.
    shape : Shape or str
        Element type, dimensions and layout (a layout alone does not say what to build).
    out : ndarray, optional
        C-contiguous writeable array of `shape.dtype` and `shape.dimensions`, filled and returned.
    allow_nested_padding : bool
        Accept later tiles that pad again (see `tiling.check_encodable`).
    """
    key = (shape, allow_nested_padding)
    try:
        call = _CALLS[key]
    except (KeyError, TypeError):
        call = None
    if call is None:
        call = _decode_call(key, shape, allow_nested_padding)
    buf = in_buffer(buffer, call.nbytes)
    array = _out_array(out, call, buf)
    work = call.work or _work(call, array, False)
    if work is not None:
        try:
            work(buf, array)
            return array if out is None else out
        except _engine.NotReady:
            pass
    et = call.element
    _engine.decode_into(buf, call.shape.layout, et, array.view(et.container))
    return array if out is None else out


# The checks every path shares (encode, decode, relayout; first call or repeated)


def in_buffer(buffer, nbytes: int, name: str = "buffer", *,
              writeable: bool = False) -> np.ndarray:
    """`buffer` as a flat uint8 ndarray of `nbytes`, C-contiguous (and writeable), or
    LayoutError."""
    buf = buffer if type(buffer) is np.ndarray else _buffer_input(buffer, name)
    # (on every call: `dtype is` and one `flags` first, the slower comparisons only if needed)
    if not isinstance(buf, np.ndarray) or (buf.dtype is not _U8 and buf.dtype != _U8):
        found = f"dtype {buf.dtype}" if isinstance(buf, np.ndarray) else type(buf).__name__
        raise LayoutError(f"{name} must be a uint8 array, found {found}")
    if buf.size != nbytes:
        raise LayoutError(f"{name} must hold exactly {nbytes} bytes, found {buf.size}")
    flags = buf.flags
    if not flags.c_contiguous:
        raise LayoutError(f"{name} must be C-contiguous")
    if writeable and not flags.writeable:
        raise LayoutError(f"{name} must be writeable")
    return buf if buf.ndim == 1 else buf.reshape(-1)


def out_buffer(out, nbytes: int, source: np.ndarray, source_name: str,
               shape: Shape) -> np.ndarray:
    """`out` as a flat, writeable uint8 ndarray of `nbytes` not overlapping `source`, or a new
    buffer for `shape` when `out` is None; else LayoutError."""
    if out is None:
        return allocate((nbytes,), np.uint8, f"the buffer of {shape}")
    buf = in_buffer(out, nbytes, "out", writeable=True)
    if np.may_share_memory(buf, source):
        raise LayoutError(f"out must not overlap {source_name}")
    return buf


def _out_array(out, call: _Call, buf: np.ndarray) -> np.ndarray:
    """`out` as the C-contiguous, writeable logical array of `call`'s shape (a plain ndarray
    over a subclass's memory) not overlapping `buf`, or a new array; else LayoutError."""
    shape, et = call.shape, call.element
    if out is None:
        return allocate(shape.dimensions, et.dtype, f"the array of {shape}")
    if type(out) is not np.ndarray and isinstance(out, np.ndarray):
        out = _base_view(out, "out")
    # (on every call: `type`, `is` and one `flags` first, the slower tests only if needed)
    if (type(out) is not np.ndarray or (out.dtype is not et.dtype and out.dtype != et.dtype)
            or out.shape != shape.dimensions):
        found = f"{out.dtype} {out.shape}" if isinstance(out, np.ndarray) else type(out).__name__
        raise LayoutError(f"out must be an array of {et.dtype} with shape {shape.dimensions}, "
                          f"found {found}")
    flags = out.flags
    if not (flags.c_contiguous and flags.writeable):
        raise LayoutError("out must be C-contiguous and writeable")
    if np.may_share_memory(out, buf):
        raise LayoutError("out must not overlap the buffer")
    return out


# ---------------------------------------------------------------------------------------------
# The engine made visible: what serves a shape now, and warming it before the first call

_DIRECTIONS = ("encode", "decode")


def _engine_shape(item, dtype, what: str) -> Shape:
    """A Shape, its text, or a Layout (or its text) with `dtype`: then a C-order shape of that
    layout's rank, two tile rows of at least 8 MiB (the fast paths' kernels serve every size
    with the same compiled code; this size takes their parallel twins)."""
    if isinstance(item, str):
        item = Layout.parse(item) if item.lstrip().startswith("{") else Shape.parse(item)
    if isinstance(item, Shape):
        if dtype is not None:
            raise LayoutError(f"{what}: {item} already names its element type; pass dtype only "
                              "with layouts")
        return item
    if not isinstance(item, Layout):
        raise LayoutError(f"{what} takes Shapes, Layouts (with dtype) or their text, found "
                          f"{type(item).__name__}")
    if dtype is None:
        raise LayoutError(f"{what}: the layout {item} does not say its element type; pass "
                          "dtype= or a shape like 'bf16[256,512]{1,0:T(8,128)(2,1)}'")
    et = element_type_for_dtype(dtype)
    first = item.tiles[0].dimensions if item.tiles else (128,)
    cols = max(first[-1], 1) * -(-1024 // max(first[-1], 1))
    rows = max(first[-2], 1) if len(first) > 1 and first[-2] > 0 else 8
    rows *= -(-WORKQUEUE_PARALLEL_BYTES // (rows * cols * et.dtype.itemsize))
    physical = ((1,) * (item.rank - 2) + (rows, cols) if item.rank >= 2
                else (rows * cols,) * item.rank)
    dims = [0] * item.rank
    for size, axis in zip(physical, item.major_to_minor):
        dims[axis] = size
    return Shape(et.name, tuple(dims), item)


def _container_array(shape: Shape, et: ElementType) -> np.ndarray:
    return allocate(shape.dimensions, et.container, f"the scratch array of {shape}")


def precompile(shapes, *, dtype=None, wait: bool = True,
               allow_nested_padding: bool = False) -> None:
    """Readies the kernels that encode and decode C-order arrays of `shapes` in this process,
    so that their first calls run at kernel speed: each kernel loads from the disk cache (a
    fraction of a second) or compiles (seconds, once per machine).

    Parameters
    ----------
    shapes : Shape, Layout, str, or a sequence of them
        `"bf16[4096,4096]{1,0:T(8,128)(2,1)}"`; a layout (`"{1,0:T(8,128)(2,1)}"`) with
        `dtype` stands for arrays of every size in it (its kernels, serial and parallel).
    dtype : numpy dtype, optional
        The element type of the layouts in `shapes`.
    wait : bool
        Return once every kernel is ready (default); False queues them on the background
        compile thread and returns at once (`engine_info` shows their progress).
    allow_nested_padding : bool
        As for `encode`.

    >>> precompile("f32[8,128]{1,0:T(8,128)}")
    >>> engine_info("f32[8,128]{1,0:T(8,128)}")["engine"]
    'numpy'
    """
    items = [shapes] if isinstance(shapes, (str, Shape, Layout)) else read_sequence(
        shapes, "shapes")
    jobs = []
    for item in items:
        shape = _engine_shape(item, dtype, "precompile")
        check_encodable(shape, allow_nested_padding=allow_nested_padding)
        nbytes = byte_size(shape, allow_nested_padding=allow_nested_padding)
        et = ELEMENT_TYPES[shape.element_type]
        for encode in (True, False):
            jobs.append((shape, et, nbytes, encode))
    for shape, et, nbytes, encode in jobs:
        def job(shape=shape, et=et, nbytes=nbytes, encode=encode):
            _engine.warm(_container_array(shape, et), shape.layout, et, nbytes, encode)
        if wait:
            job()
        else:
            _runtime.queue_job(("precompile", shape, encode), job, ("precompile", shape, encode))


def engine_info(shape, *, dtype=None, direction: str = "encode",
                allow_nested_padding: bool = False) -> dict:
    """Which engine serves a call of `shape` (C-order arrays) now, and its kernel's state.

    Returns a dict: `engine` is "numpy" (the bit-identical numpy engine: a byte copy, numba not
    loaded yet, or the kernel still compiling), "serial" or "parallel" (numba's threads);
    `kernel` names the kernel ("copy" for a byte copy); `state` is "ready" (loaded in this
    process for these argument types), "compiling" (on the background thread) or "absent" (not
    in this process: the first call loads it from the disk cache if that holds it, else
    compiles it; the disk cache is indexed by argument types, which only a call computes, so
    whether it holds this kernel is not claimed). A kernel with a parallel twin adds
    `parallel_kernel` and `parallel_state`. Before numba loads, `kernel` is None and `state` is
    "compiling" while numba loads on the thread, else "absent". Nothing loads or compiles to
    answer.

    Parameters
    ----------
    shape : Shape, Layout or str
        As one item of `precompile` (a layout needs `dtype`).
    direction : {"encode", "decode"}

    >>> engine_info("f32[8,128]{1,0:T(8,128)}")
    {'engine': 'numpy', 'kernel': 'copy', 'state': 'ready'}
    """
    if not isinstance(direction, str) or direction not in _DIRECTIONS:
        raise LayoutError(f"direction must be 'encode' or 'decode', found {describe(direction)}")
    shape = _engine_shape(shape, dtype, "engine_info")
    check_encodable(shape, allow_nested_padding=allow_nested_padding)
    nbytes = byte_size(shape, allow_nested_padding=allow_nested_padding)
    et = ELEMENT_TYPES[shape.element_type]
    like = np.lib.stride_tricks.as_strided(np.empty(0, et.container), shape.dimensions,
                                           _c_strides(shape.dimensions, et.container.itemsize))
    info = _engine.engine_now(like, shape.layout, et, nbytes, direction == "encode")
    if info["state"] != "ready" and _runtime.queued(("precompile", shape, direction == "encode")):
        info["state"] = "compiling"  # (a `precompile(..., wait=False)` of it not yet run)
    return info


def _c_strides(dims: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for d in reversed(dims):
        strides.insert(0, step)
        step *= max(d, 1)
    return tuple(strides)
