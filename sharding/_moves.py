"""The message geometry of one move: which block of which device goes to which device.

Every collective that moves data (all-gather, all-slice, all-to-all, collective-permute) is one
*move*: each device's new buffer (its tile under the result's sharding) is built from the data it
already holds and from messages; the data it lacks comes from the holder with the fewest
differing mesh axes, ties to the smallest mesh position (spec collectives.md §3.1). `moves`
computes the messages from shapes alone, vectorized over devices (the traffic of a plan on 4096
devices needs no data); the array backends (`_backends`) copy the data along them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._placement import Placement, place
from .axes import AxisRef
from .errors import ShardingError
from .mesh import Mesh
from .tensor_sharding import TensorSharding

__all__ = ["Transfer", "Moves", "moves", "messages", "transfers", "nested", "refs"]


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
    partial: np.ndarray
    """`(positions,)` bools by result position: the receiver holds a partial value at a non-zero
    coordinate along the result's unreduced axes (its `sum` padding is the identity, `_partials`)."""

    def __post_init__(self):
        for value in (self.receiver, self.receiver_in, self.sender, self.lo, self.hi, self.local, self.elements,
                      self.crossing, self.in_devices, self.out_devices, self.old_start, self.new_start, self.partial):
            value.flags.writeable = False  # a frozen value: `_runtime` reuses the moves of a plan


def refs(s: TensorSharding) -> list[AxisRef]:
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
    cuts = refs(source) + refs(target)
    if not nested(cuts, in_mesh):
        # Sub-axes that do not nest (`"x":(1)2` and `"x":(1)3` on `"x"=6`) have no common pieces.
        if uneven != "padded":
            raise ShardingError(f"ragged tiles need nested sub-axes: {source} -> {target}")
        return moves_by_device(source, target, in_mesh, out_mesh, shape)
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
                 old_start.T, new_start.T, _partial(po, coords))


def _partial(po: Placement, coords: np.ndarray) -> np.ndarray:
    """`Moves.partial` from the result's piece coordinates `(pieces, positions)`."""
    if not po.unreduced_pieces:
        return np.zeros(coords.shape[1], bool)
    return np.any(coords[list(po.unreduced_pieces)] != 0, axis=0)


def nested(cuts, mesh: Mesh) -> bool:
    """Whether the sub-axis boundaries of `cuts` cut each axis into pieces (each divides the next)."""
    bounds: dict[str, set[int]] = {}
    for ref in cuts:
        if ref.sub_axis_info is not None:
            bounds.setdefault(ref.name, {1, mesh.axis_size(ref.name)}).update(
                (ref.pre_size, ref.sub_axis_info.next_pre_size))
    for cuts in bounds.values():
        ordered = sorted(cuts)
        if any(b % a for a, b in zip(ordered, ordered[1:])):
            return False
    return True


def moves_by_device(source, target, in_mesh: Mesh, out_mesh: Mesh, shape) -> Moves:
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
    sizes = po.piece_sizes
    partial = _partial(po, np.indices(sizes, dtype=np.int64).reshape(len(sizes), n) if sizes else np.zeros((0, n)))
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
                     pi.local_shape, po.local_shape, old * c_in, new * c_out, partial)
    q, r, s, lo, hi, local, crossing = map(np.array, zip(*rows))
    return Moves(q, r, s, lo, hi, local, np.prod(hi - lo, axis=1), crossing.reshape(len(rows), -1), in_dev,
                 out_dev, pi.local_shape, po.local_shape, old * c_in, new * c_out, partial)


def messages(m: Moves, itemsize: int):
    """`(sender device, receiver device, bytes, crossing)` per message (local blocks excluded).

    A sender holds one operand tile, so each remote block is its own (sender, receiver) message.
    """
    remote = ~m.local
    return (m.in_devices[m.sender[remote]], m.out_devices[m.receiver[remote]], m.elements[remote] * itemsize,
            m.crossing[remote])


def transfers(m: Moves, itemsize: int, step: int, axes: list[str]) -> list[Transfer]:
    """The messages of `m` as the transfer record lists them."""
    send, recv, nbytes, crossing = messages(m, itemsize)
    return [Transfer(step, int(s), int(r), int(b), tuple(a for a, c in zip(axes, row) if c))
            for s, r, b, row in zip(send, recv, nbytes, crossing)]
