"""Lazy shards on dask: every simulated device's buffer is one chunk, every transfer a task edge.

The device array of a `ShardedArray` (`(pieces..., local...)`, see `simulate`) is a dask array
with one chunk per device; the chunks of replicas are aliases of one task, so a distinct shard
is built (and held) once. A collective is one layer of tasks built from the same `Moves` as
the in-memory path: a *message* task copies the block one device sends another, and each
receiver's task assembles its new buffer from its messages and its own old buffer, so the
graph is the communication pattern and the computed buffers equal the in-memory ones bit for
bit. dask is loaded (`_imports.load`) only when lazy shards are asked for.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from ._imports import load
from ._moves import Moves
from ._partials import bits, identity, pad_values, reduce, reduce_partials
from ._placement import Placement
from .errors import ShardingError

__all__ = ["DaskBackend"]


class _Dask:
    """The dask modules, loaded on first use."""

    def __getattr__(self, name):
        try:
            modules = {"array": load("dask.array"), "core": load("dask.core"), "base": load("dask.base"),
                       "highlevelgraph": load("dask.highlevelgraph"), "task_spec": load("dask._task_spec")}
        except ImportError:
            raise ShardingError("lazy shards need dask: pip install 'layout-toolkit[dask]'") from None
        self.__dict__.update(modules)
        if name not in modules:  # e.g. doctest's `__wrapped__` probe
            raise AttributeError(name)
        return modules[name]


_dask = _Dask()


class DaskBackend:
    """Lazy device arrays: one dask chunk per device, replicas aliases of one task."""

    name = "dask"
    fuses_moves = False
    """The graph is the plan's communication pattern: one layer per step."""

    def owns(self, data) -> bool:
        """Whether `data` is a dask collection (without importing dask)."""
        return type(data).__module__.split(".")[0] == "dask" and hasattr(data, "__dask_graph__")

    def require(self) -> None:
        _dask.array  # noqa: B018 - refuses now, with the install hint, when dask is missing

    def as_input(self, values):
        """A dask array as is, anything else as a numpy array (`shard` chunks it by the shards)."""
        if self.owns(values):
            if any(c != c for dim in values.chunks for c in dim):
                raise ShardingError(f"the dask array has unknown chunk sizes (shape {values.shape}); call "
                                    "compute_chunk_sizes() first")
            return values
        try:
            return np.asarray(values)
        except ValueError as e:
            raise ShardingError(f"expected an array or a rectangular nested list: {e}") from None

    def device_array(self, values, p: Placement, fill: np.ndarray, copy: bool):
        return shard(values, p, fill)  # dask chunks are never written: `copy` does not apply

    def global_array(self, data, p: Placement):
        return unshard(data, p)

    def run(self, data, pi: Placement, ms: list[Moves], po: Placement, fill: np.ndarray, out=None):
        """The moves `ms` as dask layers, one after another (lazy: never into `out`)."""
        if out is not None:
            raise ShardingError("out= takes the result of numpy shards; these shards are dask arrays (lazy)")
        lead = po.piece_sizes
        if not ms:
            return self.relabel(data, lead, pi.local_shape)
        op = pi.sharding.reduction_op
        token = _token(data.name, [(m.lo.tobytes(), m.sender.tobytes(), m.receiver.tobytes(), m.partial.tobytes())
                                   for m in ms], fill.tobytes(), op)
        out, n = data, len(pi.pieces)
        for i, m in enumerate(ms):
            out_lead = lead if i == len(ms) - 1 else (len(m.out_devices),)
            out = move(m, out, n, out_lead, pad_values(fill, m.partial, op),
                       f"collective-{i}-{token}-{'x'.join(map(str, out_lead))}")
            n = len(out_lead)
        return out

    def reduce(self, data, p: Placement, red: tuple[int, ...], op: str):
        return all_reduce(data, p, red, op, "all_reduce-" + _token(data.name, red, op))

    def relabel(self, data, lead: tuple[int, ...], local: tuple[int, ...]):
        """A lazy device array under other leading dims (same positions, row-major)."""
        if data.shape[:data.ndim - len(local)] == lead:
            return data
        data, keys = _positions(data, data.ndim - len(local))
        name = f"relabel-{data.name}-{'x'.join(map(str, lead))}"
        task = partial(_lead, len(lead), len(local))
        layer = {(name, *pos, *(0,) * len(local)): (task, k) for pos, k in zip(np.ndindex(lead), keys)}
        return _array(name, layer, [data], tuple((1,) * n for n in lead) + tuple((c,) for c in local), data.dtype)


