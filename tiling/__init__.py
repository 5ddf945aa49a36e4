"""XLA tiled layouts for numpy: exact text, linear indices, and a codec for physical buffers.

>>> import tiling
>>> shape = tiling.Shape.parse("bf16[4,8]{1,0:T(2,4)(2,1)}")
>>> str(shape), tiling.byte_size(shape)
('bf16[4,8]{1,0:T(2,4)(2,1)}', 64)
"""

from tiling.codec import decode, encode, engine_info, precompile
from tiling.dtypes import ELEMENT_TYPES, ElementType
from tiling.errors import LayoutError, LayoutParseError, UnsupportedLayoutError
from tiling.indexing import (
    byte_size,
    check_encodable,
    linear_index,
    logical_index,
    tiled_dimensions,
)
from tiling.layout import COMBINE_DIMENSION, Layout, Shape, Tile
from tiling.relayout import relayout
from tiling.tpu import tpu_layout

__all__ = [
    "COMBINE_DIMENSION", "ELEMENT_TYPES", "ElementType", "Layout", "LayoutError",
    "LayoutParseError", "Shape", "Tile", "UnsupportedLayoutError", "byte_size",
    "check_encodable", "decode", "encode", "engine_info", "linear_index", "logical_index",
    "precompile", "relayout", "tiled_dimensions", "tpu_layout",
]
