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

This is the only module of the package that imports xarray.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import xarray as xr

from ._placement import Placement, check_shape, place
from .errors import ShardingError, as_int, shown
from .hlo import is_named_sharding, mesh_from_jax, to_sdy
from .mesh import Mesh, MeshTable, check_devices
from .tensor_sharding import TensorSharding, as_sharding
from .visualization import device_mesh_html, sharded_array_html

__all__ = ["DeviceMesh", "ShardedArray", "equivalent"]


def _bits(a: np.ndarray) -> np.ndarray:
    """The array's bit patterns, so NaN payloads, -0.0 and bf16/int4 compare exactly."""
    if a.dtype.itemsize in (1, 2, 4, 8):
        return a.view(f"u{a.dtype.itemsize}")
    return np.ascontiguousarray(a).view(np.uint8)


def _unreduced_identity(dtype: np.dtype):
    # -0.0 is the exact additive identity of IEEE floats (x + -0.0 == x bit for bit, even -0.0).
    zero = np.zeros((), dtype)
    return zero if dtype.kind == "b" else -zero


_REDUCE = {"sum": np.add, "max": np.maximum, "min": np.minimum}


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
        from .verify import verify_mesh

        verify_mesh(mesh)
        check_devices(mesh.total_size, len(mesh.axes))
        from ._ragged import check_uneven

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
        return device_mesh_html(self)

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
            from ._ragged import check_full_axes

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
        and the others the additive identity (`-0.0`, `0`, `False`); with `max`/`min` every
        position holds the data. `unshard` reduces them back.

        `backend="dask"`, or a dask array / dask-backed DataArray as `array`, gives lazy shards:
        `data` is a dask-backed DataArray with one chunk per device whose buffers are the same
        task for replicas (one chunk per distinct shard in the graph); nothing is computed until
        asked (`.compute()`, `.persist()`, `np.asarray`). A dask input whose chunks do not line up
        with the shards is rechunked to them (`dask.array.Array.rechunk`) first. `copy` does
        not apply (dask chunks are never written). `backend="numpy"` computes a dask input.
        """
        from ._dask import check_backend, is_dask

        sharding = to_sdy(sharding, np.ndim(array)) if is_named_sharding(sharding) else as_sharding(sharding)
        source = array
        lazy = check_backend(backend, array)
        if lazy:
            return self._shard_lazy(array, sharding, fill)
        if isinstance(array, xr.DataArray) and is_dask(array.data):
            array = array.compute()
        if isinstance(array, xr.DataArray):
            values = array.values
            names = tuple(str(d) for d in array.dims)
        else:
            try:
                values = np.asarray(array)
            except ValueError as e:  # ragged nested lists
                raise ShardingError(f"expected an array or a rectangular nested list: {e}") from None
            names = tuple(f"dim_{i}" for i in range(values.ndim))
        p, labels, fill_value = self._checked(sharding, values.shape, values.dtype, names, fill)
        view = _device_view(values, p, fill_value, copy)
        data = xr.DataArray(view, dims=labels + names, coords=_coords(p, labels, names),
                            name=source.name if isinstance(source, xr.DataArray) else None)
        like = source if isinstance(source, xr.DataArray) else None
        return ShardedArray(data, sharding, self.mesh, p, names, like)

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

    def _shard_lazy(self, array, sharding, fill) -> ShardedArray:
        from ._dask import as_array, shard

        like = array if isinstance(array, xr.DataArray) else None
        values = as_array(array.data if like is not None else array)
        names = tuple(str(d) for d in like.dims) if like is not None else tuple(f"dim_{i}" for i in range(values.ndim))
        p, labels, fill_value = self._checked(sharding, values.shape, values.dtype, names, fill)
        data = xr.DataArray(shard(values, p, fill_value), dims=labels + names, coords=_coords(p, labels, names),
                            name=None if like is None else like.name)
        return ShardedArray(data, sharding, self.mesh, p, names, like)

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
        from ._dask import is_dask

        if is_dask(data.data):
            from ._dask import unshard

            out = unshard(data.transpose(*expected).data, p)
            return out if sharded.like is None else _like(out, sharded.like)
        values = data.transpose(*expected).values
        if values.shape != p.piece_sizes + p.local_shape:
            raise ShardingError(f"expected shards of shape {p.piece_sizes + p.local_shape}, "
                                f"found {values.shape}")
        for i in p.unreduced_pieces:
            values = _reduce_partials(values, i, p.sharding.reduction_op)
        tiles = set(p.tile_pieces)
        for i in range(len(p.pieces)):
            if i not in tiles and i not in p.unreduced_pieces:
                _check_replicas(values, i, p)
        index = tuple(slice(None) if i in tiles else 0 for i in range(len(p.pieces)))
        out = _assemble(values[index], p)
        return out if sharded.like is None else _like(out, sharded.like)

    def reshard(self, sharded: ShardedArray, target: TensorSharding | str, *, fill=0):
        """Moves `sharded` to `target` with the collectives Shardy's `sdy-reshard-to-collectives`
        emits; returns `(ShardedArray, ReshardPlan)` (the plan holds the transfer record)."""
        from .collectives import run_plan

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
            from ._ragged import check_full_axes

            check_full_axes(target)
        return run_plan(sharded, target, self._bound(), fill=fill)


def _like(out, like: xr.DataArray) -> xr.DataArray:
    return xr.DataArray(out, coords=like.coords, dims=like.dims, name=like.name, attrs=like.attrs)


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
        from ._ragged import trim

        return trim(buffer, p, tuple(int(t) for t in p.tile_indices()[pos]))

    def __repr__(self) -> str:
        return (f"ShardedArray({self.sharding}, mesh={self.mesh.body()}, global_shape={self.global_shape}, "
                f"local_shape={self.local_shape}, dtype={self.data.dtype})")

    def _repr_html_(self) -> str:
        return sharded_array_html(self)


def _device_view(values: np.ndarray, p: Placement, fill: np.ndarray, copy: bool) -> np.ndarray:
    """The `(pieces..., local...)` array of every device's buffer.

    Without `copy`: a read-only view of `values` (of a padded copy when uneven) in which replicas
    share memory. With `copy`: writable, and no two devices share memory.
    """
    tiles, local = p.num_tiles, p.local_shape
    padded_shape = tuple(n * c for n, c in zip(tiles, local))
    replicas = any(i not in {j for dims in p.dim_pieces for j in dims} for i in range(len(p.pieces)))
    if p.uneven == "ragged" and padded_shape != values.shape:
        from ._ragged import to_storage

        values = to_storage(values, p, fill)  # ragged shards at the start of equal buffers
    if padded_shape != values.shape:
        padded = np.empty(padded_shape, values.dtype)
        for d, size in enumerate(values.shape):  # fill only the padding, then copy the data once
            padded[(slice(None),) * d + (slice(size, None),)] = fill
        padded[tuple(slice(0, d) for d in values.shape)] = values
        values = padded
    elif copy and not replicas:
        values = values.copy()  # a plain memcpy; the per-device views below do not overlap
    # Split every dim into (its pieces' sizes, as written..., local size), then bring the pieces
    # into mesh order in front; pieces that shard nothing become broadcast (replica) dims.
    split, pos, where = [], 0, {}
    for dims, c in zip(p.dim_pieces, local):
        for i in dims:
            where[i] = pos
            split.append(p.pieces[i].size)
            pos += 1
        split.append(c)
        pos += 1
    view = values.reshape(split)
    view = view.transpose([where[i] for i in p.tile_pieces] + _local_positions(p))
    others = tuple(i for i in range(len(p.pieces)) if i not in where)
    view = np.expand_dims(view, others) if others else view
    full = p.piece_sizes + local
    if p.unreduced_pieces and p.sharding.reduction_op == "sum":
        out = np.array(np.broadcast_to(view, full))
        identity = _unreduced_identity(values.dtype)
        for coords in np.ndindex(*[p.pieces[i].size for i in p.unreduced_pieces]):
            if any(coords):  # position 0 along the unreduced axes keeps the data
                index = [slice(None)] * out.ndim
                for i, c in zip(p.unreduced_pieces, coords):
                    index[i] = c
                out[tuple(index)] = identity
        out.flags.writeable = copy
        return out
    if copy:
        return np.array(np.broadcast_to(view, full)) if others else view
    return np.broadcast_to(view, full)  # read-only, replicas share memory


def _local_positions(p: Placement) -> list[int]:
    out, pos = [], 0
    for dims in p.dim_pieces:
        pos += len(dims)
        out.append(pos)
        pos += 1
    return out


def _coords(p: Placement, labels: tuple[str, ...], names: tuple[str, ...]) -> dict:
    coords = {"device_id": (labels, p.device_grid())}
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
        coords[f"global_{name}"] = (tuple(labels[i] for i in order) + (name,), index)
    return coords


def _reduce_partials(values: np.ndarray, axis: int, op: str) -> np.ndarray:
    """Reduces partial results along one mesh dim (kept, size 1).

    When the partials are exactly what `shard` made (identity, or copies for max/min), the data
    is taken as is: arithmetic would quiet signalling NaNs and so not be bit-exact.
    """
    first = np.take(values, [0], axis=axis)
    rest = np.take(values, range(1, values.shape[axis]), axis=axis)
    made = first if op != "sum" else np.broadcast_to(np.asarray(_unreduced_identity(values.dtype)), first.shape)
    if (_bits(rest) == _bits(np.ascontiguousarray(made))).all():
        return first
    return _REDUCE[op].reduce(values, axis=axis, keepdims=True, dtype=values.dtype)


def _check_replicas(values: np.ndarray, axis: int, p: Placement) -> None:
    if values.shape[axis] <= 1 or values.strides[axis] == 0:
        return  # views of one buffer agree by construction
    bits = _bits(values)
    before = (slice(None),) * axis
    first = bits[before + (0,)]
    for k in range(1, values.shape[axis]):
        other = bits[before + (k,)]
        if np.array_equal(first, other):
            continue
        where = tuple(int(i) for i in np.argwhere(first != other)[0])
        grid = p.device_grid()
        pos = where[:axis] + (k,) + where[axis: grid.ndim - 1]
        ref = pos[:axis] + (0,) + pos[axis + 1:]
        raise ShardingError(f"replicas disagree along mesh dim {shown(p.pieces[axis].label)}: device {int(grid[pos])} "
                            f"holds different data than device {int(grid[ref])}")


def _assemble(tiles: np.ndarray, p: Placement) -> np.ndarray:
    """`(tile pieces in mesh order..., local...)` back to the global array (a fresh copy)."""
    tile_pieces = p.tile_pieces
    k = len(tile_pieces)
    order = []
    for d, dims in enumerate(p.dim_pieces):
        order.extend(tile_pieces.index(i) for i in dims)
        order.append(k + d)
    padded = tiles.transpose(order).reshape(tuple(n * c for n, c in zip(p.num_tiles, p.local_shape)))
    if p.uneven == "ragged":
        from ._ragged import from_storage

        return from_storage(padded, p)
    out = padded[tuple(slice(0, d) for d in p.shape)]
    if out.shape != padded.shape or np.may_share_memory(padded, tiles):
        return np.array(out, copy=True)  # compact, and never a view of the shards
    return out  # the reshape already copied


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
    pa, pb = _placement_of(a, shape), _placement_of(b, shape)
    if pa.index_map() != pb.index_map():
        return False
    if not pa.unreduced_pieces and not pb.unreduced_pieces:
        return True
    return (pa.sharding.reduction_op == pb.sharding.reduction_op
            and _partial_groups(pa) == _partial_groups(pb))


def _partial_groups(p: Placement) -> frozenset:
    """Devices that hold the partial results of one slice, grouped."""
    return frozenset(frozenset(int(d) for d in g) for g in p.device_groups(p.unreduced_pieces))