def _keys(arr) -> list:
    """The chunk keys of `arr` in row-major block order."""
    return list(_dask.core.flatten(arr.__dask_keys__())) if arr.ndim else [(arr.name,)]


def _array(name, layer: dict, deps, chunks, dtype):
    graph = _dask.highlevelgraph.HighLevelGraph.from_collections(name, layer, dependencies=deps)
    return _dask.array.Array(graph, name, chunks, meta=np.empty((0,) * len(chunks), dtype))


def _token(*parts) -> str:
    return _dask.base.tokenize(*parts)


def _device_chunks(p, lead: tuple[int, ...]) -> tuple:
    return tuple((1,) * n for n in lead) + tuple((c,) for c in p.local_shape)


def _positions(arr, npieces: int):
    """`arr` (pieces..., local...) with one chunk per device; its keys by mesh position."""
    want = tuple((1,) * n for n in arr.shape[:npieces]) + tuple((n,) for n in arr.shape[npieces:])
    if arr.chunks != want:
        arr = arr.rechunk(want)
    return arr, _keys(arr)


# -- tasks (module level, so a distributed worker can unpickle them) -------------------------


def _buffer(lead: int, local: tuple[int, ...], fill, chunk=None):
    """A device buffer from its shard (`None`: all padding): padded to `local`, leading 1s."""
    if chunk is not None and chunk.shape == local:
        return chunk.reshape((1,) * lead + local)
    out = np.full(local, fill, dtype=fill.dtype)
    if chunk is not None:
        out[tuple(slice(0, n) for n in chunk.shape)] = chunk
    return out.reshape((1,) * lead + local)


def _identity(lead: int, local: tuple[int, ...], value):
    return np.full((1,) * lead + local, value, dtype=value.dtype)


def _take(index: tuple[slice, ...], buffer):
    """A message: the block `index` of a sender's buffer (a copy: the sender may be freed)."""
    return np.array(buffer[(0,) * (buffer.ndim - len(index)) + index])


def _lead(lead: int, rank: int, buffer):
    """The same buffer under `lead` leading 1s (a view): chunks of arrays with other leading dims."""
    return buffer.reshape((1,) * lead + buffer.shape[buffer.ndim - rank:])


def _gather(lead: int, local: tuple[int, ...], fill, places, covered: bool, *blocks):
    """A receiver's new buffer: `blocks` (messages, or its own old buffer with a slice) at
    `places`; `fill` where nothing lands (padding)."""
    out = np.empty(local, fill.dtype)
    if not covered:
        out[...] = fill
    for (dst, src), block in zip(places, blocks):
        np.copyto(out[dst], block if src is None else block[(0,) * (block.ndim - len(local)) + src])
    return out.reshape((1,) * lead + local)


def _reduce_group(op: str, group: tuple[int, ...], axes: tuple[int, ...], lead: int, *buffers):
    local = buffers[0].shape[lead:]
    values = np.stack([b.reshape(local) for b in buffers]).reshape(group + local)
    total = reduce(values, axes, op) if axes else values
    return total.reshape((1,) * lead + local)


def _unshard_tile(group: tuple[int, ...], unreduced: tuple[int, ...], op: str, devices, extent, *buffers):
    """One global block from the buffers of the devices that hold it (`group`-shaped): partials
    reduced, replicas compared bit for bit, padding dropped."""
    lead = len(group)
    local = buffers[0].shape[buffers[0].ndim - len(extent):]
    if len(buffers) == 1:
        values = buffers[0].reshape((1,) * lead + local)
    else:
        values = np.stack([b.reshape(local) for b in buffers]).reshape(group + local)
    for i in unreduced:
        values = reduce_partials(values, i, op)
    patterns = bits(np.ascontiguousarray(values))
    first = patterns[(0,) * lead]
    for pos in np.ndindex(values.shape[:lead]):
        if not np.array_equal(patterns[pos], first):
            grid = np.asarray(devices).reshape(group)
            raise ShardingError(f"replicas disagree: device {int(grid[pos])} holds different data than device "
                                f"{int(grid[(0,) * lead])}")
    return values[(0,) * lead][tuple(slice(0, e) for e in extent)]


