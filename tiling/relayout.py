"""`relayout`: a physical buffer in one layout rewritten into another, in one pass.

>>> import numpy as np, tiling
>>> x = np.arange(12, dtype=np.float32).reshape(3, 4)
>>> tiled = tiling.encode(x, "{1,0:T(2,2)}")
>>> row_major = relayout(tiled, "f32[3,4]{1,0:T(2,2)}", "{1,0}")
>>> bool((row_major.view(np.float32) == x.reshape(-1)).all())
True
"""

from __future__ import annotations

import math
import threading

import numpy as np

from tiling import _reference
from tiling._engine import cached_plan, decode_into, encode_into
from tiling._fast_plans import fast_plan
from tiling._generic_plans import store, stored
from tiling._runtime import (
    NotReady, Plan, call, load_kernels, on_reference, specialised, timed,
)
from tiling._geometry import (
    _add_word_dim, _kernel_args, _loop, _num_final, _side_for_layout, _storage_bits,
)
from tiling._checks import describe
from tiling._tuning import BAND_BYTES, BAND_MAX_BYTES
from tiling.codec import in_buffer, out_buffer
from tiling.dtypes import ELEMENT_TYPES, ElementType
from tiling.errors import LayoutError
from tiling.indexing import byte_size, check_encodable
from tiling.layout import COMBINE_DIMENSION, Layout, Shape, as_shape

__all__ = ["relayout"]


def relayout(buffer, src_shape: Shape | str, dst_layout: Layout | Shape | str, *,
             out: np.ndarray | None = None, allow_nested_padding: bool = False) -> np.ndarray:
    """Converts a physical buffer from the layout of `src_shape` to `dst_layout`.

    One pass over memory; the logical array is never built. Layouts that tile only the two
    most-minor dims, in the same physical order or with those two swapped (TPU dumps to
    row-major, `T(8,128)` to `T(2,128)`, `{1,0:T(8,128)(2,1)}` to `{0,1:T(8,128)(2,1)}`), go
    band by band of tile rows through a temporary of about 2 MiB with the fast kernels; other
    pairs move each element straight from its place in `buffer` to its place in the result
    (buffers with sub-byte `E(n)` or widened storage are then unpacked into, or packed from, a
    temporary of the padded element count). Padding in the result is zero.

    Parameters
    ----------
    buffer : ndarray of uint8 or bytes-like
        Exactly `byte_size(src_shape)` bytes, C-contiguous, e.g. a TPU dump in
        `bf16[...]{1,0:T(8,128)(2,1)}`.
    src_shape : Shape or str
        Element type, dimensions and layout of `buffer`.
    dst_layout : Layout, Shape or str
        The layout to produce (`{1,0}` for row-major); a shape must have the same element type
        and dimensions as `src_shape`.
    out : ndarray, optional
        C-contiguous writeable `uint8` array of exactly the destination's byte size.
    allow_nested_padding : bool
        Accept later tiles that pad again (see `tiling.check_encodable`).

    Returns
    -------
    ndarray of uint8
        `out`, or a new buffer.
    """
    src = as_shape(src_shape)
    if isinstance(dst_layout, str):
        text = dst_layout.lstrip()
        dst_layout = Layout.parse(dst_layout) if text.startswith("{") else Shape.parse(dst_layout)
    if isinstance(dst_layout, Shape):
        if (dst_layout.element_type, dst_layout.dimensions) != (src.element_type,
                                                                src.dimensions):
            raise LayoutError(
                f"destination {dst_layout} must have the element type and dimensions of the "
                f"source {src}")
        dst_layout = dst_layout.layout
    if not isinstance(dst_layout, Layout):
        raise LayoutError(f"expected a Layout, a Shape or their text for the destination, "
                          f"found {describe(dst_layout)}")
    if dst_layout.rank != src.rank:
        raise LayoutError(f"destination layout {dst_layout} has rank {dst_layout.rank} but the "
                          f"source {src} has rank {src.rank}")
    dst = Shape(src.element_type, src.dimensions, dst_layout, src.dynamic_dimensions)
    for shape in (src, dst):
        check_encodable(shape, allow_nested_padding=allow_nested_padding)
    buffer = in_buffer(buffer, byte_size(src, allow_nested_padding=allow_nested_padding))
    buf = out_buffer(out, byte_size(dst, allow_nested_padding=allow_nested_padding), buffer,
                     "the buffer", dst)
    element = ELEMENT_TYPES[src.element_type]
    if element.name == "pred" and src.element_size_in_bits == 8 and buffer.size \
            and buffer.max() > 1:
        buffer = buffer != 0  # nonzero pred bytes are True (padding is never read)
    relayout_into(buffer.view(np.uint8), src.dimensions, src.layout, dst.layout, element, buf)
    return buf if out is None else out


