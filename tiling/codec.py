"""Public `encode`/`decode`: validate everything, then call one engine function per direction.

The engine (`_engine.encode_into`/`decode_into`, with the Numba kernels and the numpy reference
behind it) receives only checked inputs: the logical array viewed as its unsigned container, a
`Layout`, the `ElementType`, and a C-contiguous, writeable output of exactly the right size.

>>> import numpy as np
>>> x = np.arange(15, dtype=np.float32).reshape(3, 5)
>>> buf = encode(x, "{1,0:T(2,2)}")
>>> buf.dtype, buf.size
(dtype('uint8'), 96)
>>> bool((decode(buf, "f32[3,5]{1,0:T(2,2)}") == x).all())
True
"""

from __future__ import annotations

import math
import os

import numpy as np

from tiling import _engine
from tiling.dtypes import ELEMENT_TYPES, element_type_for_dtype
from tiling.errors import LayoutError
from tiling.layout import Layout, Shape, as_shape, byte_size, check_encodable

__all__ = ["encode", "decode"]

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
    raise LayoutError(f"expected a Layout, a Shape or their text, found {layout!r}")


_CHECKED: dict = {}
_MAX_CHECKED = 1024


def _checked(x: np.ndarray, layout, allow_nested_padding: bool):
    """(shape, byte size, element type, container dtype) for `x` in `layout`, validated once per
    (layout, dtype, dims): a repeated small call then costs a dict lookup, not a re-derivation.

    Keyed by the layout object's id (hashing a Layout costs more than a small encode); the entry
    holds the layout, so the id cannot be reused while it is cached.
    """
    key = (id(layout), x.dtype, x.shape, allow_nested_padding)
    hit = _CHECKED.get(key)
    if hit is None or hit[0] is not layout:
        shape = _shape_for_array(x, layout)
        et = ELEMENT_TYPES[shape.element_type]
        hit = (layout, shape, byte_size(shape, allow_nested_padding=allow_nested_padding), et,
               et.container)
        if len(_CHECKED) >= _MAX_CHECKED:
            _CHECKED.clear()
        _CHECKED[key] = hit
    return hit[1:]


def _checked_shape(shape, allow_nested_padding: bool):
    """(shape, byte size, element type, container) for decode, validated once per shape object
    (or text), like `_checked`."""
    key = (id(shape), allow_nested_padding)
    hit = _CHECKED.get(key)
    if hit is None or hit[0] is not shape:
        parsed = as_shape(shape)
        check_encodable(parsed, allow_nested_padding=allow_nested_padding)
        et = ELEMENT_TYPES[parsed.element_type]
        hit = (shape, parsed, byte_size(parsed, allow_nested_padding=allow_nested_padding), et,
               et.container)
        if len(_CHECKED) >= _MAX_CHECKED:
            _CHECKED.clear()
        _CHECKED[key] = hit
    return hit[1:]


# Per-call shortcut: keyed like `_checked` plus the strides, filled after a full validation with
# the function that does the work for arrays like that one; a hit skips validation and planning
# and re-checks only what can change between calls (the `out` buffer, the input buffer). Layouts
# that are byte copies of the C-order array (`_engine.is_row_major`, e.g. one f32[8,128] tile
# under T(8,128)) copy through memoryviews where the dtype allows (ml_dtypes' do not): 0.4 µs
# for 4 KiB against 0.9 µs for numpy's view-and-assign, most of it making the views (measured).
# The others call the engine's plan directly: for f32[64,64,64]{0,2,1:T(4,8)(2,1)} that leaves
# 2.7 µs of Python around the kernel instead of 4.8 (measured with the kernel stubbed out).
_DIRECT: dict = {}
_engine._ON_FORGET.append(_DIRECT.clear)  # its entries hold plans: dropped with them
_U8 = np.dtype(np.uint8)


def _exports_buffer(dtype: np.dtype) -> bool:
    try:
        memoryview(np.empty(0, dtype))
    except ValueError:
        return False
    return True


def _copy_array(x, out):
    out.data[:] = x.data.cast("B")


def _assign_array(x, out):
    out[...] = x.reshape(-1).view(_U8)  # (item assignment: cheaper than np.copyto)


def _copy_buffer(buf, out):
    out.data.cast("B")[:] = buf.data


def _assign_buffer(buf, out):
    out.reshape(-1).view(_U8)[...] = buf


def _remember(key, owner, work) -> None:
    if len(_DIRECT) >= _MAX_CHECKED:
        _DIRECT.clear()
    _DIRECT[key] = (owner, work)


def _encoder(x: np.ndarray, shape: Shape, nbytes: int, et, container):
    """`work(x, out)` for later arrays with x's dtype, shape and strides, or None while there
    is none to keep (the numpy reference serving the first calls, a non-native byte order)."""
    if not x.dtype.isnative:
        return None
    if x.flags.c_contiguous and _engine.is_row_major(x.shape, shape.layout, et):
        return _copy_array if _exports_buffer(x.dtype) else _assign_array
    run = _engine.encoder(x.view(container), shape.layout, et, nbytes)
    if run is None or getattr(run, "takes_logical", False):
        return run
    return lambda x, out: run(x.view(container), out)


