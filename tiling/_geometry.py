"""Array geometry and layout tables: the pure functions the plans are made with.

- arrays as (flat memory span, base offset, element strides): `_geometry`, `_span`;
- the fast forms: `_fast_form` (`*` runs and 1-D tile chains as one 2-D tile), `_paired_rows`
  (row pairs side by side as words), `_square_rows` (transposed blocks), `_batch_offsets`;
- the generic kernel's tables (`_Side`, `_layout_side`, `_side_for_array`), the cost model that
  picks its inner loop and the arguments it takes (`_kernel_args`), and the permutation table
  (`_buffer_positions`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tiling._tuning import MOVE_FAR_READ_NS, MOVE_FAR_WRITE_NS, MOVE_LINE_NS, MOVE_RUN_NS
from tiling.dtypes import ElementType
from tiling.indexing import tile_steps, tiled_positions
from tiling.layout import COMBINE_DIMENSION, Layout


# ---------------------------------------------------------------------------------------------
# Arrays as (flat memory span, base offset, element strides)


def _geometry(a: np.ndarray) -> tuple[int, tuple[int, ...]] | None:
    """(offset of `a[0,...,0]` from the lowest address, strides), in elements; None if a stride
    is not a multiple of the item size (the caller then copies)."""
    item = a.itemsize
    if any(s % item for s in a.strides):
        return None
    strides = tuple(s // item for s in a.strides)
    return sum((d - 1) * -s for d, s in zip(a.shape, strides) if s < 0), strides


def _span(a: np.ndarray) -> np.ndarray:
    """A 1-D C-contiguous view of the memory `a` spans, from its lowest address (no copy).

    `a.size > 0` and its strides are multiples of its item size.
    """
    if a.flags.c_contiguous:
        return a.reshape(-1)
    item = a.itemsize
    span = 1 + sum((d - 1) * abs(s) for d, s in zip(a.shape, a.strides)) // item
    lowest = a[tuple(slice(None, None, -1) if s < 0 else slice(None) for s in a.strides)]
    return np.lib.stride_tricks.as_strided(lowest, shape=(span,), strides=(item,),
                                           writeable=lowest.flags.writeable)


def _as_words(a: np.ndarray) -> np.ndarray:
    """The uint64 view of a c128 (16-byte void) array: one more dim of size 2."""
    return a[..., None].view(np.uint64)


# ---------------------------------------------------------------------------------------------
# Tables for the generic kernel


@dataclass(frozen=True, slots=True)
class _Side:
    """Where each element of the index space sits on one side (see `_kernels.move`)."""

    grp: tuple[int, ...]      # per logical dim: its group
    rad: tuple[int, ...]      # per logical dim: its radix inside the group
    tables: tuple[np.ndarray, ...]  # per group: position of each group index


def _strided_side(shape: tuple[int, ...], base: int, strides: tuple[int, ...]) -> _Side:
    tables = [np.arange(d, dtype=np.int64) * s for d, s in zip(shape, strides)]
    tables[0] = tables[0] + base
    return _Side(tuple(range(len(shape))), (1,) * len(shape), tuple(tables))


def _positions(cols: list[np.ndarray], physical: tuple[int, ...], tiles) -> np.ndarray:
    """Linear positions of physical indices (one int64 column per physical dim), spec §3.6."""
    steps = tile_steps(physical, tiles)
    final = steps[-1].after if steps else physical
    return tiled_positions(cols, steps, final, (cols[0].shape[0] if cols else 1,))


def _layout_groups(physical: tuple[int, ...], tiles) -> list[list[int]]:
    """Physical dims that a `*` merge ties together (each group sorted major to minor)."""
    parent = list(range(len(physical)))

    def root(i):
        while parent[i] != i:
            i = parent[i]
        return i

    deps: list[frozenset[int]] = [frozenset([i]) for i in range(len(physical))]
    for step in tile_steps(physical, tiles):
        deps = [frozenset()] * (len(step.ones) - len(deps)) + deps
        start = len(step.ones) - len(step.spec)
        merged, acc = deps[:start], frozenset()
        for j, entry in enumerate(step.spec):
            acc = acc | deps[start + j]
            if entry != COMBINE_DIMENSION:
                merged.append(acc)
                acc = frozenset()
        for dep in merged:
            ids = sorted(dep)
            for i in ids[1:]:
                parent[root(i)] = root(ids[0])
        p = len(merged) - len(step.tile)
        deps = merged[:p] + merged[p:] + merged[p:]
    groups: dict[int, list[int]] = {}
    for i in range(len(physical)):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


def _layout_side(dims: tuple[int, ...], layout: Layout, scale: int) -> _Side:
    """Tables giving each logical element's position (in elements, times `scale`)."""
    m2m = layout.major_to_minor
    physical = tuple(dims[a] for a in m2m)
    tiles = layout.tiles
    grp = [0] * len(dims)
    rad = [1] * len(dims)
    tables = []
    for g, members in enumerate(_layout_groups(physical, tiles)):
        sizes = [physical[p] for p in members]
        grid = np.indices(sizes, dtype=np.int64).reshape(len(sizes), -1)
        cols = [np.zeros(grid.shape[1], np.int64) for _ in physical]
        radix = 1
        for k in range(len(members) - 1, -1, -1):
            cols[members[k]] = grid[k]
            grp[m2m[members[k]]] = g
            rad[m2m[members[k]]] = radix
            radix *= sizes[k]
        tables.append(_positions(cols, physical, tiles) * scale)
    return _Side(tuple(grp), tuple(rad), tuple(tables))