# ---------------------------------------------------------------------------------------------
# Planning: buffer in one layout -> buffer in another, without the logical array


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
# faster than `move` (2.3x for 4096x4096 f32 T(8,128) -> T(2,128)). Swapping the two minor dims
# goes band by band too (`_transposed_relayout`); `move` remains for the rest.
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
    """Rows per band: a multiple of `unit`, about BAND_BYTES; None past BAND_MAX_BYTES."""
    item = element.container.itemsize
    if unit * C * item > BAND_MAX_BYTES:
        return None  # rows so long that one band would be a large temporary
    return unit * max(1, BAND_BYTES // (unit * C * item))


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
    return Plan("bands", run, (band,))


def _transposed_relayout(dims, src: Layout, dst: Layout, element: ElementType):
    """A relayout plan for layouts that swap the two most-minor physical dims, or None.

    A band of the source's tile rows is decoded into a temporary and encoded, transposed (a
    strided view), into the band of tile columns it fills in every destination tile row: the
    fast kernels write tile rows `row_step` apart (`fast_plan`); 3.7x faster than `move` for
    4096x4096 bf16 (8,128)(2,1) to its transpose.
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
        plans[k] = fast_plan(np.empty((k, C), container).T, d_plane, element, True,
                             row_step=d_row)
        if plans[k] is None:
            return None
    d_span = {k: (-(-C // d_rows) - 1) * d_row + -(-k // d_tc) * d_tile for k in plans}
    runs = {k: plan.run for k, plan in plans.items()}

    def run(buf, out):
        for p in range(planes):
            for r0 in range(0, R, band):
                k = min(band, R - r0)
                s0, d0 = p * s_size + r0 // s_rows * s_row, p * d_size + r0 // d_tc * d_tile
                tmp = _band_temporary((k, C), container)
                decode_into(buf[s0:s0 + -(-k // s_rows) * s_row], s_plane, element, tmp)
                runs[k](tmp.T, out[d0:d0 + d_span[k]])
        out[planes * d_size:] = 0
    return Plan("transposed bands", run, (band,))


def relayout_plan(dims, src: Layout, dst: Layout, element: ElementType) -> Plan:
    """The plan, `run(buf, out)`, rewriting buffers of `dims` from `src` into `dst`, uncached:
    "encode" or "decode" when one side is untiled at full width (its buffer is a strided view
    of the array), "bands" or "transposed bands" through the fast kernels (above), else
    "move"."""
    load_kernels()
    container = element.container
    n = math.prod(dims)
    if n == 0:
        return Plan("zeros", lambda buf, out: out.fill(0))
    src_used = -(-_num_final(tuple(dims[d] for d in src.major_to_minor), src)
                 * _storage_bits(src, element) // 8)
    if _is_plain(src, element):
        def run(buf, out):  # one pass: the source buffer is a strided view of the array
            encode_into(_logical_view(buf, dims, src, container), dst, element, out)
        return Plan("encode", run)
    if _is_plain(dst, element):
        used = n * container.itemsize

        def run(buf, out):  # one pass: decode straight into the destination buffer
            decode_into(buf[:src_used], src, element, _logical_view(out, dims, dst, container))
            out[used:] = 0
        return Plan("decode", run)
    banded = (_banded_relayout(dims, src, dst, element)
              or _transposed_relayout(dims, src, dst, element))
    if banded is not None:
        return banded
    words = 2 if container.itemsize == 16 else 1
    word = np.dtype(np.uint64) if words == 2 else container
    move = specialised(load_kernels().move, word.str, "relayout")
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
        s = stored(buf, element, s_bits, natural, s_final, src_used, word)
        if d_bits == natural:
            d = out[:d_used].view(word)
            if has_padding:
                d.fill(0)
        else:
            d = (np.zeros if has_padding else np.empty)(d_final, container)
        call(move, sizes, s, *sides[0], d, *sides[1])
        store(d, element, d_bits, natural, d_used, out)
    return Plan("move", run, (sizes, *sides), dispatchers=(move,))


def relayout_into(buf: np.ndarray, dims: tuple[int, ...], src: Layout, dst: Layout,
                  element: ElementType, out: np.ndarray) -> None:
    """Rewrites `buf` (uint8, layout `src`) into `out` (uint8, layout `dst`); inputs checked."""
    if not on_reference(buf.size + out.size, False):
        key = (src, "r", dims, dst, element.name)
        try:
            return cached_plan(key, lambda: relayout_plan(dims, src, dst, element)).run(buf, out)
        except NotReady:
            pass
    logical = np.empty(dims, element.container)
    timed(_reference.decode_into, buf, src, element, logical)
    timed(_reference.encode_into, logical, dst, element, out)
