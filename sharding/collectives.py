"""Shardy's collectives on the simulated mesh: data moves only through a transfer record.

>>> import numpy as np, sharding
>>> dm = sharding.DeviceMesh('<["x"=2, "y"=4]>')
>>> x = dm.shard(np.arange(64.0).reshape(8, 8), sharding.TensorSharding.parse('<@mesh, [{"x"}, {"y"}]>'))
>>> y, plan = dm.reshard(x, sharding.TensorSharding.parse('<@mesh, [{"y"}, {"x"}]>'))
>>> [s.kind for s in plan.steps], (dm.unshard(y) == np.arange(64.0).reshape(8, 8)).all()
(['collective_permute', 'all_to_all'], np.True_)
>>> len(plan.transfers), sum(t.bytes for t in plan.transfers)
(12, 512)

Every collective that moves data (all-gather, all-slice, all-to-all, collective-permute) is one
*move*: each device's new buffer (its tile under the result's sharding, padding `fill`) is built
from the data it already holds and from messages; the data it lacks comes from the holder with
the fewest differing mesh axes, ties to the smallest mesh position (spec collectives.md §3.1).
`moves()` computes the messages from shapes alone, vectorized over devices (the traffic of a
plan on 4096 devices needs no data); `_execute` copies the data along them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._placement import Placement, place
from .axes import AxisRef
from .errors import ShardingError
from .mesh import Mesh
from .tensor_sharding import DimensionSharding, TensorSharding

__all__ = ["Transfer", "Moves", "moves", "all_gather", "all_slice", "all_to_all", "collective_permute",
           "all_reduce", "reduce_scatter", "apply_step"]


@dataclass(frozen=True, slots=True)
class Transfer:
    """One message of an executed step: `bytes` from device `sender` to device `receiver`."""

    step: int
    sender: int
    receiver: int
    bytes: int
    axes: tuple[str, ...]
    """Mesh axes on which sender and receiver differ (the links it crosses)."""


@dataclass(frozen=True)
class Moves:
    """The element blocks one step moves, as arrays over (receiver, block) pairs.

    Positions are mesh positions (row-major): `receiver` in the result's mesh, `sender` and
    `receiver_in` in the operand's. `lo`/`hi` are global index bounds `(pairs, rank)`; `local`
    marks blocks the receiver already holds.
    """

    receiver: np.ndarray
    receiver_in: np.ndarray
    sender: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    local: np.ndarray
    elements: np.ndarray
    crossing: np.ndarray
    """`(pairs, mesh axes)` bools: sender and receiver differ on that axis."""
    in_devices: np.ndarray
    out_devices: np.ndarray
    in_local: tuple[int, ...]
    out_local: tuple[int, ...]
    old_start: np.ndarray
    """`(positions, rank)`: global start of each operand buffer (tile index × tile size)."""
    new_start: np.ndarray


def _refs(s: TensorSharding) -> list[AxisRef]:
    return [r for d in s.dim_shardings for r in d.axes] + list(s.unreduced_axes)


def _tiles(p: Placement, coords: np.ndarray) -> np.ndarray:
    """`(rank, positions)` tile index per dim at each piece coordinate column."""
    out = np.zeros((len(p.dim_pieces), coords.shape[1]), np.int64)
    for d, dims in enumerate(p.dim_pieces):
        for i in dims:
            out[d] = out[d] * p.pieces[i].size + coords[i]
    return out


def moves(source: TensorSharding, target: TensorSharding, in_mesh: Mesh, out_mesh: Mesh, shape,
          uneven: str = "padded") -> Moves:
    """The messages of one move from `source` (on `in_mesh`) to `target` (on `out_mesh`, same axes);
    `uneven="ragged"`: DTensor's ragged tiles on both sides (only real elements move)."""
    if in_mesh.axes != out_mesh.axes:
        raise ShardingError(f"a move keeps the mesh axes: {in_mesh.body()} and {out_mesh.body()} differ")
    cuts = _refs(source) + _refs(target)
    if not _nested(cuts, in_mesh):
        # Sub-axes that do not nest (`"x":(1)2` and `"x":(1)3` on `"x"=6`) have no common pieces.
        if uneven != "padded":
            raise ShardingError(f"ragged tiles need nested sub-axes: {source} -> {target}")
        return _moves_by_device(source, target, in_mesh, out_mesh, shape)
    pi = place(source, in_mesh, shape, cuts=cuts, uneven=uneven)
    po = place(target, out_mesh, shape, cuts=cuts, uneven=uneven)
    if pi.pieces != po.pieces:
        raise ShardingError(f"a move keeps the mesh axes: {in_mesh.body()} and {out_mesh.body()} differ")
    sizes = pi.piece_sizes
    n = math.prod(sizes)
    rank = len(pi.dim_pieces)
    coords = np.indices(sizes, dtype=np.int64).reshape(len(sizes), n) if sizes else np.zeros((0, n), np.int64)
    in_dev = np.asarray(in_mesh.devices, np.int64).reshape(-1) if in_mesh.axes else np.zeros(1, np.int64)
    out_dev = np.asarray(out_mesh.devices, np.int64).reshape(-1) if out_mesh.axes else np.zeros(1, np.int64)
    out_pos_of = np.empty(max(int(out_dev.max()) + 1, 1), np.int64)
    out_pos_of[out_dev] = np.arange(n)
    in_pos_of = np.empty_like(out_pos_of)
    in_pos_of[in_dev] = np.arange(n)
    old = _tiles(pi, coords)  # by operand position
    new = _tiles(po, coords)  # by result position
    # Each tile's data part per dim (padded: `[t*c, (t+1)*c)` clamped; ragged: DTensor's).
    b_in = [pi.dim_bounds(d) for d in range(rank)]
    b_out = [po.dim_bounds(d) for d in range(rank)]
    # Receivers by result position; where each sits in the operand's mesh.
    recv = np.arange(n)
    recv_in = in_pos_of[out_dev]
    pair = np.arange(n)  # pair -> receiver (result position)
    told = np.zeros((rank, n), np.int64)
    for d in range(rank):
        tn = new[d][pair]
        lo, hi = b_out[d][0][tn], b_out[d][1][tn]
        first = np.searchsorted(b_in[d][1], lo, side="right")  # the first operand tile ending after lo
        count = np.where(hi > lo, np.searchsorted(b_in[d][0], hi, side="left") - first, 0)
        rep = np.repeat(np.arange(len(pair)), count)
        offset = np.arange(len(rep)) - np.repeat(np.cumsum(count) - count, count)
        pair = pair[rep]
        told = told[:, rep]
        told[d] = first[rep] + offset
    tnew = new[:, pair]
    lo = np.array([np.maximum(b_out[d][0][tnew[d]], b_in[d][0][told[d]]) for d in range(rank)]).reshape(rank, -1)
    hi = np.array([np.minimum(b_out[d][1][tnew[d]], b_in[d][1][told[d]]) for d in range(rank)]).reshape(rank, -1)
    elements = np.prod(np.maximum(hi - lo, 0), axis=0) if rank else np.ones(len(pair), np.int64)
    r_in = recv_in[pair]
    local = np.all(told == old[:, r_in], axis=0)
    # The sender: the tile pieces say which tile it holds; other pieces copy the receiver's
    # coordinate (never differ) unless its axis differs anyway (then 0: the smallest position).
    send = coords[:, r_in].copy()
    for d, dims_d in enumerate(pi.dim_pieces):
        t = told[d].copy()
        for i in reversed(dims_d):
            send[i] = t % pi.pieces[i].size
            t //= pi.pieces[i].size
    tile = set(pi.tile_pieces)
    axes = [a.name for a in in_mesh.axes]
    crossing = np.zeros((len(pair), len(axes)), bool)
    for k, name in enumerate(axes):
        idx = [i for i, pc in enumerate(pi.pieces) if pc.name == name]
        differ = np.zeros(len(pair), bool)
        for i in idx:
            if i in tile:
                differ |= send[i] != coords[i, r_in]
        for i in idx:
            if i not in tile and i not in pi.unreduced_pieces:
                send[i] = np.where(differ, 0, coords[i, r_in])
        crossing[:, k] = differ
    sender = np.ravel_multi_index(tuple(send), sizes) if sizes else np.zeros(len(pair), np.int64)
    keep = elements > 0
    old_start = np.array([b_in[d][0][old[d]] for d in range(rank)]).reshape(rank, -1)
    new_start = np.array([b_out[d][0][new[d]] for d in range(rank)]).reshape(rank, -1)
    return Moves(recv[pair][keep], r_in[keep], sender[keep], lo.T[keep], hi.T[keep], local[keep],
                 elements[keep], crossing[keep], in_dev, out_dev, pi.local_shape, po.local_shape,
                 old_start.T, new_start.T)


