"""Evaluators of the data-movement ops (spec execute.md §4.5, App. C): constants, iota,
broadcasts, reshapes, slices, pads, gather and scatter. Exact in every dtype.

The lockstep engine (spec execute.md §3.1) runs an op once over its distinct shards stacked on a
new leading axis through the evaluator's `stacked` variant: the same op with that axis kept
(scalar operands stacked as `(k,)`)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from sdy_passes.attributes import ArrayAttr, DenseArrayAttr, DenseElementsAttr, IntegerAttr
from sdy_passes.interpreter._core import contiguous, dtype_of, fail, region_fn

# -- attribute helpers ---------------------------------------------------------------------------


def ints(op, name: str, default=None) -> tuple[int, ...]:
    """An integer-list attribute (`array<i64: ...>`, `dense<...>`, `[1, 2]`) as a tuple."""
    a = op.properties.get(name, op.attributes.get(name))
    if a is None:
        if default is None:
            fail(op, f"requires attribute '{name}'")
        return tuple(default)
    if isinstance(a, DenseArrayAttr):
        return tuple(int(v) for v in a.values)
    if isinstance(a, DenseElementsAttr):
        return tuple(int(v) for v in a.to_numpy().reshape(-1))
    if isinstance(a, ArrayAttr):
        return tuple(int(v.value) for v in a)
    if isinstance(a, IntegerAttr):
        return (a.value,)
    fail(op, f"attribute '{name}' is not a list of integers: {a}")


def int_attr(op, name: str, default=None) -> int:
    a = op.properties.get(name, op.attributes.get(name))
    if a is None:
        if default is None:
            fail(op, f"requires attribute '{name}'")
        return default
    return int(a.value)


def result_shape(op, i: int = 0) -> tuple[int, ...]:
    t = op.results[i].type
    shape = getattr(t, "shape", None)
    if shape is None or None in shape:
        fail(op, f"result #{i} has no static shape: {t}")
    return tuple(shape)


# -- evaluators ----------------------------------------------------------------------------------

def constant(op, args, ctx):
    value = op.properties.get("value")
    if not isinstance(value, DenseElementsAttr):
        fail(op, f"cannot read constant value {value}" if value is not None else "requires attribute 'value'")
    try:
        arr = value.to_numpy()
    except ValueError as e:
        fail(op, str(e))
    return (arr,)


def iota(op, args, ctx):
    shape = result_shape(op)
    dim = int_attr(op, "iota_dimension")
    dt = dtype_of(op.result.type, op)
    n = shape[dim]
    line = np.arange(n, dtype=np.int64 if dt.kind in "iub" or dt.itemsize == 1 else np.float64)
    view = [1] * len(shape)
    view[dim] = n
    return (np.broadcast_to(line.reshape(view), shape).astype(dt),)


def broadcast_in_dim(op, args, ctx):
    (x,) = args
    shape = result_shape(op)
    dims = ints(op, "broadcast_dimensions")
    view = [1] * len(shape)
    for i, d in enumerate(dims):
        view[d] = x.shape[i]
    return (np.broadcast_to(x.reshape(view), shape),)


def _broadcast_in_dim_stacked(op, args, ctx):
    (x,) = args
    shape = result_shape(op)
    view = [len(x)] + [1] * len(shape)
    for i, d in enumerate(ints(op, "broadcast_dimensions")):
        view[d + 1] = x.shape[i + 1]
    return (np.broadcast_to(x.reshape(view), (len(x),) + shape),)


broadcast_in_dim.stacked = _broadcast_in_dim_stacked


def broadcast(op, args, ctx):
    (x,) = args
    return (np.broadcast_to(x, ints(op, "broadcast_sizes") + x.shape),)


def _broadcast_stacked(op, args, ctx):
    (x,) = args
    sizes = ints(op, "broadcast_sizes")
    lead, rest = x.shape[:1], x.shape[1:]
    return (np.broadcast_to(x.reshape(lead + (1,) * len(sizes) + rest), lead + sizes + rest),)


broadcast.stacked = _broadcast_stacked


def get_dimension_size(op, args, ctx):
    return (np.array(args[0].shape[int_attr(op, "dimension")], np.int32),)


def reshape(op, args, ctx):
    return (args[0].reshape(result_shape(op)),)


def _reshape_stacked(op, args, ctx):
    return (args[0].reshape(args[0].shape[:1] + result_shape(op)),)


reshape.stacked = _reshape_stacked


def transpose(op, args, ctx):
    return (np.transpose(args[0], ints(op, "permutation")),)


def _transpose_stacked(op, args, ctx):
    return (np.transpose(args[0], (0,) + _shifted(ints(op, "permutation"))),)


transpose.stacked = _transpose_stacked


def _shifted(dims) -> tuple[int, ...]:
    """Dims of an op's operand as dims of its stacked operand."""
    return tuple(d + 1 for d in dims)