def _decoder(out: np.ndarray, shape: Shape, nbytes: int, et, container):
    """`work(buffer, out)` for later C-contiguous outputs like `out`, or None (see `_encoder`)."""
    if _engine.is_row_major(shape.dimensions, shape.layout, et):
        return _copy_buffer if _exports_buffer(et.dtype) else _assign_buffer
    run = _engine.decoder(out.view(container), shape.layout, et, nbytes)
    if run is None or getattr(run, "takes_logical", False):
        return run
    return lambda buf, out: run(buf, out.view(container))


def _fresh_out(out, nbytes: int, other) -> bool:
    """`out` is a 1-D C-contiguous writeable uint8 array of `nbytes`, not overlapping `other`."""
    if type(out) is not np.ndarray or out.dtype is not _U8 and out.dtype != _U8:
        return False
    flags = out.flags
    return (out.ndim == 1 and out.size == nbytes and flags.c_contiguous and flags.writeable
            and not np.may_share_memory(out, other))


def _fresh_array(out, dtype: np.dtype, dims, other) -> bool:
    """`out` is a C-contiguous writeable array of `dtype` and `dims`, not overlapping `other`."""
    if type(out) is not np.ndarray or out.dtype != dtype or out.shape != dims:
        return False
    flags = out.flags
    return flags.c_contiguous and flags.writeable and not np.may_share_memory(out, other)


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
    if x.dtype.kind == "b":
        x = _pred_bytes(x)
    key = (id(layout), x.dtype, x.shape, x.strides, allow_nested_padding)
    hit = _DIRECT.get(key)
    if hit is not None and hit[0] is layout:
        nbytes, work = hit[1]
        if out is None or _fresh_out(out, nbytes, x):
            out = np.empty(nbytes, np.uint8) if out is None else out
            try:
                work(x, out)
                return out
            except _engine.NotReady:  # a kernel still compiling: the engine's reference serves
                pass
    shape, nbytes, et, container = _checked(x, layout, allow_nested_padding)
    given = out
    if out is None:
        out = allocate((nbytes,), np.uint8, f"the buffer of {shape}")
    else:
        out = _buffer_input(out, "out")
        _check_buffer(out, nbytes, "out", writeable=True)
        if np.may_share_memory(out, x):
            raise LayoutError("out must not overlap the input array")
    if hit is None or hit[0] is not layout:
        work = _encoder(x, shape, nbytes, et, container)
        if work is not None:
            _remember(key, layout, (nbytes, work))
    _engine.encode_into(_native(x).view(container), shape.layout, et, out.reshape(-1))
    return out if given is None else given


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
    if isinstance(shape, Layout):
        raise LayoutError(f"decode needs a Shape (element type and dimensions), found the "
                          f"layout {shape}; write e.g. 'f32[3,5]{shape}'")
    key = (id(shape), allow_nested_padding)
    hit = _DIRECT.get(key)
    if hit is not None and hit[0] is shape and type(buffer) is np.ndarray:
        nbytes, dtype, dims, work = hit[1]
        if (buffer.dtype == _U8 and buffer.ndim == 1 and buffer.size == nbytes
                and buffer.flags.c_contiguous and (out is None or _fresh_array(out, dtype, dims,
                                                                               buffer))):
            out = np.empty(dims, dtype) if out is None else out
            try:
                work(buffer, out)
                return out
            except _engine.NotReady:
                pass
    owner = shape
    shape, nbytes, et, container = _checked_shape(shape, allow_nested_padding)
    buffer = _buffer_input(buffer, "buffer")
    _check_buffer(buffer, nbytes, "buffer", writeable=False)
    given = out
    if out is None:
        out = allocate(shape.dimensions, et.dtype, f"the array of {shape}")
    else:
        if isinstance(out, np.ndarray) and type(out) is not np.ndarray:
            out = _base_view(out, "out")
        if not isinstance(out, np.ndarray) or out.dtype != et.dtype \
                or out.shape != shape.dimensions:
            found = (f"{out.dtype} {out.shape}" if isinstance(out, np.ndarray)
                     else type(out).__name__)
            raise LayoutError(f"out must be an array of {et.dtype} with shape "
                              f"{shape.dimensions}, found {found}")
        if not (out.flags.c_contiguous and out.flags.writeable):
            raise LayoutError("out must be C-contiguous and writeable")
        if np.may_share_memory(out, buffer):
            raise LayoutError("out must not overlap the buffer")
    if hit is None or hit[0] is not owner:
        work = _decoder(out, shape, nbytes, et, container)
        if work is not None:
            _remember(key, owner, (nbytes, et.dtype, shape.dimensions, work))
    _engine.decode_into(buffer.reshape(-1), shape.layout, et, out.view(container))
    return out if given is None else given


def _check_buffer(buf, nbytes: int, name: str, *, writeable: bool) -> None:
    if not isinstance(buf, np.ndarray) or buf.dtype != np.uint8:
        found = f"dtype {buf.dtype}" if isinstance(buf, np.ndarray) else type(buf).__name__
        raise LayoutError(f"{name} must be a uint8 array, found {found}")
    if buf.size != nbytes:
        raise LayoutError(f"{name} must hold exactly {nbytes} bytes, found {buf.size}")
    if not buf.flags.c_contiguous:
        raise LayoutError(f"{name} must be C-contiguous")
    if writeable and not buf.flags.writeable:
        raise LayoutError(f"{name} must be writeable")