def _nested(refs, mesh: Mesh) -> bool:
    """Whether the sub-axis boundaries of `refs` cut each axis into pieces (each divides the next)."""
    bounds: dict[str, set[int]] = {}
    for ref in refs:
        if ref.sub_axis_info is not None:
            bounds.setdefault(ref.name, {1, mesh.axis_size(ref.name)}).update(
                (ref.pre_size, ref.sub_axis_info.next_pre_size))
    for cuts in bounds.values():
        ordered = sorted(cuts)
        if any(b % a for a, b in zip(ordered, ordered[1:])):
            return False
    return True


def _moves_by_device(source, target, in_mesh: Mesh, out_mesh: Mesh, shape) -> Moves:
    """`moves` device by device, on full mesh coordinates (the same rule, for any sub-axes)."""
    pi, po = place(source, in_mesh, shape), place(target, out_mesh, shape)
    n = in_mesh.total_size
    rank = len(shape)
    in_dev = np.asarray(in_mesh.devices, np.int64)
    out_dev = np.asarray(out_mesh.devices, np.int64)
    in_pos_of = {int(d): i for i, d in enumerate(in_dev)}
    coords = np.array(np.unravel_index(np.arange(n), in_mesh.shape)).T  # (positions, axes)
    old = pi.tile_indices().reshape(n, rank)  # by operand position (pieces are in mesh order)
    new = po.tile_indices().reshape(n, rank)
    grid = pi.device_grid()
    ukey = np.zeros(n, np.int64)  # which partial sum a device holds: its unreduced coordinates
    for i in pi.unreduced_pieces:
        ukey = ukey * pi.pieces[i].size + np.indices(grid.shape)[i].reshape(-1)
    c_in, c_out = np.array(pi.local_shape, np.int64), np.array(po.local_shape, np.int64)
    dims = np.array(shape, np.int64)
    rows = []
    for q in range(n):
        r = in_pos_of[int(out_dev[q])]
        lo_new = np.minimum(new[q] * c_out, dims)
        hi_new = np.minimum((new[q] + 1) * c_out, dims)
        if (hi_new <= lo_new).any():
            continue
        first = lo_new // np.maximum(c_in, 1)
        last = (hi_new - 1) // np.maximum(c_in, 1)
        for t in np.ndindex(*(last - first + 1)):
            tile = first + np.array(t, np.int64)
            lo = np.maximum(lo_new, tile * c_in)
            hi = np.minimum(np.minimum(hi_new, (tile + 1) * c_in), dims)
            holders = np.flatnonzero((old == tile).all(axis=1) & (ukey == ukey[r]))
            if (old[r] == tile).all():
                s = r
            else:
                differ = (coords[holders] != coords[r]).sum(axis=1)
                s = int(holders[np.lexsort((holders, differ))[0]])
            rows.append((q, r, s, lo, hi, s == r, coords[s] != coords[r]))
    if not rows:
        empty = np.zeros(0, np.int64)
        return Moves(empty, empty, empty, np.zeros((0, rank), np.int64), np.zeros((0, rank), np.int64),
                     np.zeros(0, bool), empty, np.zeros((0, len(in_mesh.axes)), bool), in_dev, out_dev,
                     pi.local_shape, po.local_shape, old * c_in, new * c_out)
    q, r, s, lo, hi, local, crossing = map(np.array, zip(*rows))
    return Moves(q, r, s, lo, hi, local, np.prod(hi - lo, axis=1), crossing.reshape(len(rows), -1), in_dev,
                 out_dev, pi.local_shape, po.local_shape, old * c_in, new * c_out)


