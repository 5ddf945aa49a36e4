"""XLA tiled layouts: the `Tile`/`Layout`/`Shape` values, their checks, and their text form.

Text follows XLA's HLO parser and `Layout::Print` (spec `tiled_layout.md` §2); the parser lives
in `tiling._parser`, where each element goes in `tiling.indexing`.

>>> s = Shape.parse("bf16[256,512]{1,0:T(8,128)(2,1)}")
>>> s.layout.tiles
(Tile(dimensions=(8, 128)), Tile(dimensions=(2, 1)))
>>> str(Layout.parse("{ 1 , 0 : T( 2 , * , 128 ) E(0) }"))
'{1,0:T(2,*,128)}'
>>> str(Shape.parse("F32[3,5]"))
'f32[3,5]{1,0}'
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tiling import _runtime
from tiling._checks import (
    COMBINE_DIMENSION, UNBOUNDED_SIZE, describe, int_text, minor_to_major_problem, read_int,
    read_ints, read_sequence, tile_problem,
)
from tiling._parser import _Parser
from tiling.dtypes import ELEMENT_TYPES, element_type, element_type_for_dtype
from tiling.errors import LayoutError

__all__ = ["COMBINE_DIMENSION", "UNBOUNDED_SIZE", "Tile", "Layout", "Shape"]


# ---------------------------------------------------------------------------------------------
# Values


@dataclass(frozen=True, slots=True)
class Tile:
    """One tile of a layout: sizes for the most-minor physical dims, `*` = `COMBINE_DIMENSION`.

    >>> str(Tile((8, 128))), str(Tile((COMBINE_DIMENSION, 2)))
    ('(8,128)', '(*,2)')
    """

    dimensions: tuple[int, ...]
    """Tile sizes, major to minor; `COMBINE_DIMENSION` merges a dim with its minor neighbour."""

    def __post_init__(self):
        dims = read_ints(self.dimensions, "a tile's dimensions")
        object.__setattr__(self, "dimensions", dims)
        problem = tile_problem(dims)
        if problem:
            raise LayoutError(f"invalid tile {dims}: {problem[1]}")

    def __str__(self) -> str:
        return "(" + ",".join("*" if d == COMBINE_DIMENSION else str(d)
                              for d in self.dimensions) + ")"


@dataclass(frozen=True, slots=True)
class Layout:
    """A dense XLA layout, `{minor_to_major:T(tiles)L(n)E(n)S(n)M(n)}`.

    Field order follows `xla_client.Layout(minor_to_major, tiles, element_size_in_bits)`.
    Tiles may be given as plain tuples; they are stored as `Tile`s.

    >>> str(Layout((1, 0), ((8, 128), (2, 1)), 16))
    '{1,0:T(8,128)(2,1)E(16)}'
    """

    minor_to_major: tuple[int, ...]
    """Permutation of `0..rank-1`, most-minor dimension first."""
    tiles: tuple[Tile, ...] = ()
    """Tiles applied left to right, each to the whole shape the previous one produced."""
    element_size_in_bits: int = 0
    """`E(n)`: bits per stored element; 0 means whole bytes (`8*ceil(BitWidth/8)`)."""
    tail_padding_alignment_in_elements: int = 1
    """`L(n)`: the element count is rounded up to a multiple of n."""
    memory_space: int = 0
    """`S(n)`: memory space id; kept for round trips, no effect on bytes."""
    dynamic_shape_metadata_prefix_bytes: int = 0
    """`M(n)`: bytes of dynamic-shape metadata before the data (parsed, not encodable)."""
    _hash: int = field(default=0, init=False, repr=False, compare=False)
    """The value's hash, computed once: the codec's caches are keyed by layout."""

    def __post_init__(self):
        m2m = read_ints(self.minor_to_major, "minor_to_major")
        object.__setattr__(self, "minor_to_major", m2m)
        problem = minor_to_major_problem(m2m)
        if problem:
            raise LayoutError(f"invalid minor_to_major {m2m}: {problem[1]}")
        tiles = tuple(t if isinstance(t, Tile) else Tile(read_sequence(t, "a tile"))
                      for t in read_sequence(self.tiles, "tiles"))
        object.__setattr__(self, "tiles", tiles)
        for name, low in (("element_size_in_bits", 0), ("tail_padding_alignment_in_elements", 1),
                          ("memory_space", -2**63), ("dynamic_shape_metadata_prefix_bytes", 0)):
            object.__setattr__(self, name, read_int(getattr(self, name), name, low))
        # XLA keeps the memory space in 8 bits: S(128) prints S(-128), S(256) is S(0)
        object.__setattr__(self, "memory_space", (self.memory_space + 128) % 256 - 128)
        object.__setattr__(self, "_hash", hash(self._values()))

    def _values(self) -> tuple:
        return (self.minor_to_major, self.tiles, self.element_size_in_bits,
                self.tail_padding_alignment_in_elements, self.memory_space,
                self.dynamic_shape_metadata_prefix_bytes)

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):  # (rebuilt, so that the hash is this process's)
        return type(self), self._values()

    @property
    def rank(self) -> int:
        return len(self.minor_to_major)

    @property
    def major_to_minor(self) -> tuple[int, ...]:
        """`minor_to_major` reversed: the order jax's `Layout` and numpy's transpose use."""
        return self.minor_to_major[::-1]

    @classmethod
    def default(cls, rank: int) -> Layout:
        """XLA's default (row-major) layout, `{rank-1,...,0}`."""
        return cls(tuple(range(read_int(rank, "rank", 0, 1 << 16) - 1, -1, -1)))

    @classmethod
    def parse(cls, text: str) -> Layout:
        """Parses `{1,0:T(8,128)(2,1)}`; raises `LayoutParseError` with a caret."""
        p = _Parser(text)
        fields = p.layout()
        p.expect_end()
        return cls(**fields)

    @classmethod
    def from_jax(cls, layout, dtype=None) -> Layout:
        """Reads jax's layout of an array: a `jax.Array`, its `.format` or `.format.layout`
        (`Layout(major_to_minor, tiling, sub_byte_element_size_in_bits)`, jax 0.10).

        Sub-byte types (int4, uint2, float4_e2m1fn, ...) get `E(bits)`, as XLA prints their
        layouts (`s4[4,8]{1,0:E(4)}`) though jax's layout leaves the field 0. A Format or Layout
        does not say its element type: pass `dtype` with one whose element size is not set
        (`Layout.from_jax(x.format, x.dtype)`); without it such a layout is refused rather than
        read without its `E(n)`."""
        dtype = getattr(layout, "dtype", dtype)
        for name in ("format", "layout"):  # an array, then its Format
            if not hasattr(layout, "major_to_minor") and hasattr(layout, name):
                layout = getattr(layout, name)
        m2m = getattr(layout, "major_to_minor", None)
        if not isinstance(m2m, (tuple, list)):
            raise LayoutError(f"expected a jax array, Format or Layout with a concrete layout "
                              f"(major_to_minor), found {type(layout).__name__}")
        bits = read_int(layout.sub_byte_element_size_in_bits, "sub_byte_element_size_in_bits", 0)
        if not bits:
            if dtype is None:
                raise LayoutError(
                    f"jax's {type(layout).__name__} {layout} does not say its element type, "
                    "which decides E(n) (XLA stores int4 as {...:E(4)}): pass dtype, e.g. "
                    "Layout.from_jax(x.format, x.dtype), or the array itself")
            et = element_type_for_dtype(dtype)
            # (jax lowers int1/uint1 to i1/ui1, which XLA holds as pred: one byte each, no E(1))
            bits = et.bit_width if 1 < et.bit_width < 8 else 0
        return cls(tuple(m2m)[::-1], tuple(read_sequence(t, "a tile")
                                           for t in read_sequence(layout.tiling or (), "tiling")),
                   bits)

    def to_jax(self):
        """This layout as jax's `Layout` (for `jax.device_put(x, Format(layout, sharding))`);
        jax's has no `L(n)`, `S(n)` or `M(n)`, so those are refused."""
        if (self.tail_padding_alignment_in_elements != 1 or self.memory_space
                or self.dynamic_shape_metadata_prefix_bytes):
            raise LayoutError(f"{self}: jax's Layout holds only minor_to_major, tiles and E(n)")
        JaxLayout = _runtime.guarded_import("jax.experimental.layout").Layout
        return JaxLayout(self.major_to_minor, tuple(t.dimensions for t in self.tiles),
                         self.element_size_in_bits)

    @classmethod
    def from_pjrt_layout(cls, layout) -> Layout:
        """Reads an `xla_client.Layout` / jax `Layout._to_xla_layout()`-style object."""
        return cls(tuple(layout.minor_to_major()),
                   tuple(tuple(t) for t in layout.tiling()),
                   int(layout.element_size_in_bits()))

    def __repr__(self) -> str:
        return f"Layout({str(self)!r})"

    def __str__(self) -> str:
        attrs = ""
        if self.tiles:
            attrs += "T" + "".join(str(t) for t in self.tiles)
        if self.tail_padding_alignment_in_elements != 1:
            attrs += f"L({self.tail_padding_alignment_in_elements})"
        if self.element_size_in_bits:
            attrs += f"E({self.element_size_in_bits})"
        if self.memory_space:
            attrs += f"S({self.memory_space})"
        if self.dynamic_shape_metadata_prefix_bytes:
            attrs += f"M({self.dynamic_shape_metadata_prefix_bytes})"
        text = "{" + ",".join(map(str, self.minor_to_major))
        return text + (":" + attrs if attrs else "") + "}"


