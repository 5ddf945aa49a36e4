"""XLA tiled layouts: the `Tile`/`Layout`/`Shape` values, their text form, and index arithmetic.

Text follows XLA's HLO parser and `Layout::Print` (spec `tiled_layout.md` §2):

>>> s = Shape.parse("bf16[256,512]{1,0:T(8,128)(2,1)}")
>>> s.layout.tiles
(Tile(dimensions=(8, 128)), Tile(dimensions=(2, 1)))
>>> str(Layout.parse("{ 1 , 0 : T( 2 , * , 128 ) E(0) }"))
'{1,0:T(2,*,128)}'
>>> str(Shape.parse("F32[3,5]"))
'f32[3,5]{1,0}'

Where each element goes (spec §3): tiles act on the physical dims (the logical dims in
major-to-minor order), right-aligned; each tile acts on the whole shape the previous one made.

>>> int(linear_index((2, 3), "f32[3,5]{1,0:T(2,2)}"))
17
>>> byte_size("bf16[5,300]{1,0:T(8,128)(2,1)}")
6144
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from tiling.dtypes import ELEMENT_TYPES, ElementType, element_type
from tiling.errors import LayoutError, LayoutParseError, UnsupportedLayoutError

__all__ = [
    "COMBINE_DIMENSION", "UNBOUNDED_SIZE", "Tile", "Layout", "Shape", "TileStep",
    "tile_steps", "tiled_dimensions", "linear_index", "logical_index", "byte_size",
    "check_encodable",
]

COMBINE_DIMENSION = -(2**63)
"""XLA's `Tile::kCombineDimension` (INT64_MIN), printed `*`: merge with the next minor dim."""
UNBOUNDED_SIZE = -(2**63)
"""XLA's `Shape::kUnboundedSize`, the size of a `?` dimension."""
_INT64_MAX = 2**63 - 1
_ATTRIBUTE_ORDER = ("D", "T", "L", "#", "*", "E", "S", "SC", "P", "M")
_SPARSE_ONLY = {
    "#": "'#(...)' (index_primitive_type) is for sparse arrays only",
    "*": "'*(...)' (pointer_primitive_type) is for sparse arrays only",
    "P": "'P(...)' (physical_shape) is for sparse arrays only",
    "SC": "'SC(...)' (split_configs) is not supported: it spreads a buffer over memories",
}


# ---------------------------------------------------------------------------------------------
# Checks shared by the constructors (plain LayoutError) and the parser (with a position).
# Each returns (offending item number, message) or None.


def _tile_problem(dims: tuple[int, ...]) -> tuple[int, str] | None:
    if not dims:
        return 0, "a tile needs at least one dimension, found T()"
    for i, d in enumerate(dims):
        if d == COMBINE_DIMENSION:
            continue  # (a last '*' is text XLA accepts, refused by `tile_steps`)
        if d < 0:
            return i, f"tile dimension {d} is negative; write '*' (not -1) for a combined " \
                      "dimension"
        elif d == 0:
            return i, "tile dimension 0: tile sizes must be >= 1"
        elif d > _INT64_MAX:
            return i, f"tile dimension {d} does not fit in int64"
    return None


def _minor_to_major_problem(m2m: tuple[int, ...]) -> tuple[int, str] | None:
    seen = set()
    for i, d in enumerate(m2m):
        if not 0 <= d < len(m2m):
            return i, (f"minor_to_major entry {d} is out of range: expected a permutation of "
                       f"0..{len(m2m) - 1}")
        if d in seen:
            return i, (f"minor_to_major entry {d} is repeated: expected a permutation of "
                       f"0..{len(m2m) - 1}")
        seen.add(d)
    return None


def _element_size_problem(et: ElementType, bits: int) -> str | None:
    """Which `E(n)` the codec can express for `et` (spec §8)."""
    if bits == 0 or bits == et.storage_bits or (bits < 8 and bits == et.bit_width):
        return None
    if bits < et.bit_width:
        return (f"E({bits}) is narrower than {et.name}'s {et.bit_width} bits: storing it "
                "would lose data")
    if bits < 8:
        return (f"E({bits}) for {et.name}: a sub-byte element size must equal the type's "
                f"bit width ({et.bit_width})")
    if not et.is_integer:
        return f"E({bits}) for {et.name}: only integer and pred elements may be widened"
    if bits not in (16, 32, 64):
        return f"E({bits}) for {et.name}: a widened element size must be 16, 32 or 64 bits"
    return None


