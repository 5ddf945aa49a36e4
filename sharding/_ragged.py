"""PyTorch DTensor's uneven shards (`uneven="ragged"`): `torch.chunk` once per axis, no padding.

A dim of size `D` sharded by axes `a_1..a_j` (major to minor) is split by `a_1` into
`torch.chunk` pieces of `ceil(D / size(a_1))` (the last shorter, trailing ones empty), each of
those by `a_2` the same way, and so on; this is DTensor's `Shard.local_shard_size_and_offset`
applied per mesh dim (spec sharding.md §6 Ex 4c, §9). 7 over `(3, 2)` gives `0:2, 2:3, 3:5,
5:6, 6:7, 7:7`, where XLA's padded rule gives `0:2, 2:4, 4:6, 6:7, 7:7, 7:7`.

The simulation stores every ragged shard at the start of a buffer as long as the largest shard
of its dim (the storage of `ShardedArray.data`; the rest is `fill`, `-1` in its `global_<dim>`
coordinate); `local`, `per_device`, `index_map`, `unshard` and the traffic see only the shard.

Users' shardings take full axes only (sub-axes have no DTensor meaning and are refused), but the
intermediate shardings of Shardy's reshard plans may cut an axis (`"y":(1)2`); there each ref
is one `torch.chunk` of its size (this project's definition: the plan's last step is the target,
so the result does not depend on it, only the intermediate traffic does).
"""

from __future__ import annotations

import numpy as np

def largest(size: int, ref_sizes) -> int:
    """The first (largest) shard's length: `ceil` applied once per axis."""
    for k in ref_sizes:
        size = -(-size // k)
    return size


def bounds(size: int, ref_sizes) -> tuple[np.ndarray, np.ndarray]:
    """`(starts, stops)` of every tile along a dim (tile index: mixed radix over `ref_sizes`)."""
    starts, lengths = np.zeros(1, np.int64), np.full(1, size, np.int64)
    for k in ref_sizes:
        chunk = -(-lengths // k)  # torch.chunk: ceil-sized pieces of each parent
        j = np.arange(k, dtype=np.int64)
        lo = np.minimum(j[None, :] * chunk[:, None], lengths[:, None])
        hi = np.minimum((j[None, :] + 1) * chunk[:, None], lengths[:, None])
        starts = (starts[:, None] + lo).reshape(-1)
        lengths = (hi - lo).reshape(-1)
    return starts, starts + lengths


def _storage_index(p) -> list[np.ndarray]:
    """Per dim: the storage position (tile * buffer length + offset) of every global index."""
    out = []
    for d, (size, c) in enumerate(zip(p.shape, p.local_shape)):
        starts, stops = p.dim_bounds(d)
        lengths = stops - starts
        tile = np.repeat(np.arange(len(starts), dtype=np.int64), lengths)
        out.append(tile * c + np.arange(size, dtype=np.int64) - starts[tile])
    return out


def to_storage(values: np.ndarray, p, fill) -> np.ndarray:
    """The global array laid out as tiles of the largest shard's size, `fill` after each shard."""
    shape = tuple(n * c for n, c in zip(p.num_tiles, p.local_shape))
    out = np.full(shape, fill, values.dtype)
    out[np.ix_(*_storage_index(p))] = values
    return out


def from_storage(storage: np.ndarray, p) -> np.ndarray:
    """The inverse of `to_storage` (a fresh array)."""
    return storage[np.ix_(*_storage_index(p))] if p.shape else storage.copy()


def trim(buffer: np.ndarray, p, tile) -> np.ndarray:
    """A device's ragged shard: its buffer without the storage after the shard."""
    return buffer[tuple(slice(0, s.stop - s.start) for s in p.tile_slices(tile))]