def _slices(op, rank):
    start, limit = ints(op, "start_indices"), ints(op, "limit_indices")
    strides = ints(op, "strides", (1,) * rank)
    return tuple(np.s_[a:b:s] for a, b, s in zip(start, limit, strides))


def slice(op, args, ctx):  # noqa: A001 - the op's name
    return (args[0][_slices(op, args[0].ndim)],)


def _slice_stacked(op, args, ctx):
    return (args[0][(np.s_[:],) + _slices(op, args[0].ndim - 1)],)


slice.stacked = _slice_stacked


def _clamped_starts(x_shape, sizes, index_args):
    return [int(min(max(int(i.reshape(())), 0), n - s)) for i, n, s in zip(index_args, x_shape, sizes)]


def _stacked_starts(x_shape, sizes, index_args) -> np.ndarray:
    """Per stacked shard (row), the clamped start of each dim (`(k, rank)`)."""
    cols = []
    for i, n, s in zip(index_args, x_shape, sizes):
        v = i.reshape(-1)
        if v.dtype.kind == "u":
            v = np.minimum(v, n)
        cols.append(np.clip(v.astype(np.int64), 0, n - s))
    return np.stack(cols, axis=1)


def _windows(x, sizes, starts, writeable=False):
    """The `sizes` window of each row of `x` at that row's `starts` (an indexable view)."""
    view = np.lib.stride_tricks.sliding_window_view(x, sizes, axis=tuple(range(1, x.ndim)), writeable=writeable)
    return view, (np.arange(len(x)),) + tuple(starts.T)


def dynamic_slice(op, args, ctx):
    x, *idx = args
    sizes = ints(op, "slice_sizes")
    starts = _clamped_starts(x.shape, sizes, idx)
    return (x[tuple(np.s_[a:a + s] for a, s in zip(starts, sizes))],)


def _dynamic_slice_stacked(op, args, ctx):
    x, *idx = args
    sizes = ints(op, "slice_sizes")
    if not sizes or 0 in sizes:
        return (x[(np.s_[:],) + tuple(np.s_[:s] for s in sizes)],)
    view, where = _windows(x, sizes, _stacked_starts(x.shape[1:], sizes, idx))
    return (view[where],)


dynamic_slice.stacked = _dynamic_slice_stacked


def dynamic_update_slice(op, args, ctx):
    x, u, *idx = args
    starts = _clamped_starts(x.shape, u.shape, idx)
    out = x.copy()
    out[tuple(np.s_[a:a + s] for a, s in zip(starts, u.shape))] = u
    return (out,)


def _dynamic_update_slice_stacked(op, args, ctx):
    x, u, *idx = args
    out = x.copy()
    if x.ndim > 1 and u.size:
        view, where = _windows(out, u.shape[1:], _stacked_starts(x.shape[1:], u.shape[1:], idx), writeable=True)
        view[where] = u
    elif x.ndim == 1:
        out[...] = u
    return (out,)


dynamic_update_slice.stacked = _dynamic_update_slice_stacked


def _pad(op, x, value, lead: int):
    """`x` padded with `value` on its dims after the first `lead` (`value` has those dims)."""
    dims = x.shape[lead:]
    low, high = ints(op, "edge_padding_low"), ints(op, "edge_padding_high")
    interior = ints(op, "interior_padding", (0,) * len(dims))
    # interior and non-negative edges into a full array, then negative edges crop
    full = [max(lo, 0) + (n - 1) * (i + 1) + 1 + max(hi, 0) if n else max(lo, 0) + max(hi, 0)
            for n, lo, hi, i in zip(dims, low, high, interior)]
    out = np.empty(x.shape[:lead] + tuple(full), dtype=x.dtype)
    out[...] = value.reshape(x.shape[:lead] + (1,) * len(dims))
    keep = (np.s_[:],) * lead
    out[keep + tuple(np.s_[max(lo, 0):max(lo, 0) + (n - 1) * (i + 1) + 1:i + 1] if n else np.s_[0:0]
                     for n, lo, i in zip(dims, low, interior))] = x
    crop = tuple(np.s_[max(-lo, 0):f - max(-hi, 0)] for f, lo, hi in zip(full, low, high))
    return out[keep + crop]


def pad(op, args, ctx):
    return (_pad(op, *args, 0),)


def _pad_stacked(op, args, ctx):
    return (_pad(op, *args, 1),)


pad.stacked = _pad_stacked


def concatenate(op, args, ctx):
    return (np.concatenate(args, axis=int_attr(op, "dimension")),)