def messages(m: Moves, itemsize: int):
    """`(sender device, receiver device, bytes, crossing)` per message (local blocks excluded).

    A sender holds one operand tile, so each remote block is its own (sender, receiver) message.
    """
    remote = ~m.local
    return (m.in_devices[m.sender[remote]], m.out_devices[m.receiver[remote]], m.elements[remote] * itemsize,
            m.crossing[remote])


def _execute(m: Moves, buffers: list[np.ndarray], dtype, fill, out: np.ndarray | None = None) -> list[np.ndarray]:
    """The result buffers (by result position), built block by block from `buffers` (by operand
    position). Writes into `out[pos]` when given; otherwise a buffer that is exactly a sender's
    whole buffer is passed on without a copy (buffers are never written after they are made)."""
    n = len(m.out_devices)
    result: list[np.ndarray | None] = [None] * n
    bounds = np.searchsorted(m.receiver, np.arange(n + 1))
    new_shape = m.out_local
    copies = []  # (destination, source) block views; copied below
    for r in range(n):
        a, b = bounds[r], bounds[r + 1]
        start = m.new_start[r]
        if out is None and b - a == 1 and m.in_local == new_shape:
            s = m.sender[a]
            if np.array_equal(m.lo[a], m.old_start[s]) and np.array_equal(m.lo[a], start):
                result[r] = buffers[s]  # the sender's whole buffer, at the same place
                continue
        buf = out[r] if out is not None else np.empty(new_shape, dtype)
        if b - a == 0 or int(np.sum(m.elements[a:b])) != math.prod(new_shape):
            buf[...] = fill
        for k in range(a, b):
            s = m.sender[k]
            src_lo = m.lo[k] - m.old_start[s]
            dst_lo = m.lo[k] - start
            ext = m.hi[k] - m.lo[k]
            copies.append((buf[tuple(slice(int(x), int(x + e)) for x, e in zip(dst_lo, ext))],
                           buffers[s][tuple(slice(int(x), int(x + e)) for x, e in zip(src_lo, ext))]))
        result[r] = buf
    for dst, src in copies:
        np.copyto(dst, src)
    return result  # type: ignore[return-value]