def _dummy_side(base: int = 0) -> _Side:
    return _Side((0,), (1,), (np.array([base], np.int64),))


def _add_word_dim(side: _Side) -> _Side:
    """c128 moves as two uint64 words: a most-minor index dim of size 2 at offsets 0 and 1."""
    return _Side(side.grp + (len(side.tables),), side.rad + (1,),
                 side.tables + (np.arange(2, dtype=np.int64),))


def _run_of(table: np.ndarray) -> tuple[int, int]:
    """(run, step) with table[k] == table[k - k % run] + (k % run) * step for every k.

    The run is the first arithmetic stretch; when the rest of the table does not repeat that
    pattern, (1, 0): one lookup per element.
    """
    n = table.size
    if n <= 1:
        return 1, 0
    diffs = np.diff(table)
    step = int(diffs[0])
    changes = np.flatnonzero(diffs != step)
    run = n if changes.size == 0 else int(changes[0]) + 1
    if run < n:
        k = np.arange(n)
        if not np.array_equal(table, table[k - k % run] + (k % run) * step):
            return 1, 0
    return run, step


def _arithmetic(table: np.ndarray) -> int | None:
    """The step of a table that is base + k*step throughout, else None."""
    if table.size <= 1:
        return 0
    diffs = np.diff(table)
    return int(diffs[0]) if (diffs == diffs[0]).all() else None


def _mergeable(side, k: int, sizes: list[int]) -> bool:
    """Can loop dims k (outer) and k+1 become one dim of size sizes[k]*sizes[k+1] on `side`?"""
    grp, rad, tables = side
    if grp[k] == grp[k + 1]:  # one group, adjacent radices: the group index is unchanged
        return rad[k] == sizes[k + 1] * rad[k + 1]
    solo = [g for g in (grp[k], grp[k + 1]) if grp.count(g) == 1 and rad[grp.index(g)] == 1]
    if len(solo) < 2:
        return False
    outer, inner = _arithmetic(tables[grp[k]]), _arithmetic(tables[grp[k + 1]])
    return outer is not None and inner is not None and outer == sizes[k + 1] * inner


def _merge(side, k: int, sizes: list[int]):
    grp, rad, tables = side
    if grp[k] == grp[k + 1]:
        return grp[:k] + grp[k + 1:], rad[:k] + rad[k + 1:], tables
    outer, inner = tables[grp[k]], tables[grp[k + 1]]
    step = _arithmetic(inner)
    merged = outer[0] + inner[0] + np.arange(sizes[k] * sizes[k + 1], dtype=np.int64) * step
    tables = list(tables)
    tables[grp[k + 1]] = merged
    tables[grp[k]] = np.zeros(1, np.int64)  # group kept (no loop dim refers to it any more)
    return grp[:k] + grp[k + 1:], rad[:k] + rad[k + 1:], tables


def _stride_ns(step_bytes: int, write: bool) -> float:
    """The cost model's time per element moved `step_bytes` after the last (see `_tuning`)."""
    if step_bytes <= 64:
        return 0.0
    if step_bytes <= 2048:
        return MOVE_LINE_NS
    return MOVE_FAR_WRITE_NS if write else MOVE_FAR_READ_NS


