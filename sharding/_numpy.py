"""The in-memory array backend: every distinct shard a numpy array (spec execute.md §3.4).

A device array is `(pieces..., local...)` (see `simulate.ShardedArray`). Moves copy blocks along
the messages of `_moves.Moves`; `_dask` builds the same copies as tasks, bit for bit.
"""

from __future__ import annotations

import math

import numpy as np

from ._moves import Moves
from ._partials import bits, identity, pad_values, reduce, reduce_partials
from ._placement import Placement
from ._ragged import from_storage, to_storage
from .errors import ShardingError, shown

__all__ = ["NumpyBackend"]


class NumpyBackend:
    """Device arrays in memory (the default)."""

    name = "numpy"
    fuses_moves = True
    """A plan's result depends only on its operand's data: several moves may run as one direct
    move (each block copied once; the transfer record still lists every step's messages)."""

    def owns(self, data) -> bool:
        return isinstance(data, np.ndarray)

    def as_input(self, values) -> np.ndarray:
        try:
            return np.asarray(values)  # a dask input is computed
        except ValueError as e:  # ragged nested lists
            raise ShardingError(f"expected an array or a rectangular nested list: {e}") from None

    def device_array(self, values: np.ndarray, p: Placement, fill: np.ndarray, copy: bool) -> np.ndarray:
        return _device_view(values, p, fill, copy)

    def global_array(self, values: np.ndarray, p: Placement) -> np.ndarray:
        if values.shape != p.piece_sizes + p.local_shape:
            raise ShardingError(f"expected shards of shape {p.piece_sizes + p.local_shape}, found {values.shape}")
        for i in p.unreduced_pieces:
            values = reduce_partials(values, i, p.sharding.reduction_op)
        tiles = set(p.tile_pieces)
        for i in range(len(p.pieces)):
            if i not in tiles and i not in p.unreduced_pieces:
                _check_replicas(values, i, p)
        index = tuple(slice(None) if i in tiles else 0 for i in range(len(p.pieces)))
        return _assemble(values[index], p)

    def run(self, data: np.ndarray, pi: Placement, ms: list[Moves], po: Placement, fill: np.ndarray,
            out: np.ndarray | None = None) -> np.ndarray:
        """The moves `ms` one after another from `data` (under `pi`); the result's device array
        under `po` (read-only), a view of `out` when given (see `DeviceMesh.reshard`)."""
        op = pi.sharding.reduction_op
        grid = pi.piece_sizes
        if out is not None:
            _check_out(out, po.piece_sizes + po.local_shape, data)
        buffers = [data[np.unravel_index(i, grid)] if grid else data for i in range(math.prod(grid))]
        values = _global_values(pi, buffers, po) if ms and out is None else None
        if values is None:
            for i, m in enumerate(ms):
                values = None if i < len(ms) - 1 else (
                    np.empty((len(m.out_devices),) + m.out_local, fill.dtype) if out is None
                    else out.reshape((len(m.out_devices),) + m.out_local))
                buffers = _execute(m, buffers, pad_values(fill, m.partial, op), out=values)
            if values is None:  # no step: the same data under the target's name
                stacked = None if out is None else out.reshape((len(buffers),) + pi.local_shape)
                values = np.stack(buffers, out=stacked) if buffers else np.empty((0,) + pi.local_shape, data.dtype)
            values = values.reshape(po.piece_sizes + po.local_shape)
        values.flags.writeable = False
        return values

    def reduce(self, data: np.ndarray, p: Placement, red: tuple[int, ...], op: str) -> np.ndarray:
        """Every device of a group along the pieces `red` gets the group's reduction."""
        total = reduce(data, red, op) if red else data
        return np.ascontiguousarray(np.broadcast_to(total, data.shape))

    def relabel(self, data: np.ndarray, lead: tuple[int, ...], local: tuple[int, ...]) -> np.ndarray:
        out = data.reshape(lead + local)
        out.flags.writeable = False
        return out