# -- shard / unshard ---------------------------------------------------------------------------


def _tile_grid(p):
    """Per dim: the non-empty tiles' sizes, and each tile's chunk index (-1 when empty)."""
    sizes, index = [], []
    for d in range(len(p.shape)):
        starts, stops = p.dim_bounds(d)
        lengths = stops - starts
        keep = lengths > 0
        sizes.append(tuple(int(n) for n in lengths[keep]) or (0,))
        index.append(np.where(keep, np.cumsum(keep) - 1, -1))
    return sizes, index


def shard(values, p, fill):
    """The `(pieces..., local...)` device array of a dask (or numpy) array: one task per distinct
    shard; the input is rechunked to the shards first when its chunks do not line up."""
    sizes, index = _tile_grid(p)
    if not isinstance(values, _dask.array.Array):
        values = _dask.array.from_array(values, chunks=tuple(sizes) or ())
    elif values.chunks != tuple(sizes):
        values = values.rechunk(tuple(sizes))
    in_keys = _keys(values)
    in_grid = tuple(len(s) for s in sizes)
    lead, local = len(p.pieces), p.local_shape
    name = "shard-" + _token(values.name, str(p.sharding), p.mesh.body(), p.uneven, fill.tobytes(), str(fill.dtype))
    layer: dict = {}
    tiles = p.tile_indices()
    zero = None
    if p.unreduced_pieces and p.sharding.reduction_op == "sum":
        zero = (name + "-identity",)
        layer[zero] = (partial(_identity, lead, local, identity(fill.dtype)),)
    for pos in np.ndindex(p.piece_sizes):
        key = (name,) + pos + (0,) * len(local)
        if zero is not None and any(pos[i] for i in p.unreduced_pieces):
            layer[key] = zero
            continue
        tile = tuple(int(t) for t in tiles[pos])
        tkey = (name + "-tile",) + tile
        if tkey not in layer:
            chunk = tuple(int(index[d][t]) for d, t in enumerate(tile))
            if all(c >= 0 for c in chunk):
                layer[tkey] = (partial(_buffer, lead, local, fill), in_keys[np.ravel_multi_index(chunk, in_grid)]
                               if chunk else in_keys[0])
            else:
                layer[tkey] = (partial(_buffer, lead, local, fill),)
        layer[key] = tkey  # replicas: aliases of one task
    return _array(name, layer, [values], _device_chunks(p, p.piece_sizes), fill.dtype)


def unshard(data, p):
    """The global dask array from the device array: one task per distinct non-empty shard."""
    data, keys = _positions(data, len(p.pieces))
    sizes, index = _tile_grid(p)
    grid = p.device_grid()
    tiles = p.tile_indices()
    name = "unshard-" + _token(data.name, str(p.sharding), p.uneven)
    tile_pieces = p.tile_pieces
    others = tuple(i for i in range(len(p.pieces)) if i not in tile_pieces)
    group = tuple(p.pieces[i].size for i in others)
    unreduced = tuple(others.index(i) for i in p.unreduced_pieces)
    graph = data.__dask_graph__()
    layer: dict = {}
    seen = set()
    for pos in np.ndindex(p.piece_sizes):
        tile = tuple(int(t) for t in tiles[pos])
        if tile in seen:
            continue
        seen.add(tile)
        chunk = tuple(int(index[d][t]) for d, t in enumerate(tile))
        if any(c < 0 for c in chunk):
            continue  # an empty shard
        holders = []
        for other in np.ndindex(group):
            q = list(pos)
            for i, c in zip(others, other):
                q[i] = c
            holders.append(tuple(q))
        hkeys = [keys[np.ravel_multi_index(q, p.piece_sizes)] if p.piece_sizes else keys[0] for q in holders]
        extent = tuple(s.stop - s.start for s in p.tile_slices(tile))
        if not unreduced and len({_resolve(graph, k) for k in hkeys}) == 1:
            hkeys, shape = hkeys[:1], (1,) * len(group)  # replicas of one task agree
        else:
            shape = group
        devices = tuple(int(grid[q]) for q in holders)
        layer[(name,) + chunk] = (partial(_unshard_tile, shape, unreduced, p.sharding.reduction_op, devices,
                                          extent), *hkeys)
    chunks = tuple(sizes)
    if any(s == (0,) for s in sizes):  # an empty dim: one empty chunk, nothing to read
        return _dask.array.empty(p.shape, dtype=data.dtype, chunks=p.shape)
    return _array(name, layer, [data], chunks, data.dtype)