def _kernel_args(sides: list[_Side], order: tuple[int, ...], sizes, *, item: int,
                 writes: int) -> tuple:
    """`move` arguments for the sides (side `writes` is the destination, elements of `item`
    bytes), dims in loop `order` except the inner dim, picked by the cost model; size-1 dims
    dropped and neighbours merged where every side allows it, so the inner loop is long."""
    sizes = [int(n) for n in sizes]
    loop = [([side.grp[d] for d in order], [side.rad[d] for d in order], list(side.tables))
            for side in sides]

    def inner_cost(k):
        shortest, cost = None, 0.0
        for index, (g, r, t) in enumerate(loop):
            run, step = _run_of(t[g[k]]) if r[k] == 1 else (1, 0)
            shortest = run if shortest is None else min(shortest, run)
            cost += _stride_ns(abs(step) * item if run > 1 else 1 << 30, index == writes)
        return MOVE_RUN_NS / shortest + cost

    candidates = [k for k in range(len(sizes)) if sizes[k] > 1]
    if candidates and 0 not in sizes:
        best = min(candidates, key=lambda k: (inner_cost(k), -k))
        sizes = sizes[:best] + sizes[best + 1:] + [sizes[best]]
        loop = [(g[:best] + g[best + 1:] + [g[best]], r[:best] + r[best + 1:] + [r[best]], t)
                for g, r, t in loop]
    for k in range(len(sizes) - 1, -1, -1):  # a size-1 dim only adds its table's first entry
        if sizes[k] == 1 and len(sizes) > 1:
            sizes.pop(k)
            loop = [(g[:k] + g[k + 1:], r[:k] + r[k + 1:], t) for g, r, t in loop]
    k = len(sizes) - 2 if 0 not in sizes else -1  # (nothing moves when a dim is empty)
    while k >= 0:
        if all(_mergeable(side, k, sizes) for side in loop):
            loop = [_merge(side, k, sizes) for side in loop]
            sizes[k:k + 2] = [sizes[k] * sizes[k + 1]]
        k -= 1
    args = [np.array(sizes, np.int64)]
    for grp, rad, tables in loop:
        toff = np.cumsum([0] + [t.size for t in tables[:-1]]).astype(np.int64)
        tab = np.concatenate(tables).astype(np.int64)
        run, step = _run_of(tables[grp[-1]]) if rad[-1] == 1 else (1, 0)
        args.append((np.array(grp, np.int64), np.array(rad, np.int64), toff, tab, run, step))
    return tuple(args)


def _storage_bits(layout: Layout, element: ElementType) -> int:
    return layout.element_size_in_bits or element.storage_bits


def _num_final(physical: tuple[int, ...], layout: Layout) -> int:
    steps = tile_steps(physical, layout.tiles)
    return math.prod(steps[-1].after if steps else physical)


def _batch_offsets(shape, strides, base: int) -> np.ndarray:
    """Element offset of the first element of every batch (all dims but the last two)."""
    off = np.full(1, base, np.int64)
    for d, s in zip(shape, strides):
        off = (off[:, None] + np.arange(d, dtype=np.int64) * s).reshape(-1)
    return off


