"""`ShardedArray`: every device's buffer of a global array, as an `xarray.DataArray`.

This module and those above it (`collectives`, `simulate`) import xarray; `sharding` loads them
on first use.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import xarray as xr

from ._placement import Placement, place
from ._ragged import trim
from .errors import ShardingError
from .mesh import Mesh
from .tensor_sharding import TensorSharding

__all__ = ["ShardedArray", "coords", "wrap", "like", "placement", "device_array"]


class ShardedArray:
    """Per-device shards of a global array, backed by an `xarray.DataArray`.

    `data` has one leading dim per mesh piece (a mesh axis, or a sub-axis such as `x:(2)2` when a
    sharding cuts the axis) and the tensor's local dims after them. Coordinates: `device_id`
    over the mesh dims, and `global_<dim>` giving each local element's global index (-1 in
    padding).
    """

    __slots__ = ("data", "sharding", "mesh", "placement", "dims", "like")

    def __init__(self, data: xr.DataArray, sharding: TensorSharding, mesh: Mesh, placement: Placement,
                 dims: tuple[str, ...], like: xr.DataArray | None):
        self.data = data
        self.sharding = sharding
        self.mesh = mesh
        self.placement = placement
        self.dims = dims
        """Names of the tensor dims (the trailing dims of `data`)."""
        self.like = like
        """The DataArray given to `shard`, if any (for its coords and attrs)."""

    @property
    def global_shape(self) -> tuple[int, ...]:
        return self.placement.shape

    @property
    def local_shape(self) -> tuple[int, ...]:
        return self.placement.local_shape

    def index_map(self) -> dict[int, tuple[slice, ...]]:
        return self.placement.index_map()

    def local(self, device_id: int) -> np.ndarray:
        """The buffer of one device (padding included; a ragged shard has none). Computes only
        that device's chunk of lazy shards."""
        grid = self.placement.device_grid()
        where = np.argwhere(grid == device_id)
        if len(where) == 0:
            raise ShardingError(f"device {device_id} is not in mesh {self.mesh.body()}")
        pos = tuple(where[0])
        return self._trim(np.asarray(self.data.data[pos]), pos)

    def per_device(self) -> Iterator[tuple[int, np.ndarray]]:
        """`(device_id, local buffer)` for every device, in device-id order (computes lazy shards)."""
        grid = self.placement.device_grid()
        values = self.data.values
        for pos in sorted(np.ndindex(grid.shape), key=lambda q: grid[q]):
            yield int(grid[pos]), self._trim(values[pos], pos)

    def _trim(self, buffer: np.ndarray, pos) -> np.ndarray:
        p = self.placement
        if p.uneven != "ragged":
            return buffer
        return trim(buffer, p, tuple(int(t) for t in p.tile_indices()[pos]))

    def __repr__(self) -> str:
        return (f"ShardedArray({self.sharding}, mesh={self.mesh.body()}, global_shape={self.global_shape}, "
                f"local_shape={self.local_shape}, dtype={self.data.dtype})")


def like(out, like: xr.DataArray) -> xr.DataArray:
    return xr.DataArray(out, coords=like.coords, dims=like.dims, name=like.name, attrs=like.attrs)


def wrap(x: ShardedArray, target: TensorSharding, mesh: Mesh, device_array) -> ShardedArray:
    """A ShardedArray of `device_array` (laid out as `placement(x, target)` says) under `target`,
    labelled like `shard` labels it."""
    p = placement(x, target, mesh)
    labels = tuple(pc.label for pc in p.pieces)
    data = xr.DataArray(device_array, dims=labels + x.dims, coords=coords(p, labels, x.dims), name=x.data.name)
    return ShardedArray(data, target, mesh, p, x.dims, x.like)


def placement(x: ShardedArray, target: TensorSharding, mesh: Mesh) -> Placement:
    """Where `x`'s data lies under `target`, cut as `shard` cuts (every named sub-axis a piece)."""
    return place(target, mesh, x.placement.shape, cut_by_replicated=True, uneven=x.placement.uneven)


def coords(p: Placement, labels: tuple[str, ...], names: tuple[str, ...]) -> dict:
    out = {"device_id": (labels, p.device_grid())}
    for d, (dims, size, c, name) in enumerate(zip(p.dim_pieces, p.shape, p.local_shape, names)):
        order = sorted(dims)  # mesh order, as the leading dims of the array
        sizes = [p.pieces[i].size for i in order]
        grids = np.indices(sizes, dtype=np.int64) if sizes else np.zeros((0,), np.int64)
        tile = np.zeros(sizes, np.int64)
        for i in dims:  # mixed radix in the sharding's order
            tile = tile * p.pieces[i].size + grids[order.index(i)]
        if p.uneven == "ragged":
            starts, stops = p.dim_bounds(d)
            index = starts[tile][..., None] + np.arange(c)
            index[index >= stops[tile][..., None]] = -1
        else:
            index = tile[..., None] * c + np.arange(c)
            index[index >= size] = -1
        out[f"global_{name}"] = (tuple(labels[i] for i in order) + (name,), index)
    return out


def device_array(x: ShardedArray):
    """`x`'s device array in the order `(pieces..., local...)` (numpy, or lazy)."""
    return x.data.transpose(*(tuple(pc.label for pc in x.placement.pieces) + x.dims)).data