# -- on ShardedArray ----------------------------------------------------------------------------


def _buffers(x) -> list[np.ndarray]:
    """Per mesh position, the device's buffer (a view)."""
    p = x.placement
    labels = tuple(pc.label for pc in p.pieces)
    values = x.data.transpose(*(labels + x.dims)).values
    grid = p.piece_sizes
    return [values[np.unravel_index(i, grid)] if grid else values for i in range(math.prod(grid))]


def _even(p: Placement) -> bool:
    return p.uneven == "padded" and all(c * n == d for c, n, d in zip(p.local_shape, p.num_tiles, p.shape))


def _global_values(pi: Placement, buffers: list[np.ndarray], po: Placement) -> np.ndarray | None:
    """The result's device buffers `(*po.piece_sizes, *po.local_shape)` as views of one fresh copy
    of the global array, when the operand's buffers are views of one C-contiguous global array
    (an unpadded `shard` of a numpy array, or a result of this) and nothing is unreduced; else
    None. A replicated result piece is a stride-0 view, as `shard` gives.

    Strided block copies into fresh memory run at ~2.5-3.5x `np.copyto` (page faults on scattered
    rows); one flat copy of the global array runs at ~1.2-1.4x (asv ReshardRatio)."""
    if not (pi.shape and _even(pi) and _even(po)) or pi.unreduced_pieces or po.unreduced_pieces or not buffers:
        return None
    root = buffers[0]
    while isinstance(root.base, np.ndarray):
        root = root.base
    if not root.flags.c_contiguous or root.dtype != buffers[0].dtype or root.size != math.prod(pi.shape):
        return None
    g = root.reshape(pi.shape)
    start = g.__array_interface__["data"][0]
    tiles = pi.tile_indices().reshape(len(buffers), -1) * np.array(pi.local_shape, np.int64)
    offsets = tiles @ np.array(g.strides, np.int64)
    for b, off in zip(buffers, offsets):
        if b.shape != pi.local_shape or b.strides != g.strides or b.__array_interface__["data"][0] != start + off:
            return None
    shape, axis = [], {}
    for d, dims in enumerate(po.dim_pieces):  # tile index: mixed radix, first piece most major
        for i in dims:
            axis[i] = len(shape)
            shape.append(po.pieces[i].size)
        axis[len(po.pieces) + d] = len(shape)
        shape.append(po.local_shape[d])
    v = g.copy().reshape(shape)
    for i in range(len(po.pieces)):  # a replicated piece: every coordinate sees the same data
        if i not in axis:
            axis[i] = len(shape)
            shape.append(1)
    v = v.reshape(shape).transpose([axis[k] for k in range(len(po.pieces) + len(po.dim_pieces))])
    return np.broadcast_to(v, po.piece_sizes + po.local_shape)