def _as_tuple(value, what: str) -> tuple:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise LayoutError(f"{what} must be a sequence, found {value!r}")
    return tuple(value)


def _as_int(value, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise LayoutError(f"{what} must be an integer, found {value!r}")
    return int(value)


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
        dims = tuple(_as_int(d, "a tile dimension")
                     for d in _as_tuple(self.dimensions, "a tile's dimensions"))
        object.__setattr__(self, "dimensions", dims)
        problem = _tile_problem(dims)
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
        m2m = tuple(_as_int(d, "a minor_to_major entry")
                    for d in _as_tuple(self.minor_to_major, "minor_to_major"))
        object.__setattr__(self, "minor_to_major", m2m)
        problem = _minor_to_major_problem(m2m)
        if problem:
            raise LayoutError(f"invalid minor_to_major {m2m}: {problem[1]}")
        tiles = tuple(t if isinstance(t, Tile) else Tile(_as_tuple(t, "a tile"))
                      for t in _as_tuple(self.tiles, "tiles"))
        object.__setattr__(self, "tiles", tiles)
        for name, low in (("element_size_in_bits", 0), ("tail_padding_alignment_in_elements", 1),
                          ("memory_space", -2**63), ("dynamic_shape_metadata_prefix_bytes", 0)):
            value = _as_int(getattr(self, name), name)
            if not low <= value <= _INT64_MAX:
                raise LayoutError(f"{name} must be >= {low}, found {value}")
            object.__setattr__(self, name, value)
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
        return cls(tuple(range(rank - 1, -1, -1)))

    @classmethod
    def parse(cls, text: str) -> Layout:
        """Parses `{1,0:T(8,128)(2,1)}`; raises `LayoutParseError` with a caret."""
        p = _Parser(text)
        layout = p.layout()
        p.expect_end()
        return layout

    @classmethod
    def from_jax(cls, layout, dtype=None) -> Layout:
        """Reads jax's layout of an array: a `jax.Array`, its `.format` or `.format.layout`
        (`Layout(major_to_minor, tiling, sub_byte_element_size_in_bits)`, jax 0.10). Sub-byte
        types (int4, ...) get `E(bits)` as jax's `_to_xla_layout` fills it in; give `dtype`
        when passing a Format or Layout of such an array."""
        dtype = getattr(layout, "dtype", dtype)
        for name in ("format", "layout"):  # an array, then its Format
            if not hasattr(layout, "major_to_minor") and hasattr(layout, name):
                layout = getattr(layout, name)
        m2m = getattr(layout, "major_to_minor", None)
        if not isinstance(m2m, (tuple, list)):
            raise LayoutError(f"expected a jax array, Format or Layout with a concrete layout "
                              f"(major_to_minor), found {layout!r}")
        bits = layout.sub_byte_element_size_in_bits
        if not bits and dtype is not None:
            from tiling.dtypes import element_type_for_dtype
            et = element_type_for_dtype(dtype)
            bits = et.bit_width if et.bit_width < 8 and et.name != "pred" else 0
        return cls(tuple(m2m)[::-1], tuple(tuple(t) for t in layout.tiling or ()), bits)

    def to_jax(self):
        """This layout as jax's `Layout` (for `jax.device_put(x, Format(layout, sharding))`);
        jax's has no `L(n)`, `S(n)` or `M(n)`, so those are refused."""
        if (self.tail_padding_alignment_in_elements != 1 or self.memory_space
                or self.dynamic_shape_metadata_prefix_bytes):
            raise LayoutError(f"{self}: jax's Layout holds only minor_to_major, tiles and E(n)")
        from jax.experimental.layout import Layout as JaxLayout
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
                              f"{self.element_type!r}")
        et = element_type(self.element_type)
        object.__setattr__(self, "element_type", et.name)
        dims = tuple(_as_int(d, "a dimension") for d in _as_tuple(self.dimensions, "dimensions"))
        object.__setattr__(self, "dimensions", dims)
        dyn = (tuple(bool(d) for d in _as_tuple(self.dynamic_dimensions, "dynamic_dimensions"))
               or (False,) * len(dims))
        if len(dyn) != len(dims):
            raise LayoutError(f"dynamic_dimensions has {len(dyn)} entries for rank {len(dims)}")
        object.__setattr__(self, "dynamic_dimensions", dyn)
        for d, is_dyn in zip(dims, dyn):
            if not (0 <= d <= _INT64_MAX or (is_dyn and d == UNBOUNDED_SIZE)):
                raise LayoutError(f"dimension sizes must be >= 0, found {d} in {dims}")
        layout = Layout.default(len(dims)) if self.layout is None else self.layout
        if not isinstance(layout, Layout):
            raise LayoutError(f"expected a Layout, found {layout!r}")
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
        shape = p.shape()
        p.expect_end()
        return shape

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
    raise LayoutError(f"expected a Shape or shape text like 'f32[3,5]{{1,0}}', found {shape!r}")


