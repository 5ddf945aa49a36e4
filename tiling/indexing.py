"""Where each element goes: tile steps, buffer sizes, and logical index <-> buffer slot.

Tiles act on the physical dims (the logical dims in major-to-minor order), right-aligned; each
tile acts on the whole shape the previous one made (spec `tiled_layout.md` §3). These functions
follow that definition at every tile level. `tiling.codec` sizes and checks buffers with
`byte_size` and `check_encodable`; `tiling._reference` and `tiling._geometry` build their tables
on `tile_steps` and `tiled_positions`.

>>> int(linear_index((2, 3), "f32[3,5]{1,0:T(2,2)}"))
17
>>> byte_size("bf16[5,300]{1,0:T(8,128)(2,1)}")
6144
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from tiling.dtypes import ELEMENT_TYPES, ElementType
from tiling.errors import LayoutError, UnsupportedLayoutError
from tiling._checks import COMBINE_DIMENSION, INT64_MAX, int_text
from tiling.layout import Shape, Tile, as_shape

__all__ = [
    "TileStep", "tile_steps", "tiled_dimensions", "linear_index", "logical_index", "byte_size",
    "check_encodable",
]


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


def check_encodable(shape: Shape | str, *, allow_nested_padding: bool = False) -> None:
    """Raises `UnsupportedLayoutError` unless `shape` (a Shape or its text) has a well-defined
    dense buffer.

    Refused: dynamic dims, `E(n)` the element type cannot be stored in (XLA's parser accepts
    `f32[3]{0:E(300)}`), `M(n)` metadata, and (unless `allow_nested_padding`) a tile after
    the first that pads again. XLA sizes buffers from the first tile only, so for such layouts
    XLA's buffer is smaller than the definition's (`f32[4,4]{1,0:T(4,4)(3)}`: 64 vs 96 bytes).
    """
    shape = as_shape(shape)
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
    slots = num_elements(shape)
    if slots > INT64_MAX:  # (XLA's sizes are int64)
        raise UnsupportedLayoutError(f"{shape} has more than 2**63 element slots")
    nbytes = -(-slots * shape.element_size_in_bits // 8)
    if nbytes > INT64_MAX:
        raise UnsupportedLayoutError(f"{shape} takes {int_text(nbytes)} bytes, more than "
                                     "int64 (2**63 - 1) can count")
    return nbytes


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
    if math.prod(final) > INT64_MAX:
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
    if math.prod(final) > INT64_MAX:
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