def _wrap(x, target: TensorSharding, mesh: Mesh, values: np.ndarray):
    """A ShardedArray of `values` (`(positions, *local)`) under `target`, labelled like `shard`."""
    import xarray as xr

    from .simulate import ShardedArray, _coords

    p = place(target, mesh, x.placement.shape, cut_by_replicated=True, uneven=x.placement.uneven)
    labels = tuple(pc.label for pc in p.pieces)
    if callable(values):  # lazy: the device array built for these leading dims
        data = values(p.piece_sizes)
    else:
        data = values.reshape(p.piece_sizes + p.local_shape)
        data.flags.writeable = False
    arr = xr.DataArray(data, dims=labels + x.dims, coords=_coords(p, labels, x.dims), name=x.data.name)
    return ShardedArray(arr, target, mesh, p, x.dims, x.like)


def _mesh_of(x, sharding: TensorSharding, mesh: Mesh | None) -> Mesh:
    if isinstance(sharding.mesh_or_ref, Mesh):
        return sharding.mesh_or_ref
    return x.mesh if mesh is None else mesh


def move(x, target: TensorSharding, *, mesh: Mesh | None = None, fill=0, step: int = 0, record=None):
    """`x` resharded to `target` by one move (any collective that moves data); appends its
    messages to `record` (a list of `Transfer`) when given."""
    out_mesh = _mesh_of(x, target, mesh)
    m = moves(x.sharding, target, x.mesh, out_mesh, x.placement.shape, x.placement.uneven)
    dtype = x.data.dtype
    if _lazy(x):
        values = _lazy_moves(x, [m], dtype, fill)
    else:
        values = np.empty((len(m.out_devices),) + m.out_local, dtype)
        _execute(m, _buffers(x), dtype, np.array(fill, dtype), out=values)
    if record is not None:
        record.extend(_transfers(m, dtype.itemsize, step, [a.name for a in x.mesh.axes]))
    return _wrap(x, target, out_mesh, values)


def _lazy(x) -> bool:
    from ._dask import is_dask

    return is_dask(x.data.data)


def _lazy_moves(x, ms: list[Moves], dtype, fill):
    """The moves `ms` one after another as dask layers; a function of the result's leading dims
    (known to `_wrap`) giving the result's device array."""
    from ._dask import _token, move

    p = x.placement
    labels = tuple(pc.label for pc in p.pieces)
    data, npieces = x.data.transpose(*(labels + x.dims)).data, len(p.pieces)
    fill_value = np.array(fill, dtype)
    token = _token(data.name, [(m.lo.tobytes(), m.sender.tobytes(), m.receiver.tobytes()) for m in ms],
                   fill_value.tobytes())

    def build(out_lead):
        out, n = data, npieces
        for i, m in enumerate(ms):
            last = i == len(ms) - 1
            lead = out_lead if last else (len(m.out_devices),)
            out = move(m, out, n, lead, fill_value, f"{_KIND}-{i}-{token}-{'x'.join(map(str, lead))}")
            n = len(lead)
        return out

    return build