def _concatenate_stacked(op, args, ctx):
    return (np.concatenate(args, axis=int_attr(op, "dimension") + 1),)


concatenate.stacked = _concatenate_stacked


def reverse(op, args, ctx):
    return (np.flip(args[0], ints(op, "dimensions")),)


def _reverse_stacked(op, args, ctx):
    return (np.flip(args[0], _shifted(ints(op, "dimensions"))),)


reverse.stacked = _reverse_stacked


# -- gather and scatter (StableHLO spec; App. C) -------------------------------------------------

def _index_batch(indices: np.ndarray, index_vector_dim: int) -> np.ndarray:
    """Start indices with the index vector as the last dim."""
    if index_vector_dim == indices.ndim:
        return indices[..., None]
    return np.moveaxis(indices, index_vector_dim, -1)


def _batch_axis(dim: int, index_vector_dim: int) -> int:
    return dim if dim < index_vector_dim else dim - 1


def gather(op, args, ctx):
    return (_gather(*args, op.properties["dimension_numbers"], ints(op, "slice_sizes"), result_shape(op)),)


def _gather_stacked(op, args, ctx):
    """The stacked axis as one more batching dim of the operand and the start indices."""
    dn = op.properties["dimension_numbers"]
    stacked = replace(dn, offset_dims=_shifted(dn.offset_dims), collapsed_slice_dims=_shifted(dn.collapsed_slice_dims),
                      operand_batching_dims=(0,) + _shifted(dn.operand_batching_dims),
                      start_indices_batching_dims=(0,) + _shifted(dn.start_indices_batching_dims),
                      start_index_map=_shifted(dn.start_index_map), index_vector_dim=dn.index_vector_dim + 1)
    x = args[0]
    return (_gather(*args, stacked, (1,) + ints(op, "slice_sizes"), x.shape[:1] + result_shape(op)),)


gather.stacked = _gather_stacked


def _gather(x, indices, dn, sizes, out_shape):
    idx = _index_batch(indices.astype(np.int64), dn.index_vector_dim)
    batch_shape = idx.shape[:-1]
    nb = len(batch_shape)
    offset_operand = [d for d in range(x.ndim) if d not in dn.collapsed_slice_dims
                      and d not in dn.operand_batching_dims]
    offset_shape = tuple(sizes[d] for d in offset_operand)
    grid = []
    for d in range(x.ndim):
        part = np.zeros((1,) * (nb + len(offset_shape)), np.int64)
        if d in dn.start_index_map:
            k = dn.start_index_map.index(d)
            s = np.clip(idx[..., k], 0, x.shape[d] - sizes[d])
            part = part + s.reshape(batch_shape + (1,) * len(offset_shape))
        elif d in dn.operand_batching_dims:
            axis = _batch_axis(dn.start_indices_batching_dims[dn.operand_batching_dims.index(d)], dn.index_vector_dim)
            view = [1] * (nb + len(offset_shape))
            view[axis] = batch_shape[axis]
            part = part + np.arange(batch_shape[axis]).reshape(view)
        if d in offset_operand:
            p = offset_operand.index(d)
            view = [1] * (nb + len(offset_shape))
            view[nb + p] = offset_shape[p]
            part = part + np.arange(offset_shape[p]).reshape(view)
        grid.append(part)
    g = x[tuple(grid)] if x.ndim else np.broadcast_to(x, batch_shape + offset_shape)
    g = np.broadcast_to(g, batch_shape + offset_shape)
    rank = nb + len(offset_shape)
    perm, b = [], 0
    for r in range(rank):
        if r in dn.offset_dims:
            perm.append(nb + dn.offset_dims.index(r))
        else:
            perm.append(b)
            b += 1
    return contiguous(np.transpose(g, perm)).reshape(out_shape)


_SCATTER_UFUNCS = {"stablehlo.add": np.add, "stablehlo.maximum": np.maximum, "stablehlo.minimum": np.minimum,
                   "stablehlo.multiply": np.multiply, "stablehlo.or": np.logical_or, "stablehlo.and": np.logical_and}


def combiner(region) -> str | None:
    """`"assign"` for a body returning its second argument, the op name for a body that is one
    binary op of its two arguments (`add`, `maximum`, ...), else None."""
    block = region.blocks[0]
    ops = block.ops
    args = block.arguments
    if len(args) != 2:
        return None
    if len(ops) == 1 and ops[0].operands == (args[1],):
        return "assign"
    if len(ops) == 2 and len(ops[0].operands) == 2 and set(ops[0].operands) == set(args) \
            and ops[1].operands == (ops[0].results[0],):
        return ops[0].name
    return None


def scatter(op, args, ctx):
    return _scatter(op, args, ctx, op.properties["scatter_dimension_numbers"])