def _device_view(values: np.ndarray, p: Placement, fill: np.ndarray, copy: bool) -> np.ndarray:
    """The `(pieces..., local...)` array of every device's buffer.

    Without `copy`: a read-only view of `values` (of a padded copy when uneven) in which replicas
    share memory. With `copy`: writable, and no two devices share memory.
    """
    tiles, local = p.num_tiles, p.local_shape
    padded_shape = tuple(n * c for n, c in zip(tiles, local))
    replicas = any(i not in {j for dims in p.dim_pieces for j in dims} for i in range(len(p.pieces)))
    if p.uneven == "ragged" and padded_shape != values.shape:
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
        out = np.array(np.broadcast_to(view, full), order="C")  # each device's buffer contiguous
        zero = identity(values.dtype)
        for coords in np.ndindex(*[p.pieces[i].size for i in p.unreduced_pieces]):
            if any(coords):  # position 0 along the unreduced axes keeps the data
                index = [slice(None)] * out.ndim
                for i, c in zip(p.unreduced_pieces, coords):
                    index[i] = c
                out[tuple(index)] = zero
        out.flags.writeable = copy
        return out
    if copy:
        return np.array(np.broadcast_to(view, full), order="C") if others else view
    return np.broadcast_to(view, full)  # read-only, replicas share memory


def _check_out(out, shape: tuple[int, ...], data: np.ndarray) -> None:
    """Refuses an `out` that cannot hold the result's device array `shape` of `data`'s dtype."""
    if not isinstance(out, np.ndarray):
        raise ShardingError(f"out: expected a numpy array, found {type(out).__name__}")
    found = []
    if out.shape != shape:
        found.append(f"shape {out.shape}")
    if out.dtype != data.dtype:
        found.append(f"dtype {out.dtype}")
    if not out.flags.c_contiguous:
        found.append("a non-contiguous array")
    if not out.flags.writeable:
        found.append("a read-only array")
    if found:
        raise ShardingError(f"out: expected a writable C-contiguous array of shape {shape} and dtype {data.dtype} "
                            f"(the result's buffers: mesh pieces, then local dims), found {', '.join(found)}")
    if np.may_share_memory(out, data):
        raise ShardingError("out: shares memory with the resharded array's buffers")


def _local_positions(p: Placement) -> list[int]:
    out, pos = [], 0
    for dims in p.dim_pieces:
        pos += len(dims)
        out.append(pos)
        pos += 1
    return out


def _check_replicas(values: np.ndarray, axis: int, p: Placement) -> None:
    if values.shape[axis] <= 1 or values.strides[axis] == 0:
        return  # views of one buffer agree by construction
    patterns = bits(values)
    before = (slice(None),) * axis
    first = patterns[before + (0,)]
    for k in range(1, values.shape[axis]):
        other = patterns[before + (k,)]
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
        return from_storage(padded, p)
    out = padded[tuple(slice(0, d) for d in p.shape)]
    if out.shape != padded.shape or np.may_share_memory(padded, tiles):
        return np.array(out, copy=True)  # compact, and never a view of the shards
    return out  # the reshape already copied


def _execute(m: Moves, buffers: list[np.ndarray], pads: np.ndarray, out: np.ndarray | None = None) -> list[np.ndarray]:
    """The result buffers (by result position), built block by block from `buffers` (by operand
    position); `pads[r]` fills receiver `r`'s padding. Writes into `out[pos]` when given;
    otherwise a buffer that is exactly a sender's whole buffer is passed on without a copy
    (buffers are never written after they are made)."""
    n = len(m.out_devices)
    result: list[np.ndarray | None] = [None] * n
    bounds = np.searchsorted(m.receiver, np.arange(n + 1))
    new_shape = m.out_local
    size = math.prod(new_shape)
    received = np.bincount(m.receiver, m.elements, n) if n else np.zeros(0)
    copies = []  # (destination, source) block views; copied below
    for r in range(n):
        a, b = bounds[r], bounds[r + 1]
        start = m.new_start[r]
        if out is None and b - a == 1 and m.in_local == new_shape:
            s = m.sender[a]
            if np.array_equal(m.lo[a], m.old_start[s]) and np.array_equal(m.lo[a], start):
                result[r] = buffers[s]  # the sender's whole buffer, at the same place
                continue
        buf = out[r] if out is not None else np.empty(new_shape, pads.dtype)
        if b - a == 0:
            buf[...] = pads[r]
        elif received[r] != size:
            # The blocks cover the tile's data, at the start of the buffer: fill only the rest.
            extent = np.max(m.hi[a:b] - start, axis=0)
            for d, e in enumerate(extent):
                buf[(slice(None),) * d + (slice(int(e), None),)] = pads[r]
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