_KIND = "collective"


def _transfers(m: Moves, itemsize: int, step: int, axes: list[str]) -> list[Transfer]:
    send, recv, nbytes, crossing = messages(m, itemsize)
    return [Transfer(step, int(s), int(r), int(b), tuple(a for a, c in zip(axes, row) if c))
            for s, r, b, row in zip(send, recv, nbytes, crossing)]


def _with_dims(x, dims: list[tuple[AxisRef, ...]]) -> TensorSharding:
    s = x.sharding
    return TensorSharding(s.mesh_or_ref, tuple(DimensionSharding(tuple(a)) for a in dims),
                          unreduced_axes=s.unreduced_axes, reduction_op=s.reduction_op)


def _ref(a) -> AxisRef:
    """An axis ref from an `AxisRef`, its text (`'"x":(1)2'`) or a bare axis name (`"x"`)."""
    if isinstance(a, AxisRef):
        return a
    return AxisRef.parse(a) if a.lstrip().startswith('"') else AxisRef(a)


def _axes_per_dim(x, axes_per_dim) -> list[tuple[AxisRef, ...]]:
    from .syntax import ListOfAxisRefLists

    if isinstance(axes_per_dim, ListOfAxisRefLists):
        axes_per_dim = axes_per_dim.lists
    lists = [tuple(map(_ref, axes)) for axes in axes_per_dim]
    if len(lists) != x.sharding.rank:
        raise ShardingError(f"result sharding has rank {x.sharding.rank} but collective axes has rank {len(lists)}")
    return lists


def all_gather(x, axes_per_dim, *, fill=0, record=None):
    """`sdy.all_gather`: each dim's `axes` (a suffix of its sharding) are gathered."""
    from .reshard import gather_along_dim

    dims = []
    for d, (dim, axes) in enumerate(zip(x.sharding.dim_shardings, _axes_per_dim(x, axes_per_dim))):
        try:
            dims.append(tuple(gather_along_dim(dim.axes, axes, x.mesh)))
        except ShardingError as e:
            raise ShardingError(f"can't apply gathering axis {e} to operand sharding on dimension {d}") from None
    return move(x, _with_dims(x, dims), fill=fill, record=record)


def all_slice(x, axes_per_dim, *, fill=0, record=None):
    """`sdy.all_slice`: each dim's sharding is extended by `axes`."""
    from .reshard import slice_along_dim

    dims = [tuple(slice_along_dim(dim.axes, axes, x.mesh))
            for dim, axes in zip(x.sharding.dim_shardings, _axes_per_dim(x, axes_per_dim))]
    return move(x, _with_dims(x, dims), fill=fill, record=record)


def all_to_all(x, params, *, fill=0, record=None):
    """`sdy.all_to_all`: each param's axes move from the end of `src_dim` to the end of `tgt_dim`."""
    from .reshard import gather_along_dim, slice_along_dim
    from .syntax import AllToAllParam, AllToAllParamList

    if isinstance(params, AllToAllParam):
        params = (params,)
    if isinstance(params, AllToAllParamList):
        params = params.params
    dims = [list(d.axes) for d in x.sharding.dim_shardings]
    for p in params:
        if not (0 <= p.src_dim < len(dims) and 0 <= p.tgt_dim < len(dims)):
            raise ShardingError(f"all-to-all dimensions {p.src_dim}->{p.tgt_dim} are out of range [0, {len(dims)})")
        try:
            dims[p.src_dim] = gather_along_dim(dims[p.src_dim], p.axes, x.mesh)
        except ShardingError as e:
            raise ShardingError(f"can't apply all-to-all axis {e} to operand sharding on dimension {p.src_dim}") \
                from None
        dims[p.tgt_dim] = slice_along_dim(dims[p.tgt_dim], p.axes, x.mesh)
    return move(x, _with_dims(x, [tuple(d) for d in dims]), fill=fill, record=record)