def as_layout(layout: Layout | str) -> Layout:
    if isinstance(layout, Layout):
        return layout
    if isinstance(layout, str):
        return Layout.parse(layout)
    raise LayoutError(f"expected a Layout or layout text like '{{1,0:T(8,128)}}', "
                      f"found {layout!r}")


# ---------------------------------------------------------------------------------------------
# Parser (XLA's HLO grammar for shapes and layouts, spec §2.2)

_PUNCTUATION = "{}()[],:*#?+~"


class _Parser:
    def __init__(self, text: str):
        if not isinstance(text, str):
            raise LayoutError(f"expected layout or shape text (str), found {type(text).__name__}")
        self.text = text
        self.tokens = self._tokenize(text)
        self.i = 0

    def error(self, message: str, pos: int | None = None) -> LayoutParseError:
        return LayoutParseError(message, self.text, self.tokens[self.i][2] if pos is None else pos)

    def _tokenize(self, s: str) -> list[tuple[str, object, int]]:
        tokens, i, n = [], 0, len(s)
        while i < n:
            c = s[i]
            if c.isspace():
                i += 1
            elif c in "0123456789" or (c == "-" and i + 1 < n and s[i + 1] in "0123456789"):
                j = i + 1
                while j < n and s[j] in "0123456789":
                    j += 1
                digits = s[i:j].lstrip("-").lstrip("0")
                if len(digits) > 19:  # (also keeps int() under Python's 4,300-digit limit)
                    raise LayoutParseError(f"integer of {len(digits)} digits does not fit in "
                                           "int64", s, i)
                tokens.append(("int", int(s[i:j]), i))
                i = j
            elif c.isascii() and (c.isalpha() or c == "_"):
                j = i + 1
                while j < n and s[j].isascii() and (s[j].isalnum() or s[j] == "_"):
                    j += 1
                tokens.append(("id", s[i:j], i))
                i = j
            elif s.startswith("<=", i):
                tokens.append(("<=", "<=", i))
                i += 2
            elif c in _PUNCTUATION:
                tokens.append((c, c, i))
                i += 1
            else:
                raise LayoutParseError(f"unexpected character {c!r}", s, i)
        tokens.append(("end", None, n))
        return tokens

    # -- token access --
    def kind(self, ahead: int = 0) -> str:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)][0]

    def pos(self) -> int:
        return self.tokens[self.i][2]

    def at_id(self, name: str) -> bool:
        kind, value, _ = self.tokens[self.i]
        return kind == "id" and value == name

    def eat(self, kind: str) -> bool:
        if self.kind() == kind:
            self.i += 1
            return True
        return False

    def expect(self, kind: str, what: str):
        tok_kind, value, pos = self.tokens[self.i]
        if tok_kind != kind:
            found = "end of text" if tok_kind == "end" else repr(value)
            raise LayoutParseError(f"expected {what}, found {found}", self.text, pos)
        self.i += 1
        return value

    def expect_end(self):
        self.expect("end", "end of text")

    def int64(self, what: str, low: int = 0) -> int:
        pos = self.pos()
        value = self.expect("int", what)
        if not low <= value <= _INT64_MAX:
            raise LayoutParseError(f"{what} must be >= {low}, found {value}", self.text, pos)
        return value

    def paren_int(self, what: str, low: int) -> int:
        self.expect("(", f"'(' after {what[0]}")
        value = self.int64(what, low)
        self.expect(")", f"')' closing {what[0]}(...)")
        return value

    # -- grammar --
    def shape(self) -> Shape:
        pos = self.pos()
        name = self.expect("id", "an element type like f32")
        if name.lower() not in ELEMENT_TYPES:
            raise LayoutParseError(
                f"unknown element type {name!r}; expected one of {', '.join(ELEMENT_TYPES)}",
                self.text, pos)
        self.expect("[", "'[' after the element type")
        dims, dyn = [], []
        if self.kind() != "]":
            while True:
                if self.eat("?"):
                    dims.append(UNBOUNDED_SIZE)
                    dyn.append(True)
                else:
                    dyn.append(self.eat("<="))
                    dims.append(self.int64("a dimension size"))
                if not self.eat(","):
                    break
        self.expect("]", "',' or ']' in the dimensions")
        layout, layout_pos = None, self.pos()
        if self.kind() == "{" and self.kind(1) not in ("int", ":"):
            raise self.error("a layout after ']' starts with a dimension number or ':' "
                             "(XLA reads no layout here, then fails on the '{')")
        if self.kind() == "{":
            layout = self.layout()
            if layout.rank != len(dims):
                raise LayoutParseError(
                    f"Dimensions size is {len(dims)}, but minor to major size is "
                    f"{layout.rank}.", self.text, layout_pos)
        return Shape(name, tuple(dims), layout, tuple(dyn))

    def layout(self) -> Layout:
        self.expect("{", "'{' starting a layout")
        m2m, m2m_pos = [], []
        if self.kind() == "int":
            while True:
                m2m_pos.append(self.pos())
                m2m.append(self.int64("a minor_to_major entry"))
                if not self.eat(","):
                    break
        problem = _minor_to_major_problem(tuple(m2m))
        if problem:
            raise LayoutParseError(problem[1], self.text, m2m_pos[problem[0]])
        fields = {}
        if self.eat(":"):
            done = -1  # index in _ATTRIBUTE_ORDER of the last attribute parsed
            while self.kind() != "}":
                pos, name = self.pos(), self._attribute_name()
                order = _ATTRIBUTE_ORDER.index(name)
                if order <= done:
                    raise LayoutParseError(
                        f"layout attribute {name} " + ("is repeated" if order == done else
                                                       f"must come before {_ATTRIBUTE_ORDER[done]}")
                        + "; attributes must appear once each in the order "
                        + ", ".join(_ATTRIBUTE_ORDER), self.text, pos)
                done = order
                if name in _SPARSE_ONLY:
                    raise LayoutParseError(_SPARSE_ONLY[name], self.text, pos)
                self.i += 1
                if name == "D":
                    self._dim_level_types()  # parsed and dropped, as XLA does
                elif name == "T":
                    fields["tiles"] = self._tiles()
                elif name == "L":
                    fields["tail_padding_alignment_in_elements"] = self.paren_int("L(n)", 1)
                elif name == "E":
                    fields["element_size_in_bits"] = self.paren_int("E(n)", 0)
                elif name == "S":
                    fields["memory_space"] = self.paren_int("S(n)", -2**63)
                else:
                    fields["dynamic_shape_metadata_prefix_bytes"] = self.paren_int("M(n)", 0)
        self.expect("}", "'}' closing the layout")
        return Layout(tuple(m2m), **fields)

    def _attribute_name(self) -> str:
        kind, value, pos = self.tokens[self.i]
        if kind in ("#", "*"):
            return kind
        if kind == "id" and value in _ATTRIBUTE_ORDER:
            return value
        found = "end of text" if kind == "end" else repr(value)
        raise LayoutParseError(
            f"expected a layout attribute (one of {' '.join(_ATTRIBUTE_ORDER)}) or '}}', "
            f"found {found}", self.text, pos)

    def _tiles(self) -> tuple[Tile, ...]:
        tiles = []
        while self.kind() == "(":
            start = self.pos()
            self.i += 1
            dims, dim_pos = [], []
            if self.kind() != ")":
                while True:
                    dim_pos.append(self.pos())
                    if self.eat("*"):
                        dims.append(COMBINE_DIMENSION)
                    else:
                        dims.append(self.expect("int", "a tile dimension (integer or '*')"))
                    if not self.eat(","):
                        break
            self.expect(")", "',' or ')' in a tile")
            problem = _tile_problem(tuple(dims))
            if problem:
                raise LayoutParseError(problem[1], self.text,
                                       dim_pos[problem[0]] if dims else start)
            tiles.append(Tile(tuple(dims)))
        if not tiles:
            raise self.error("expected '(' starting a tile after T")
        return tuple(tiles)

    def _dim_level_types(self):
        self.expect("(", "'(' after D")
        if self.kind() != ")":
            while True:
                pos = self.pos()
                level = self.expect("id", "a dim level type (D, C, S or H)")
                if level not in ("D", "C", "S", "H"):
                    raise LayoutParseError(
                        f"unknown dim level type {level!r}: expected D, C, S or H",
                        self.text, pos)
                self.eat("+")
                self.eat("~")
                if not self.eat(","):
                    break
        self.expect(")", "')' closing D(...)")