def _resolve(graph, key):
    """`key` with aliases followed (chunks of replicas resolve to one task)."""
    alias = _dask.task_spec.Alias
    for _ in range(8):
        try:
            value = graph[key]
        except KeyError:
            return key
        if isinstance(value, alias):
            key = value.target
        elif isinstance(value, (tuple, str)) and not (isinstance(value, tuple) and value and callable(value[0])):
            try:
                if value not in graph:
                    return key
            except TypeError:
                return key
            key = value
        else:
            return key
    return key


# -- collectives ---------------------------------------------------------------------------------


def move(m: Moves, data, npieces: int, out_lead: tuple[int, ...], pads: np.ndarray, name: str):
    """One move on a device array; returns the result's device array with leading dims
    `out_lead` (the result's pieces); `pads[r]` fills receiver `r`'s padding. A receiver whose
    new buffer is exactly a sender's whole buffer aliases it (no copy, like the in-memory path)."""
    data, keys = _positions(data, npieces)
    n = len(m.out_devices)
    lead = len(out_lead)
    local = tuple(int(c) for c in m.out_local)
    bounds = np.searchsorted(m.receiver, np.arange(n + 1))
    layer: dict = {}
    for r in range(n):
        a, b = int(bounds[r]), int(bounds[r + 1])
        key = (name, *(int(i) for i in np.unravel_index(r, out_lead)), *(0,) * len(local))
        start = m.new_start[r]
        if b - a == 1 and tuple(m.in_local) == local:
            s = int(m.sender[a])
            if np.array_equal(m.lo[a], m.old_start[s]) and np.array_equal(m.lo[a], start) \
                    and math.prod(local) == int(m.elements[a]):
                layer[key] = keys[s] if npieces == lead else (partial(_lead, lead, len(local)), keys[s])
                continue
        places, deps = [], []
        for k in range(a, b):
            s = int(m.sender[k])
            ext = m.hi[k] - m.lo[k]
            src = tuple(slice(int(x), int(x + e)) for x, e in zip(m.lo[k] - m.old_start[s], ext))
            dst = tuple(slice(int(x), int(x + e)) for x, e in zip(m.lo[k] - start, ext))
            if m.local[k]:  # the receiver's own data: no transfer
                places.append((dst, src))
                deps.append(keys[int(m.receiver_in[k])])
            else:
                msg = (name + "-msg", k)
                layer[msg] = (partial(_take, src), keys[s])
                places.append((dst, None))
                deps.append(msg)
        covered = int(np.sum(m.elements[a:b])) == math.prod(local)
        layer[key] = (partial(_gather, lead, local, pads[r:r + 1].reshape(()), tuple(places), covered), *deps)
    chunks = tuple((1,) * s for s in out_lead) + tuple((c,) for c in local)
    return _array(name, layer, [data], chunks, pads.dtype)


def all_reduce(data, p, red: tuple[int, ...], op: str, name: str):
    """All-reduce along the pieces `red`: one task per group, its members alias the result."""
    data, keys = _positions(data, len(p.pieces))
    sizes = p.piece_sizes
    group = tuple(sizes[i] if i in red else 1 for i in range(len(sizes)))
    layer: dict = {}
    local = p.local_shape
    for pos in np.ndindex(sizes):
        base = tuple(0 if i in red else c for i, c in enumerate(pos))
        gkey = (name + "-group",) + base
        if gkey not in layer:
            members = []
            for other in np.ndindex(*[sizes[i] for i in red]):
                q = list(base)
                for i, c in zip(red, other):
                    q[i] = c
                members.append(keys[np.ravel_multi_index(tuple(q), sizes)])
            layer[gkey] = (partial(_reduce_group, op, group, red, len(sizes)), *members)
        layer[(name,) + pos + (0,) * len(local)] = gkey
    return _array(name, layer, [data], _device_chunks(p, sizes), data.dtype)