def _scatter_stacked(op, args, ctx):
    """The stacked axis as one more batching dim of the inputs and the scatter indices."""
    dn = op.properties["scatter_dimension_numbers"]
    return _scatter(op, args, ctx, replace(
        dn, update_window_dims=_shifted(dn.update_window_dims), inserted_window_dims=_shifted(dn.inserted_window_dims),
        input_batching_dims=(0,) + _shifted(dn.input_batching_dims),
        scatter_indices_batching_dims=(0,) + _shifted(dn.scatter_indices_batching_dims),
        scatter_dims_to_operand_dims=_shifted(dn.scatter_dims_to_operand_dims),
        index_vector_dim=dn.index_vector_dim + 1))


scatter.stacked = _scatter_stacked


def _scatter(op, args, ctx, dn):
    n = len(args) // 2
    inputs, indices, updates = args[:n], args[n], args[n + 1:]
    out = [x.copy() for x in inputs]
    x0, u0 = inputs[0], updates[0]
    idx = _index_batch(indices.astype(np.int64), dn.index_vector_dim)
    update_scatter_dims = [d for d in range(u0.ndim) if d not in dn.update_window_dims]
    window_operand = [d for d in range(x0.ndim) if d not in dn.inserted_window_dims
                      and d not in dn.input_batching_dims]
    window_shape = tuple(u0.shape[d] for d in dn.update_window_dims)
    scatter_shape = tuple(u0.shape[d] for d in update_scatter_dims)
    ns = len(scatter_shape)
    # per update element: the operand index (scatter dims first, then window dims)
    starts, grid = [], []
    in_bounds = np.ones(scatter_shape, bool)
    for d in range(x0.ndim):
        s = np.zeros(scatter_shape, np.int64)
        size = 1
        if d in dn.scatter_dims_to_operand_dims:
            s = s + idx[..., dn.scatter_dims_to_operand_dims.index(d)]
        elif d in dn.input_batching_dims:
            axis = _batch_axis(dn.scatter_indices_batching_dims[dn.input_batching_dims.index(d)], dn.index_vector_dim)
            view = [1] * ns
            view[axis] = scatter_shape[axis]
            s = s + np.arange(scatter_shape[axis]).reshape(view)
        if d in window_operand:
            size = window_shape[window_operand.index(d)]
        in_bounds &= (s >= 0) & (s <= x0.shape[d] - size)  # XLA skips a window not wholly inside
        starts.append(s)
    for d, s in enumerate(starts):
        part = s.reshape(scatter_shape + (1,) * len(window_shape))
        if d in window_operand:
            p = window_operand.index(d)
            view = [1] * (ns + len(window_shape))
            view[ns + p] = window_shape[p]
            part = part + np.arange(window_shape[p]).reshape(view)
        grid.append(np.broadcast_to(part, scatter_shape + window_shape))
    keep = np.broadcast_to(in_bounds.reshape(scatter_shape + (1,) * len(window_shape)), scatter_shape + window_shape)
    target = tuple(g[keep] for g in grid)
    perm = update_scatter_dims + list(dn.update_window_dims)
    ups = [np.transpose(u, perm)[keep] for u in updates]
    kind = combiner(op.regions[0]) if n == 1 else None
    if kind == "assign":
        out[0][target] = ups[0]  # duplicates: the last update in row-major order wins
    elif kind in _SCATTER_UFUNCS and out[0].dtype.kind in "fiucb":
        _SCATTER_UFUNCS[kind].at(out[0], target, ups[0])  # in update order, as the spec's schedule
    else:
        flat = np.ravel_multi_index(target, x0.shape) if x0.ndim else np.zeros(len(ups[0]), np.int64)
        apply_updates(region_fn(ctx, op.regions[0], op), [o.reshape(-1) for o in out], flat, ups)
    return tuple(out)


def apply_updates(body, views, flat, ups) -> None:
    """`views[:][flat[i]] = body(views[:][flat[i]], ups[:][i])` for every i in order, vectorised in
    rounds: each round applies at most one update per element (the earliest not yet applied)."""
    if not len(flat):
        return
    order = np.argsort(flat, kind="stable")
    sorted_flat = flat[order]
    first = np.r_[True, sorted_flat[1:] != sorted_flat[:-1]]
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(flat)), 0))
    rank = np.empty(len(flat), np.int64)
    rank[order] = np.arange(len(flat)) - group_start
    for r in range(int(rank.max()) + 1):
        sel = np.flatnonzero(rank == r)
        pos = flat[sel]
        res = body(*[v[pos] for v in views], *[u[sel] for u in ups])
        for v, val in zip(views, res):
            v[pos] = val