@dataclass(frozen=True, slots=True)
class Shape:
    """An array shape with its layout, `bf16[256,512]{1,0:T(8,128)(2,1)}`.

    Without a layout XLA's default is filled in, as XLA's parser does (`f32[3]` is `f32[3]{0}`).

    >>> str(Shape("f32", (3, 5), Layout((1, 0), ((2, 2),))))
    'f32[3,5]{1,0:T(2,2)}'
    >>> str(Shape("f32", ()))
    'f32[]'
    """

    element_type: str
    """XLA's lowercase type name (`bf16`); see `tiling.dtypes.ELEMENT_TYPES`."""
    dimensions: tuple[int, ...]
    """Logical sizes in numpy order; a `?` dimension has size `UNBOUNDED_SIZE`."""
    layout: Layout | None = None
    """The layout; `None` is replaced by `Layout.default(rank)`."""
    dynamic_dimensions: tuple[bool, ...] = ()
    """Per dimension: dynamic (`<=N` or `?`)? Empty means all static."""
    _hash: int = field(default=0, init=False, repr=False, compare=False)
    """The value's hash, computed once: the codec's caches are keyed by shape."""

    def __post_init__(self):
        if not isinstance(self.element_type, str):
            raise LayoutError(f"element_type must be a name like 'f32', found "
                              f"{describe(self.element_type)}")
        et = element_type(self.element_type)
        object.__setattr__(self, "element_type", et.name)
        dims = read_ints(self.dimensions, "dimensions")
        object.__setattr__(self, "dimensions", dims)
        dyn = (tuple(bool(d) for d in read_sequence(self.dynamic_dimensions,
                                                      "dynamic_dimensions"))
               or (False,) * len(dims))
        if len(dyn) != len(dims):
            raise LayoutError(f"dynamic_dimensions has {len(dyn)} entries for rank {len(dims)}")
        object.__setattr__(self, "dynamic_dimensions", dyn)
        for d, is_dyn in zip(dims, dyn):
            if not (0 <= d or (is_dyn and d == UNBOUNDED_SIZE)):
                raise LayoutError(f"dimension sizes must be >= 0, found {int_text(d)}")
        layout = Layout.default(len(dims)) if self.layout is None else self.layout
        if not isinstance(layout, Layout):
            raise LayoutError(f"expected a Layout, found {describe(layout)}")
        object.__setattr__(self, "layout", layout)
        if layout.rank != len(dims):
            raise LayoutError(f"Dimensions size is {len(dims)}, but minor to major size is "
                              f"{layout.rank}.")
        object.__setattr__(self, "_hash", hash(self._values()))

    def _values(self) -> tuple:
        return self.element_type, self.dimensions, self.layout, self.dynamic_dimensions

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):  # (rebuilt, so that the hash is this process's)
        return type(self), self._values()

    @property
    def rank(self) -> int:
        return len(self.dimensions)

    @property
    def dtype(self) -> np.dtype:
        """numpy/ml_dtypes dtype of the logical array."""
        return ELEMENT_TYPES[self.element_type].dtype

    @property
    def element_size_in_bits(self) -> int:
        """Bits one element occupies in the buffer (`E(n)`, else whole bytes)."""
        return self.layout.element_size_in_bits or ELEMENT_TYPES[self.element_type].storage_bits

    @property
    def physical_dimensions(self) -> tuple[int, ...]:
        """Dims in major-to-minor order: what the tiles act on."""
        return tuple(self.dimensions[a] for a in self.layout.major_to_minor)

    @classmethod
    def parse(cls, text: str) -> Shape:
        """Parses `bf16[256,512]{1,0:T(8,128)(2,1)}`; raises `LayoutParseError` with a caret."""
        p = _Parser(text)
        name, dims, layout, dynamic = p.shape()
        p.expect_end()
        return cls(name, dims, None if layout is None else Layout(**layout), dynamic)

    def __repr__(self) -> str:
        return f"Shape({str(self)!r})"

    def __str__(self) -> str:
        dims = ",".join("?" if d == UNBOUNDED_SIZE and dyn else ("<=" if dyn else "") + str(d)
                        for d, dyn in zip(self.dimensions, self.dynamic_dimensions))
        text = f"{self.element_type}[{dims}]"
        layout = str(self.layout)
        # XLA omits a rank-0 layout that has nothing to say (`f32[]`, not `f32[]{}`).
        return text if layout == "{}" else text + layout


def as_shape(shape: Shape | str) -> Shape:
    if isinstance(shape, Shape):
        return shape
    if isinstance(shape, str):
        return Shape.parse(shape)
    raise LayoutError(f"expected a Shape or shape text like 'f32[3,5]{{1,0}}', found {describe(shape)}")


def as_layout(layout: Layout | str) -> Layout:
    if isinstance(layout, Layout):
        return layout
    if isinstance(layout, str):
        return Layout.parse(layout)
    raise LayoutError(f"expected a Layout or layout text like '{{1,0:T(8,128)}}', "
                      f"found {describe(layout)}")

