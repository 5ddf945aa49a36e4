"""A simulated device mesh on xarray: the per-device shards of a real array, as XLA lays them out.

>>> import numpy as np, sharding
>>> dm = sharding.DeviceMesh(sharding.Mesh.parse('<["x"=2, "y"=4]>'))
>>> s = sharding.TensorSharding.parse('#sdy.sharding<@mesh, [{"x"}, {"y"}]>')
>>> dm.index_map(s, (6, 8))[5]
(slice(3, 6, None), slice(2, 4, None))
>>> sh = dm.shard(np.arange(48).reshape(6, 8), s)
>>> dict(sh.data.sizes)
{'x': 2, 'y': 4, 'dim_0': 3, 'dim_1': 2}
>>> (dm.unshard(sh) == np.arange(48).reshape(6, 8)).all()
np.True_

The shards live in one array backend (`_backends`: numpy, or dask), chosen once by `shard`;
moves and reductions run there (`_runtime`). This is the only module of the package that imports
xarray (`sharding` loads it, and `collectives` above it, on first use).
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import xarray as xr

from . import _backends
from ._imports import load
from ._checks import check_full_axes, check_uneven
from ._placement import Placement, check_shape, place, same_data
from ._ragged import trim
from ._runtime import device_array, placement, run_plan
from .errors import ShardingError, as_flag, as_int, shown
from .hlo import is_named_sharding, mesh_from_jax, to_sdy
from .mesh import Mesh, MeshTable, check_devices
from .tensor_sharding import TensorSharding, as_sharding
from .verify import verify_mesh

__all__ = ["DeviceMesh", "ShardedArray", "equivalent"]


class DeviceMesh:
    """The devices of a `Mesh`, laid out along its axes.

    `devices` is an `xarray.DataArray` of device ids with one dim per mesh axis (row-major
    positions hold `device_ids`, or iota). Several `DeviceMesh`es may cover the same devices
    (e.g. `<["a"=4, "b"=2]>` and `<["x"=2, "y"=2, "z"=2]>`); `equivalent` compares placements
    across them. A sharding that names its mesh (`@m`) is bound to this mesh whatever the name,
    unless `name` is given; an inlined `mesh<...>` must equal this mesh.

    `uneven` says how a dim that does not divide evenly is cut: `"padded"` (XLA, the default:
    every buffer `ceil(D/n)` long, padding at the high end) or `"ragged"` (PyTorch DTensor:
    `torch.chunk` once per axis sharding the dim, major to minor; shards are unequal, some may be
    empty, none holds padding; sub-axes are refused). See `sharding._ragged`.
    """

    __slots__ = ("mesh", "name", "devices", "uneven")

    def __init__(self, mesh: Mesh | str, *, name: str | None = None, uneven: str = "padded"):
        if isinstance(mesh, str):
            mesh = Mesh.parse(mesh)
        if not isinstance(mesh, Mesh):
            raise ShardingError(f"expected a Mesh or mesh text, got: {type(mesh).__name__}")
        verify_mesh(mesh)
        check_devices(mesh.total_size, len(mesh.axes))
        self.uneven = check_uneven(uneven)
        self.mesh = mesh
        self.name = name
        ids = np.asarray(mesh.devices, dtype=np.int64).reshape(mesh.shape)
        self.devices = xr.DataArray(ids, dims=mesh.axis_names, name="device_id")

    @classmethod
    def from_jax(cls, mesh, *, name: str | None = None, uneven: str = "padded") -> DeviceMesh:
        """The devices of a `jax.sharding.Mesh`: its axes, and its device order as `device_ids`
        (see `sharding.hlo.mesh_from_jax`). Shardings then also come as JAX `NamedSharding`s."""
        return cls(mesh_from_jax(mesh), name=name, uneven=uneven)

    def __repr__(self) -> str:
        label = "" if self.name is None else f"@{self.name} = "
        extra = "" if self.uneven == "padded" else f", uneven={self.uneven!r}"
        return f"DeviceMesh({label}{self.mesh.body()}{extra})"

    def _repr_html_(self) -> str:
        return _visualization().device_mesh_html(self)

    def _bound(self):
        return self.mesh if self.name is None else MeshTable(((self.name, self.mesh),))

    def placement(self, sharding: TensorSharding, global_shape, *, cut_by_replicated: bool = False) -> Placement:
        """The verified sharding resolved on this mesh (pieces, tiles, slices)."""
        global_shape = check_shape(global_shape)
        sharding = to_sdy(sharding, len(global_shape)) if is_named_sharding(sharding) else as_sharding(sharding)
        if isinstance(sharding.mesh_or_ref, Mesh) and sharding.mesh_or_ref != self.mesh:
            raise ShardingError(f"the sharding's inlined mesh {sharding.mesh_or_ref.body()} is not this "
                                f"device mesh {self.mesh.body()}")
        if self.uneven == "ragged":
            check_full_axes(sharding)
        return place(sharding, self._bound(), global_shape, cut_by_replicated=cut_by_replicated, uneven=self.uneven)

    def index_map(self, sharding: TensorSharding, global_shape) -> dict[int, tuple[slice, ...]]:
        """`{device_id: slices}`: the part of the global array each device holds (XLA's rule).

        Uneven dims give every device a `ceil(D/n)` buffer; a slice is the data part of it and
        may be short or empty (the rest is padding); under `uneven="ragged"` the slices are
        DTensor's ragged shards. Replicas (implicit or explicit) and unreduced axes get the same
        slices.
        """
        return self.placement(sharding, global_shape).index_map()

    def shard(self, array, sharding: TensorSharding, *, fill=0, copy: bool = False,
              backend: str | None = None) -> ShardedArray:
        """The per-device shards of `array` under `sharding` (a `TensorSharding`, its text, or a
        JAX `NamedSharding` on this mesh's devices, as `DeviceMesh.from_jax` makes it).

        `array` is a numpy array (any dtype, also ml_dtypes bf16/int4, bool) or an
        `xarray.DataArray` (its dim names are kept). Shards are read-only views, so replicas
        share memory and an evenly sharded numpy input is not copied at all (like `np.asarray`;
        writing to the input later changes the shards). Padding of uneven dims is `fill`.
        `copy=True` gives every device its own writable buffer.

        Unreduced axes (partial results): with `sum`, the position 0 along them holds the data
        and the others the additive identity of the dtype (`-0.0`, `0`, `False`), padding
        included; with `max`/`min` every position holds the data. `unshard` reduces them back
        (`sharding._partials`: the one definition `reshard` and the collectives keep).

        `backend="dask"`, or a dask array / dask-backed DataArray as `array`, gives lazy shards:
        `data` is a dask-backed DataArray with one chunk per device whose buffers are the same
        task for replicas (one chunk per distinct shard in the graph); nothing is computed until
        asked (`.compute()`, `.persist()`, `np.asarray`). A dask input whose chunks do not line up
        with the shards is rechunked to them (`dask.array.Array.rechunk`) first. `copy` does
        not apply (dask chunks are never written). `backend="numpy"` computes a dask input.
        """
        copy = as_flag(copy, "copy")
        backend = _backends.choose(backend, array)
        like_ = array if isinstance(array, xr.DataArray) else None
        values = backend.as_input(array.data if like_ is not None else array)
        names = tuple(str(d) for d in like_.dims) if like_ is not None else tuple(f"dim_{i}" for i in range(values.ndim))
        sharding = to_sdy(sharding, values.ndim) if is_named_sharding(sharding) else as_sharding(sharding)
        p, labels, fill_value = self._checked(sharding, values.shape, values.dtype, names, fill)
        data = xr.DataArray(backend.device_array(values, p, fill_value, copy), dims=labels + names,
                            coords=_coords(p, labels, names), name=None if like_ is None else like_.name)
        return ShardedArray(data, sharding, self.mesh, p, names, like_)

    def _checked(self, sharding, shape, dtype, names, fill):
        """The placement, mesh labels and fill value `shard` needs (and its checks)."""
        if dtype.kind == "O":
            raise ShardingError("expected an array of numbers or bools, found dtype object")
        p = self.placement(sharding, shape, cut_by_replicated=True)
        check_devices(0, len(p.pieces) + len(shape) + sum(len(d) for d in p.dim_pieces))
        labels = tuple(pc.label for pc in p.pieces)
        clash = set(labels) & set(names)
        if clash:
            raise ShardingError(f"the array's dim names {sorted(clash)} are also mesh axes of {self.mesh.body()}; "
                                f"rename them (DataArray.rename) before sharding")
        reserved = {"device_id"} | {f"global_{n}" for n in names}
        if reserved & (set(labels) | set(names)):
            raise ShardingError(f"the names {sorted(reserved & (set(labels) | set(names)))} are taken by the shards' "
                                "coordinates (device_id, global_<dim>); rename the dims or mesh axes")
        try:
            fill_value = np.array(fill, dtype=dtype)
        except (TypeError, ValueError, OverflowError) as e:
            raise ShardingError(f"fill {shown(fill)} does not fit dtype {dtype}: {e}") from None
        return p, labels, fill_value

    def unshard(self, sharded: ShardedArray) -> np.ndarray | xr.DataArray:
        """The global array back from its shards: the exact inverse of `shard`.

        Raises `ShardingError` when replicas disagree. Returns a numpy array, or a DataArray
        (same dims, coords, name and attrs) when `shard` was given one. Lazy shards give a dask
        array (or a dask-backed DataArray) with one chunk per distinct shard; replicas are
        compared, and unreduced partials reduced, when it is computed.
        """
        if not isinstance(sharded, ShardedArray):
            raise ShardingError(f"expected a ShardedArray, got: {type(sharded).__name__}")
        if sorted(sharded.mesh.devices) != sorted(self.mesh.devices):
            raise ShardingError(f"the array is sharded over devices {sorted(sharded.mesh.devices)}, "
                                f"this mesh has {sorted(self.mesh.devices)}")
        p = sharded.placement
        labels = tuple(pc.label for pc in p.pieces)
        data = sharded.data
        expected = labels + sharded.dims
        if set(data.dims) != set(expected):
            raise ShardingError(f"expected the shards' dims {list(expected)}, found {list(data.dims)}")
        out = _backends.of(data.data).global_array(device_array(sharded), p)
        return out if sharded.like is None else _like(out, sharded.like)

    def reshard(self, sharded: ShardedArray, target: TensorSharding | str, *, fill=0, out=None):
        """Moves `sharded` to `target` with the collectives Shardy's `sdy-reshard-to-collectives`
        emits; returns `(ShardedArray, ReshardPlan)` (the plan holds the transfer record).

        `out`: a writable C-contiguous numpy array of the result's device-array shape (its mesh
        pieces, then local dims: `result.data.shape`) and dtype, not sharing memory with
        `sharded`; the result's buffers are then read-only views of it, every element written,
        and no new memory is taken (a loop of reshards reuses one destination, as `np.copyto`
        does). Numpy shards only."""
        if not isinstance(sharded, ShardedArray):
            raise ShardingError(f"expected a ShardedArray, got: {type(sharded).__name__}")
        target = to_sdy(target, len(sharded.global_shape))
        try:
            np.array(fill, dtype=sharded.data.dtype)
        except (TypeError, ValueError, OverflowError) as e:
            raise ShardingError(f"fill {shown(fill)} does not fit dtype {sharded.data.dtype}: {e}") from None
        if sharded.mesh != self.mesh:
            raise ShardingError(f"the array is on mesh {sharded.mesh.body()}, this device mesh is {self.mesh.body()}")
        if sharded.placement.uneven != self.uneven:
            raise ShardingError(f"the array's shards are {sharded.placement.uneven}, this device mesh is {self.uneven}")
        if self.uneven == "ragged":
            check_full_axes(target)
        data, mesh, plan = run_plan(sharded, target, self._bound(), fill=fill, out=out)
        return wrap(sharded, target, mesh, data), plan


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
        device_id = as_int(device_id, "device id")
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

    def _repr_html_(self) -> str:
        return _visualization().sharded_array_html(self)


def _visualization():
    """`sharding.visualization` (and `cost` under it), loaded when a notebook first shows a mesh or
    an array: the simulation does not need them."""
    return load("sharding.visualization")


def _like(out, like: xr.DataArray) -> xr.DataArray:
    return xr.DataArray(out, coords=like.coords, dims=like.dims, name=like.name, attrs=like.attrs)


def wrap(x: ShardedArray, target: TensorSharding, mesh: Mesh, data) -> ShardedArray:
    """A ShardedArray of the device array `data` (laid out as `_runtime.placement(x, target,
    mesh)` says) under `target`, labelled like `shard` labels it."""
    p = placement(x, target, mesh)
    labels = tuple(pc.label for pc in p.pieces)
    array = xr.DataArray(data, dims=labels + x.dims, coords=_coords(p, labels, x.dims), name=x.data.name)
    return ShardedArray(array, target, mesh, p, x.dims, x.like)


def _coords(p: Placement, labels: tuple[str, ...], names: tuple[str, ...]) -> dict:
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


def _placement_of(pair, global_shape) -> Placement:
    if not (isinstance(pair, tuple) and len(pair) == 2):
        raise ShardingError(f"expected a (sharding, mesh) pair, got: {shown(pair)}")
    s, mesh = pair
    if isinstance(mesh, DeviceMesh):
        return mesh.placement(s, global_shape)
    return place(s, mesh, global_shape)


def equivalent(a, b, global_shape) -> bool:
    """Whether two `(sharding, mesh)` pairs put the same data on the same devices.

    `mesh` is a `Mesh`, `MeshTable`, `DeviceMesh` or `None` (for an inlined mesh). Data means the
    slice of the global array (`index_map`) and, with unreduced axes, which devices hold the
    partial results of one value (and how they reduce).
    """
    shape = check_shape(global_shape)
    return same_data(_placement_of(a, shape), _placement_of(b, shape))