def collective_permute(x, out_sharding: TensorSharding, *, mesh: Mesh | None = None, fill=0, record=None):
    """`sdy.collective_permute`: same tile counts per dim, other axes or another device order
    (`mesh`: the result's mesh when it is not `x`'s)."""
    out_mesh = _mesh_of(x, out_sharding, mesh)
    for d, (a, b) in enumerate(zip(x.sharding.dim_shardings, out_sharding.dim_shardings)):
        if a.sharded_size(x.mesh) != b.sharded_size(out_mesh):
            raise ShardingError(f"sharded size of result doesn't match operand on dimension {d}: "
                                f"{b.sharded_size(out_mesh)} != {a.sharded_size(x.mesh)}")
    return move(x, out_sharding, mesh=mesh, fill=fill, record=record)


def all_reduce(x, axes, *, record=None):
    """`sdy.all_reduce`: the partial values along unreduced `axes` reduced (the sharding's
    reduction: sum, or the simulation's max/min); `axes` leave `unreduced`."""
    return _reduce(x, [_ref(a) for a in axes], None, record)


def reduce_scatter(x, axes_per_dim, *, fill=0, record=None):
    """`sdy.reduce_scatter`: `all_reduce` over all the axes, then `all_slice` by them."""
    lists = _axes_per_dim(x, axes_per_dim)
    return _reduce(x, [a for axes in lists for a in axes], lists, record, fill)


def _reduce(x, axes: list[AxisRef], slices, record, fill=0):
    from .axes import overlaps
    from .simulate import _REDUCE

    s = x.sharding
    unreduced = list(s.unreduced_axes)
    for ref in axes:
        if ref not in unreduced:
            raise ShardingError(f"reduction axis {ref} is not an unreduced axis of {s}")
    keep = tuple(a for a in unreduced if a not in axes)
    reduced = TensorSharding(s.mesh_or_ref, s.dim_shardings, s.replicated_axes, keep, s.reduction_op)
    p = x.placement
    red = tuple(i for i, pc in enumerate(p.pieces) if any(overlaps(pc.axis_ref(), a) for a in axes))
    dtype = x.data.dtype
    if _lazy(x):
        from ._dask import _token, reduce

        data = x.data.transpose(*(tuple(pc.label for pc in p.pieces) + x.dims)).data
        lazy = reduce(data, p, red, s.reduction_op, "all_reduce-" + _token(data.name, red, s.reduction_op))
    else:
        values = x.data.transpose(*(tuple(pc.label for pc in p.pieces) + x.dims)).values
        op = _REDUCE[s.reduction_op]
        total = op.reduce(values, axis=red, keepdims=True, dtype=values.dtype) if red else values
        full = np.ascontiguousarray(np.broadcast_to(total, values.shape))
    g = math.prod(p.pieces[i].size for i in red)
    if record is not None and g > 1:  # direct exchange: reduce-scatter then all-gather, B/g each
        b = math.prod(p.local_shape) * dtype.itemsize // g
        axes = [a.name for a in x.mesh.axes]
        coords = {int(d): np.unravel_index(pos, x.mesh.shape) for pos, d in enumerate(x.mesh.devices)}
        for group in p.device_groups(red):
            for s_ in group:
                for r_ in group:
                    if s_ != r_:
                        names = tuple(a for a, cs, cr in zip(axes, coords[int(s_)], coords[int(r_)]) if cs != cr)
                        record.append(Transfer(0, int(s_), int(r_), 2 * b, names))
    if _lazy(x):  # same positions, the reduced sharding's pieces
        out = _wrap(x, reduced, x.mesh, lambda lead: _relabel(lazy, lead, p.local_shape))
    else:
        out = _wrap(x, reduced, x.mesh, full.reshape((-1,) + p.local_shape))  # by mesh position
    return all_slice(out, slices, fill=fill, record=record) if slices is not None else out