# ---------------------------------------------------------------------------------------------
# Index arithmetic


@dataclass(frozen=True, slots=True)
class TileStep:
    """What one tile does to the dims it sees (spec §3.2-3.5): pad → reshape → transpose."""

    before: tuple[int, ...]
    """Dims the tile acts on."""
    ones: tuple[int, ...]
    """`before` with leading 1s when the tile is longer than the rank."""
    combined: tuple[int, ...]
    """`ones` after merging each `*` dim into its minor neighbour."""
    tile: tuple[int, ...]
    """The tile without its `*` entries; it covers the last `len(tile)` of `combined`."""
    spec: tuple[int, ...]
    """The tile as written (with `COMBINE_DIMENSION`)."""
    after: tuple[int, ...]
    """`combined[:-k]` + tile counts + tile sizes."""

    @property
    def pads(self) -> bool:
        """Whether the tile does not divide the dims it covers (so padding is added)."""
        k = len(self.tile)
        return any(m % t for m, t in zip(self.combined[len(self.combined) - k:], self.tile))


def _merge_stars(sizes, t: Tile) -> tuple[list[int], list[int]]:
    """The sizes a tile covers with each `*` run merged into its minor neighbour, and the tile
    without its `*` entries."""
    if t.dimensions[-1] == COMBINE_DIMENSION:
        raise UnsupportedLayoutError(
            f"tile {t}: '*' as the last (most-minor) entry has no minor neighbour to "
            "combine with; XLA reads the text but it places no elements")
    merged, tile, acc = [], [], 1
    for size, entry in zip(sizes, t.dimensions):
        acc *= size
        if entry != COMBINE_DIMENSION:
            merged.append(acc)
            tile.append(entry)
            acc = 1
    return merged, tile