def _fast_form(dims: tuple[int, ...], strides: tuple[int, ...], tiles):
    """An equivalent (physical dims, strides, tiles) the fast paths may take, else the inputs.

    Two rewrites, each exact where its checks pass:
    - a `*` run in the first tile merges its physical dims (spec §3.5) when one stride walks the
      row-major merged index (`T(2,*,128)` over a C-order array is `T(2,128)`);
    - a 1-D tile chain `(k)(m)` with m | k and m | the minor dim is `(k/m, m)` over that dim
      split into rows of m (`bf16[N]{0:T(1024)(128)(2,1)}` is `T(8,128)(2,1)` on [N/128, 128]);
      later tiles of at most two entries act on the same two dims in both forms.
    """
    if tiles and COMBINE_DIMENSION in tiles[0] and len(tiles[0]) <= len(dims):
        start = len(dims) - len(tiles[0])
        new_dims, new_strides, first = list(dims[:start]), list(strides[:start]), []
        size, stride = 1, 0
        for d, st, entry in zip(dims[start:], strides[start:], tiles[0]):
            if size == 1 or d == 1:
                size, stride = size * d, (st if size == 1 else stride)
            elif stride == d * st:
                size, stride = size * d, st
            else:
                return dims, strides, tiles
            if entry != COMBINE_DIMENSION:
                new_dims.append(size)
                new_strides.append(stride)
                first.append(entry)
                size, stride = 1, 0
        dims, strides, tiles = tuple(new_dims), tuple(new_strides), (tuple(first),) + tiles[1:]
    if (len(tiles) >= 2 and len(tiles[0]) == 1 and len(tiles[1]) == 1 and dims
            and all(len(t) <= 2 for t in tiles[2:])):
        (k,), (m,) = tiles[:2]
        if k % m == 0 and dims[-1] % m == 0:
            dims = dims[:-1] + (dims[-1] // m, m)
            strides = strides[:-1] + (m * strides[-1], strides[-1])
            tiles = ((k // m, m),) + tiles[2:]
    return dims, strides, tiles


_UNITS = {16: np.dtype(np.uint16), 32: np.dtype(np.uint32), 64: np.dtype(np.uint64)}


def _paired_rows(dims, strides, base: int, tiles, nbits: int, natural: int):
    """`T(a,tc)(p,1)` over rows that sit side by side in memory (row stride 1: a transposed
    array) is `T(a/p, tc)` over units of p elements, each read or written as one word:
    (dims, strides, base, tiles, unit dtype) of that form, else None."""
    if (len(tiles) != 2 or len(tiles[0]) != 2 or len(tiles[1]) != 2 or tiles[1][1] != 1
            or nbits != natural or len(dims) < 2 or strides[-2] != 1):
        return None
    (a, tc), (p, _) = tiles
    unit = _UNITS.get(p * nbits)
    if (unit is None or a % p or dims[-2] % p or base % p
            or any(st % p for st in strides[:-2] + strides[-1:])):
        return None
    return (dims[:-2] + (dims[-2] // p, dims[-1]),
            tuple(st // p for st in strides[:-2]) + (1, strides[-1] // p), base // p,
            ((a // p, tc),), unit)


def _square_rows(a: int, tc: int, rs: int, cs: int, itemsize: int) -> int:
    """Tile rows per square block when T(a, tc) moves through `_kernels`' square kernels (a
    transposed source of 32- or 64-bit elements: rows side by side, columns cs apart), else 0."""
    n = 64 // itemsize
    if cs == 1 or rs != 1 or itemsize not in (4, 8) or tc % n or a not in (2, 4, 8):
        return 0
    return n // a


def _side_for_array(a: np.ndarray) -> _Side:
    """Tables of a strided logical container array (c128: plus its two-word dim)."""
    words = _words(a)
    base, strides = _geometry(words)
    side = _dummy_side(base) if a.ndim == 0 else _strided_side(a.shape, base, strides[:a.ndim])
    if words.ndim > a.ndim:
        side = _Side(side.grp + (len(side.tables),), side.rad + (1,),
                     side.tables + (np.arange(2, dtype=np.int64) * strides[-1],))
    return side


def _side_for_layout(dims: tuple[int, ...], layout: Layout, scale: int) -> _Side:
    if not dims:
        return _Side((0,), (1,), (_positions([], (), layout.tiles) * scale,))
    return _layout_side(dims, layout, scale)


def _loop(dims: tuple[int, ...], layout: Layout, words: int):
    """Loop order (physical, major to minor) and sizes for the generic kernel."""
    order = tuple(layout.major_to_minor) if dims else (0,)
    sizes = tuple(dims[d] for d in order) if dims else (1,)
    if words == 2:
        order, sizes = order + (len(order),), sizes + (2,)
    return order, np.array(sizes, np.int64)


def _words(a: np.ndarray) -> np.ndarray:
    return _as_words(a) if a.itemsize == 16 else a


def _buffer_positions(dims: tuple[int, ...], layout: Layout) -> np.ndarray:
    """int32 buffer position (in elements) of every element of the C-order array of `dims`."""
    side = _side_for_layout(dims, layout, 1)
    pos = np.zeros(dims, np.int64)
    for g, table in enumerate(side.tables):
        gidx = np.zeros([1] * len(dims), np.int64)
        for d, n in enumerate(dims):
            if side.grp[d] == g:
                shape = [1] * len(dims)
                shape[d] = n
                gidx = gidx + np.arange(n, dtype=np.int64).reshape(shape) * side.rad[d]
        pos += table[gidx]
    return pos.reshape(-1).astype(np.int32)