def _relabel(data, lead: tuple[int, ...], local: tuple[int, ...]):
    """A lazy device array under other leading dims (same positions, row-major)."""
    if data.shape[:data.ndim - len(local)] == lead:
        return data
    from functools import partial

    from ._dask import _array, _lead, _positions

    data, keys = _positions(data, data.ndim - len(local))
    name = f"relabel-{data.name}-{'x'.join(map(str, lead))}"
    task = partial(_lead, len(lead), len(local))
    layer = {(name, *pos, *(0,) * len(local)): (task, k) for pos, k in zip(np.ndindex(lead), keys)}
    return _array(name, layer, [data], tuple((1,) * n for n in lead) + tuple((c,) for c in local), data.dtype)


def apply_step(x, step, *, mesh: Mesh | None = None, fill=0, record=None, index: int = 0):
    """Runs one `ReshardStep` of a plan on `x` (its result is exactly `step.out_sharding`)."""
    return move(x, step.out_sharding, mesh=mesh, fill=fill, step=index, record=record)


def run_plan(x, target: TensorSharding, bound, *, fill=0):
    """`DeviceMesh.reshard`: plans with `reshard_plan`, runs the steps on per-device buffers
    (intermediate buffers are not wrapped) and returns `(ShardedArray, plan)`; the plan carries
    the transfer record (`plan.transfers`)."""
    import dataclasses

    from .reshard import reshard_plan
    from .simulate import equivalent

    uneven = x.placement.uneven
    plan = reshard_plan(x.sharding, target, bound, x.placement.shape, dtype=x.data.dtype, uneven=uneven)
    if plan.error is not None:
        raise ShardingError(f"jaxlib's plan from {x.sharding} to {target} fails its verifier: {plan.error}")
    final = plan.final_sharding()
    shape = x.placement.shape
    if uneven == "ragged":  # `equivalent` is XLA's (padded) placement
        same = place(final, bound, shape, uneven=uneven).index_map() == place(target, bound, shape,
                                                                               uneven=uneven).index_map()
    else:
        same = equivalent((final, bound), (target, bound), shape)
    if not plan.reaches_target and not same:
        raise ShardingError(f"Shardy's plan from {x.sharding} to {target} stops at {final} (spec collectives.md "
                            "§5.5); reshard there, or to a target it reaches")
    dtype = x.data.dtype
    axes = [a.name for a in x.mesh.axes]
    ms, record = [], []
    prev, prev_mesh = x.sharding, x.mesh
    for i, step in enumerate(plan.steps):  # the messages, from shapes alone
        out_mesh = plan.mesh_of(step.out_sharding)
        ms.append(moves(prev, step.out_sharding, prev_mesh, out_mesh, shape, uneven))
        record.extend(_transfers(ms[-1], dtype.itemsize, i, axes))
        prev, prev_mesh = step.out_sharding, out_mesh
    plan = dataclasses.replace(plan, transfers=tuple(record))
    if _lazy(x):
        data = x.data.transpose(*(tuple(pc.label for pc in x.placement.pieces) + x.dims)).data
        build = _lazy_moves(x, ms, dtype, fill) if ms else (lambda lead: _relabel(data, lead, x.placement.local_shape))
        return _wrap(x, target, prev_mesh, build), plan
    fill_value = np.array(fill, dtype)
    buffers, values = _buffers(x), None
    if ms:
        values = _global_values(x.placement, buffers, place(target, prev_mesh, shape, cut_by_replicated=True,
                                                            uneven=uneven))
        if values is not None:
            ms = []  # the result is a copy of the operand's global array (see _global_values)
    for i, m in enumerate(ms):
        values = np.empty((len(m.out_devices),) + m.out_local, dtype) if i == len(ms) - 1 else None
        buffers = _execute(m, buffers, dtype, fill_value, out=values)
    if values is None:  # no step: the same data under the target's name
        values = np.stack(buffers) if buffers else np.empty((0,) + x.placement.local_shape, dtype)
    return _wrap(x, target, prev_mesh, values), plan
