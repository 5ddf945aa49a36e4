"""`relayout`: a physical buffer in one layout rewritten into another, in one pass.

>>> import numpy as np, tiling
>>> x = np.arange(12, dtype=np.float32).reshape(3, 4)
>>> tiled = tiling.encode(x, "{1,0:T(2,2)}")
>>> row_major = relayout(tiled, "f32[3,4]{1,0:T(2,2)}", "{1,0}")
>>> bool((row_major.view(np.float32) == x.reshape(-1)).all())
True
"""

from __future__ import annotations

import numpy as np

from tiling import _engine
from tiling.codec import _buffer_input, _check_buffer, allocate
from tiling.dtypes import ELEMENT_TYPES
from tiling.errors import LayoutError
from tiling.layout import Layout, Shape, as_shape, byte_size, check_encodable

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
                          f"found {dst_layout!r}")
    if dst_layout.rank != src.rank:
        raise LayoutError(f"destination layout {dst_layout} has rank {dst_layout.rank} but the "
                          f"source {src} has rank {src.rank}")
    dst = Shape(src.element_type, src.dimensions, dst_layout, src.dynamic_dimensions)
    for shape in (src, dst):
        check_encodable(shape, allow_nested_padding=allow_nested_padding)
    buffer = _buffer_input(buffer, "buffer")
    _check_buffer(buffer, byte_size(src, allow_nested_padding=allow_nested_padding), "buffer",
                  writeable=False)
    element = ELEMENT_TYPES[src.element_type]
    if element.name == "pred" and src.element_size_in_bits == 8 and buffer.size \
            and buffer.max() > 1:
        buffer = buffer != 0  # nonzero pred bytes are True (padding is never read)
    nbytes = byte_size(dst, allow_nested_padding=allow_nested_padding)
    given = out
    if out is None:
        out = allocate((nbytes,), np.uint8, f"the buffer of {dst}")
    else:
        out = _buffer_input(out, "out")
        _check_buffer(out, nbytes, "out", writeable=True)
        if np.may_share_memory(out, buffer):
            raise LayoutError("out must not overlap the buffer")
    _engine.relayout_into(buffer.reshape(-1).view(np.uint8), src.dimensions, src.layout,
                          dst.layout, element, out.reshape(-1))
    return out if given is None else given