def tile_steps(physical_dims: Iterable[int], tiles: Iterable[Tile]) -> tuple[TileStep, ...]:
    """The shapes each tile passes through, starting from the physical dims."""
    steps, cur = [], tuple(physical_dims)
    for t in tiles:
        spec = t.dimensions
        ones = (1,) * max(0, len(spec) - len(cur)) + cur
        start = len(ones) - len(spec)
        merged, tile = _merge_stars(ones[start:], t)
        combined = list(ones[:start]) + merged
        p = len(combined) - len(tile)
        after = (tuple(combined[:p]) + tuple(-(-m // t) for m, t in zip(combined[p:], tile))
                 + tuple(tile))
        steps.append(TileStep(cur, ones, tuple(combined), tuple(tile), spec, after))
        cur = after
    return tuple(steps)


def tiled_dimensions(shape: Shape | str) -> tuple[int, ...]:
    """The fully tiled physical shape; its product is the element count before `L(n)`.

    >>> tiled_dimensions("f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}")
    (56, 37, 2, 3)
    """
    shape = as_shape(shape)
    return tuple(_walk_tiles(shape.physical_dimensions, shape.layout.tiles)[0])


def _walk_tiles(physical, tiles) -> tuple[list[int], tuple | None]:
    """(the fully tiled dims, the first later tile that pads again as (number, tile, the dims it
    acts on)), as `tile_steps` computes them but in time linear in the number of tile entries:
    each tile rewrites only the dims it covers, in place (n 1-D tiles would otherwise copy a
    shape growing by one dim per tile, n**2)."""
    dims, nested = list(physical), None
    for n, t in enumerate(tiles, start=1):
        spec = t.dimensions
        if len(spec) > len(dims):
            dims[:0] = [1] * (len(spec) - len(dims))
        start = len(dims) - len(spec)
        covered, tile = _merge_stars(dims[start:], t)
        if nested is None and n > 1 and any(m % e for m, e in zip(covered, tile)):
            nested = (n, t, tuple(dims))
        del dims[start:]
        dims += [-(-m // e) for m, e in zip(covered, tile)] + tile
    return dims, nested


def _check_static(shape: Shape):
    if any(shape.dynamic_dimensions):
        raise UnsupportedLayoutError(
            f"{shape} has dynamic dimensions; their size is unknown, so the buffer is too")


def check_encodable(shape: Shape, *, allow_nested_padding: bool = False) -> None:
    """Raises `UnsupportedLayoutError` unless `shape` has a well-defined dense buffer.

    Refused: dynamic dims, `E(n)` the element type cannot be stored in (XLA's parser accepts
    `f32[3]{0:E(300)}`), `M(n)` metadata, and (unless `allow_nested_padding`) a tile after
    the first that pads again. XLA sizes buffers from the first tile only, so for such layouts
    XLA's buffer is smaller than the definition's (`f32[4,4]{1,0:T(4,4)(3)}`: 64 vs 96 bytes).
    """
    _check_static(shape)
    problem = _element_size_problem(ELEMENT_TYPES[shape.element_type],
                                    shape.layout.element_size_in_bits)
    if problem:
        raise UnsupportedLayoutError(f"{shape}: {problem}")
    if shape.layout.dynamic_shape_metadata_prefix_bytes:
        raise UnsupportedLayoutError(
            f"{shape}: M(n) (dynamic-shape metadata prefix) is not supported")
    nested = _walk_tiles(shape.physical_dimensions, shape.layout.tiles)[1]
    if nested and not allow_nested_padding:
        n, tile, dims = nested
        raise UnsupportedLayoutError(
            f"{shape}: tile {n} {tile} does not divide the dims {dims} it covers, so it pads "
            "again; XLA sizes buffers from the first tile only and would disagree. Pass "
            "allow_nested_padding=True to use the definition (padding at every level)")


def num_elements(shape: Shape) -> int:
    """Element slots in the buffer: the tiled element count rounded up to `L(n)`."""
    n = math.prod(tiled_dimensions(shape))
    align = shape.layout.tail_padding_alignment_in_elements
    return -(-n // align) * align


def byte_size(shape: Shape | str, *, allow_nested_padding: bool = False) -> int:
    """The padded physical size in bytes: tiles, `L(n)` and `E(n)` bit packing.

    >>> byte_size("pred[64,256]{1,0:T(32,128)(32,1)E(1)}"), byte_size("f32[]{:T(256)}")
    (2048, 1024)
    """
    shape = as_shape(shape)
    check_encodable(shape, allow_nested_padding=allow_nested_padding)
    return -(-num_elements(shape) * shape.element_size_in_bits // 8)


def _int_array(value, what: str) -> np.ndarray:
    try:
        return np.asarray(value)
    except (ValueError, TypeError, OverflowError) as e:  # ragged lists, huge ints
        raise LayoutError(f"{what} must be an integer array-like of one shape, found "
                          f"{type(value).__name__}: {e}") from None


def linear_index(index, shape: Shape | str):
    """Position (in elements) of logical `index` in the buffer of `shape`.

    `index` is an integer array-like of shape `(..., rank)`; the result has shape `(...)`
    (a numpy integer for one index). Follows the definition at every tile level (spec §3),
    including tiles longer than the rank, `*` and padding added by later tiles.

    >>> linear_index([[0, 0], [1, 0], [0, 4]], "f32[3,5]{1,0:T(2,2)}")
    array([0, 2, 8])
    """
    shape = as_shape(shape)
    _check_static(shape)
    rank = shape.rank
    idx = _int_array(index, "index")
    if idx.dtype.kind not in "iu" and not (idx.size == 0 and idx.dtype.kind == "f"):
        raise LayoutError(f"index must hold integers, found dtype {idx.dtype}")
    if idx.ndim == 0 or idx.shape[-1] != rank:
        raise LayoutError(f"index must have shape (..., {rank}) for {shape}, found "
                          f"shape {idx.shape}")
    steps = tile_steps(shape.physical_dimensions, shape.layout.tiles)
    final = steps[-1].after if steps else shape.physical_dimensions
    if math.prod(final) > _INT64_MAX:
        raise UnsupportedLayoutError(f"{shape} has more than 2**63 element slots")
    dims = np.asarray(shape.dimensions, dtype=np.int64)
    bad = (idx < 0) | (idx >= dims) if idx.dtype.kind == "i" else idx >= dims
    if bad.any():
        where = tuple(int(v) for v in np.argwhere(bad)[0])
        found = tuple(int(v) for v in idx[where[:-1]])
        raise LayoutError(f"index {found} is out of bounds for dimensions {shape.dimensions} "
                          f"(dimension {where[-1]})")
    cols = [idx[..., a].astype(np.int64) for a in shape.layout.major_to_minor]
    return tiled_positions(cols, steps, final, idx.shape[:-1])[()]


def tiled_positions(cols: list[np.ndarray], steps, final: tuple[int, ...],
                    batch_shape: tuple[int, ...]) -> np.ndarray:
    """Linear positions of physical indices after the tile `steps` (spec §3.6).

    `cols` holds one int64 array of shape `batch_shape` per physical dim, major to minor;
    `steps` is `tile_steps(physical_dimensions, tiles)` and `final` the dims they end with
    (the physical dims when there are no tiles).
    """
    for step in steps:
        cols = [np.zeros(batch_shape, np.int64) for _ in range(len(step.ones) - len(cols))] + cols
        start = len(step.ones) - len(step.spec)
        merged, acc = cols[:start], 0
        for j, entry in enumerate(step.spec):
            acc = acc * step.ones[start + j] + cols[start + j]
            if entry != COMBINE_DIMENSION:
                merged.append(acc)
                acc = 0
        p = len(merged) - len(step.tile)
        cols = (merged[:p] + [c // t for c, t in zip(merged[p:], step.tile)]
                + [c % t for c, t in zip(merged[p:], step.tile)])
    lin = np.zeros(batch_shape, np.int64)
    for c, d in zip(cols, final):
        lin = lin * d + c
    return lin


def logical_index(slots, shape: Shape | str):
    """The inverse of `linear_index`: which logical element each buffer slot holds.

    Returns `(index, is_element)`: `index` has shape `slots.shape + (rank,)` (-1 where the slot
    is padding or outside the buffer) and `is_element` says which slots hold an element. For
    one slot they are a tuple of ints and a bool.

    >>> index, is_element = logical_index([0, 8, 9], "f32[3,5]{1,0:T(2,2)}")
    >>> index.tolist(), is_element.tolist()
    ([[0, 0], [0, 4], [-1, -1]], [True, True, False])
    >>> logical_index(17, "f32[3,5]{1,0:T(2,2)}")
    ((2, 3), True)
    """
    shape = as_shape(shape)
    _check_static(shape)
    slots = _int_array(slots, "slots")
    if slots.dtype.kind not in "iu" and not (slots.size == 0 and slots.dtype.kind == "f"):
        raise LayoutError(f"slots must hold integers, found dtype {slots.dtype}")
    steps = tile_steps(shape.physical_dimensions, shape.layout.tiles)
    final = steps[-1].after if steps else shape.physical_dimensions
    if math.prod(final) > _INT64_MAX:
        raise UnsupportedLayoutError(f"{shape} has more than 2**63 element slots")
    valid = (slots >= 0) & (slots < math.prod(final))
    rest = np.where(valid, slots, 0).astype(np.int64)
    cols: list[np.ndarray] = []
    for d in reversed(final):  # unravel in the fully tiled shape
        cols.insert(0, rest % max(d, 1))
        rest = rest // max(d, 1)
    for step in reversed(steps):
        k = len(step.tile)
        p = len(step.combined) - k
        merged = [c * t + o for c, t, o in zip(cols[p:p + k], step.tile, cols[p + k:])]
        for m, size in zip(merged, step.combined[p:]):
            valid &= m < size  # padding added by this tile
        combined = cols[:p] + merged
        start = len(step.ones) - len(step.spec)
        ones, group, g = combined[:start], [], start
        for pos, entry in enumerate(step.spec):  # split each '*' group back into its dims
            group.append(step.ones[start + pos])
            if entry != COMBINE_DIMENSION:
                value, parts = combined[g], []
                for d in reversed(group):
                    parts.insert(0, value % max(d, 1))
                    value = value // max(d, 1)
                ones += parts
                group, g = [], g + 1
        extra = len(step.ones) - len(step.before)
        for c in ones[:extra]:
            valid &= c == 0  # the leading 1s a long tile added
        cols = ones[extra:]
    logical: list[np.ndarray] = [np.empty(0)] * shape.rank
    for i, axis in enumerate(shape.layout.major_to_minor):
        logical[axis] = cols[i]
    index = (np.stack(logical, axis=-1) if shape.rank
             else np.zeros(slots.shape + (0,), np.int64))
    index[~valid] = -1
    if slots.ndim == 0:  # one slot: plain Python values
        return tuple(int(v) for v in index), bool(valid)
    return index, valid
