"""Where a sharding puts data: mesh pieces, tile indices and per-device slices (numpy only).

XLA's rule (spec §5): a mesh position's coordinate along a sub-axis `"x":(m)k` of an axis of
size `n` is `(c_x // (n // (m*k))) % k`; a dim sharded by refs `r_1..r_j` (major to minor) is
cut into `n = prod(k_i)` tiles of `c = ceil(D / n)`, and tile `t` (mixed radix over the refs)
holds `[min(t*c, D), min((t+1)*c, D))`, the rest of its buffer being padding.

Shared by `simulate` (which adds xarray), `hlo` and `visualize`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from . import _ragged
from ._checks import check_shape, check_uneven, resolve
from .axes import AxisRef
from .errors import ShardingError, as_flag
from .mesh import Mesh, check_devices
from .tensor_sharding import TensorSharding, as_sharding
from .verify import verify

__all__ = ["Piece", "Placement", "place", "same_data", "check_shape", "resolve"]


@dataclass(frozen=True, slots=True)
class Piece:
    """A mesh axis, or the cut `"name":(pre_size)size` of one that some axis ref needs."""

    name: str
    pre_size: int
    size: int
    axis_size: int

    @property
    def is_full(self) -> bool:
        return self.pre_size == 1 and self.size == self.axis_size

    @property
    def label(self) -> str:
        """Dim name in simulated arrays: `x` for a full axis, `x:(2)2` for a cut."""
        return self.name if self.is_full else f"{self.name}:({self.pre_size}){self.size}"

    def axis_ref(self) -> AxisRef:
        return AxisRef(self.name) if self.is_full else AxisRef.sub(self.name, self.pre_size, self.size)


def _ref_bounds(ref: AxisRef, mesh: Mesh) -> tuple[int, int]:
    info = ref.sub_axis_info
    if info is None:
        return 1, mesh.axis_size(ref.name)
    return info.pre_size, info.next_pre_size


@dataclass(frozen=True, slots=True)
class Placement:
    """A verified sharding resolved against its mesh, ready for slice arithmetic.

    `pieces` are the mesh axes in mesh order, each cut at the boundaries of the sub-axes that
    `cut_by` refs use (most major cut first); every axis ref of a dim is exactly one piece.
    """

    sharding: TensorSharding
    mesh: Mesh
    shape: tuple[int, ...] | None
    pieces: tuple[Piece, ...]
    dim_pieces: tuple[tuple[int, ...], ...]
    """Per tensor dim: indices into `pieces` of its refs, major to minor (as written)."""
    unreduced_pieces: tuple[int, ...]
    """Indices into `pieces` covered by `unreduced` axes."""
    uneven: str = "padded"
    """`padded` (XLA: `ceil(D/n)` buffers) or `ragged` (DTensor's nested `torch.chunk`, `_ragged`)."""
    ref_sizes: tuple[tuple[int, ...], ...] = ()
    """Per tensor dim: the sizes of its axis refs, major to minor (`ragged` chunks once per ref)."""

    @property
    def piece_sizes(self) -> tuple[int, ...]:
        return tuple(p.size for p in self.pieces)

    @property
    def num_tiles(self) -> tuple[int, ...]:
        """Number of tiles (shards) per tensor dim."""
        return tuple(math.prod(self.pieces[i].size for i in dims) for dims in self.dim_pieces)

    @property
    def local_shape(self) -> tuple[int, ...]:
        """Every device's buffer shape: `ceil(D / tiles)` per dim (`ragged`: the largest shard's)."""
        if self.uneven == "ragged":
            return tuple(_ragged.largest(d, sizes) for d, sizes in zip(self.shape, self.ref_sizes))
        return tuple(-(-d // n) for d, n in zip(self.shape, self.num_tiles))

    @property
    def tile_pieces(self) -> tuple[int, ...]:
        """Pieces that shard some dim, in mesh order."""
        used = {i for dims in self.dim_pieces for i in dims}
        return tuple(i for i in range(len(self.pieces)) if i in used)

    def device_grid(self) -> np.ndarray:
        """Device ids as an array with one dim per piece (mesh order)."""
        check_devices(self.mesh.total_size, len(self.pieces) + 1)
        return np.asarray(self.mesh.devices, dtype=np.int64).reshape(self.piece_sizes)

    def tile_indices(self) -> np.ndarray:
        """`tile[..., d]`: the tile index along tensor dim `d` at each piece coordinate."""
        sizes = self.piece_sizes
        check_devices(self.mesh.total_size, len(sizes) + 1)
        coords = np.indices(sizes, dtype=np.int64) if sizes else np.zeros((0,), np.int64)
        out = np.zeros(sizes + (len(self.dim_pieces),), dtype=np.int64)
        for d, dims in enumerate(self.dim_pieces):
            for i in dims:  # mixed radix, first ref most major
                out[..., d] = out[..., d] * self.pieces[i].size + coords[i]
        return out

    def dim_bounds(self, d: int) -> tuple[np.ndarray, np.ndarray]:
        """`(starts, stops)`: the data part of every tile along dim `d` (global indices)."""
        if self.uneven == "ragged":
            return _ragged.bounds(self.shape[d], self.ref_sizes[d])
        t, c = np.arange(self.num_tiles[d], dtype=np.int64), self.local_shape[d]
        return np.minimum(t * c, self.shape[d]), np.minimum((t + 1) * c, self.shape[d])

    def tile_slices(self, tile: tuple[int, ...]) -> tuple[slice, ...]:
        """The data part of tile `tile` (one tile index per dim)."""
        if self.uneven == "ragged":
            return tuple(slice(int(b[0][t]), int(b[1][t])) for t, b in zip(tile, map(self.dim_bounds, range(len(tile)))))
        out = []
        for t, d, c in zip(tile, self.shape, self.local_shape):
            out.append(slice(min(t * c, d), min((t + 1) * c, d)))
        return tuple(out)

    def device_groups(self, pieces) -> np.ndarray:
        """Devices grouped along `pieces` (indices into `pieces`): `(groups, members)`, a group
        being the devices that agree on every other piece; members in mixed-radix order over
        `pieces`, groups in mesh order of the rest. Collectives and unreduced axes use them."""
        along = list(pieces)
        rest = [i for i in range(len(self.pieces)) if i not in along]
        grid = self.device_grid().transpose(rest + along) if self.pieces else self.device_grid()
        size = math.prod(self.pieces[i].size for i in along)
        return grid.reshape(-1, size)

    def index_map(self) -> dict[int, tuple[slice, ...]]:
        """`{device_id: slices}` in device-id order."""
        grid = self.device_grid().reshape(-1)
        tiles = self.tile_indices().reshape(grid.size, len(self.dim_pieces))
        if self.uneven == "ragged":
            b = [self.dim_bounds(d) for d in range(len(self.dim_pieces))]
            found = {int(dev): tuple(slice(int(lo[t]), int(hi[t])) for t, (lo, hi) in zip(tile, b))
                     for dev, tile in zip(grid, tiles)}
            return dict(sorted(found.items()))
        found = {int(dev): self.tile_slices(tuple(int(t) for t in tile)) for dev, tile in zip(grid, tiles)}
        return dict(sorted(found.items()))


def same_data(a: Placement, b: Placement) -> bool:
    """Whether two placements put the same data on the same devices: the same slices
    (`index_map`) and, with unreduced axes, the same groups of devices holding the partial values
    of one slice, reduced the same way."""
    if a.index_map() != b.index_map():
        return False
    if not a.unreduced_pieces and not b.unreduced_pieces:
        return True
    return a.sharding.reduction_op == b.sharding.reduction_op and _partial_groups(a) == _partial_groups(b)


def _partial_groups(p: Placement) -> frozenset:
    """Devices that hold the partial values of one slice, grouped."""
    return frozenset(frozenset(int(d) for d in g) for g in p.device_groups(p.unreduced_pieces))


def place(sharding: TensorSharding, mesh, shape, *, cut_by_replicated: bool = False, cuts=(),
          uneven: str = "padded") -> Placement:
    """Verifies `sharding` on `mesh` for `shape` (Shardy's rules) and resolves its pieces.

    `shape` may be `None` when only the device layout matters (conversions); then the slice
    methods of the result cannot be used.

    Pieces are cut at the sub-axes of the dims and of `unreduced` (what XLA's export uses), and
    also of `replicated` when `cut_by_replicated` (for arrays that show every named sub-axis),
    and of the axis refs `cuts` (so that two shardings a collective connects are cut alike).
    `uneven="ragged"` gives DTensor's ragged tiles (`_ragged`) instead of XLA's padded ones.
    """
    sharding = as_sharding(sharding)
    m = resolve(sharding, mesh)
    return _place(sharding, m, None if shape is None else check_shape(shape), as_flag(cut_by_replicated, "cut_by_replicated"),
                  tuple(cuts), check_uneven(uneven))


@functools.lru_cache(maxsize=256)
def _place(sharding: TensorSharding, m: Mesh, dims, cut_by_replicated: bool, cuts: tuple,
           uneven: str) -> Placement:
    """`place` on checked arguments. Frozen values in, a frozen value out: a reshard or
    collective run again on the same shardings reuses the verified placement (verification was
    most of the per-call time of `DeviceMesh.reshard` beside the data copy)."""
    if m.is_maximal:
        # A one-device mesh holds everything; Shardy allows only rank 0 there, but an array of any
        # rank may sit on one device (HloSharding `{maximal device=N}`, JAX's SingleDeviceSharding).
        verify(sharding, mesh=m)
        rank = sharding.rank if dims is None else len(dims)
        return Placement(sharding, m, dims, (), tuple(() for _ in range(rank)), (), uneven, ((),) * rank)
    if dims is None:
        verify(sharding, mesh=m)
    else:
        verify(sharding, mesh=m, shape=dims)

    cutting = [r for d in sharding.dim_shardings for r in d.axes] + list(sharding.unreduced_axes)
    if cut_by_replicated:
        cutting += sharding.replicated_axes
    cutting += list(cuts)
    cuts: dict[str, set[int]] = {a.name: {1, a.size} for a in m.axes}
    for ref in cutting:
        cuts[ref.name].update(_ref_bounds(ref, m))
    pieces: list[Piece] = []
    where: dict[tuple[str, int], int] = {}  # (axis, pre_size) -> piece index
    for axis in m.axes:
        bounds = sorted(cuts[axis.name])
        if any(hi % lo for lo, hi in zip(bounds, bounds[1:])):
            # e.g. "x":(1)2 and "x":(3)2 on "x"=6 (Shardy's plans emit such pairs): the devices
            # along the axis are no grid of pieces, so there is no tile layout to simulate.
            raise ShardingError(f"sub-axes of axis \"{axis.name}\" that do not nest (pre-sizes "
                                f"{', '.join(map(str, bounds))}) cannot be placed on simulated devices")
        if axis.size == 1:  # a size-1 axis stays a (trivial) piece so it keeps its dim
            bounds = [1, 1]
        for lo, hi in zip(bounds, bounds[1:]):
            where[(axis.name, lo)] = len(pieces)
            pieces.append(Piece(axis.name, lo, hi // lo, axis.size))

    def pieces_of(ref: AxisRef) -> tuple[int, ...]:
        lo, hi = _ref_bounds(ref, m)
        if lo == hi:
            return (where[(ref.name, 1)],)
        out = []
        while lo < hi:
            i = where[(ref.name, lo)]
            out.append(i)
            lo *= pieces[i].size
        return tuple(out)

    dim_pieces = tuple(tuple(i for r in d.axes for i in pieces_of(r)) for d in sharding.dim_shardings)
    unreduced = tuple(sorted({i for r in sharding.unreduced_axes for i in pieces_of(r)}))
    ref_sizes = tuple(tuple(r.size(m) for r in d.axes) for d in sharding.dim_shardings)
    return Placement(sharding, m, dims, tuple(pieces), dim_pieces, unreduced, uneven, ref_sizes)
