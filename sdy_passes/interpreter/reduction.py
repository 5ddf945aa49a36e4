"""Evaluators of reductions and contractions (spec execute.md §4.4): reduce, reduce_window,
select_and_scatter, dot_general, convolution, sort, fft.

`fast` uses numpy's reductions and BLAS; `reference` folds sequentially in row-major order of
the reduced (contracting) indices, as the reference interpreter does: a Python loop over the
reduced extent only, numpy over everything else.
"""

from __future__ import annotations

import itertools

import numpy as np

from sdy_passes.interpreter import elementwise
from sdy_passes.interpreter._core import (
    LOW_FLOATS, contiguous, down, dtype_of, is_float, region_fn, up,
)
from sdy_passes.interpreter.movement import apply_updates, combiner, int_attr, ints, result_shape

_UFUNCS = {"stablehlo.add": (np.add, np.logical_or), "stablehlo.multiply": (np.multiply, np.logical_and),
           "stablehlo.maximum": (np.maximum, np.logical_or), "stablehlo.minimum": (np.minimum, np.logical_and),
           "stablehlo.and": (np.bitwise_and, np.logical_and), "stablehlo.or": (np.bitwise_or, np.logical_or),
           "stablehlo.xor": (np.bitwise_xor, np.logical_xor)}
_EXACT = ("stablehlo.maximum", "stablehlo.minimum", "stablehlo.and", "stablehlo.or", "stablehlo.xor")
_COMBINE = {"stablehlo.add": elementwise.add, "stablehlo.multiply": elementwise.multiply,
            "stablehlo.maximum": elementwise.maximum, "stablehlo.minimum": elementwise.minimum,
            "stablehlo.and": elementwise.and_, "stablehlo.or": elementwise.or_, "stablehlo.xor": elementwise.xor}


def _fold(op, ctx, body_name, inputs, inits, axes):
    """Reduces `inputs` over `axes` (a tuple) starting from `inits`; the result keeps the other
    axes in order."""
    keep = [d for d in range(inputs[0].ndim) if d not in axes]
    out_shape = tuple(inputs[0].shape[d] for d in keep)
    k = int(np.prod([inputs[0].shape[d] for d in axes], dtype=np.int64))
    n = len(inputs)
    name = body_name if n == 1 else None
    dt = inputs[0].dtype
    sequential = ctx.reference and name not in _EXACT and is_float(dt) or dt.kind == "c" and ctx.reference
    if name in _UFUNCS and not sequential and dt.kind != "V" or (name in _EXACT and dt.kind != "V"):
        f = _UFUNCS[name][1 if dt == np.bool_ else 0]
        x = up(inputs[0])
        r = f.reduce(x, axis=axes) if k else np.broadcast_to(up(inits[0]), out_shape)
        r = np.asarray(r, x.dtype).reshape(out_shape)
        return _COMBINE[name](op, [np.broadcast_to(inits[0], out_shape), down(r, dt)], ctx)
    if name in _UFUNCS and dt in LOW_FLOATS and not ctx.reference:
        # low floats: accumulate in float32, round once (XLA:CPU's reductions keep f32 partials)
        f = _UFUNCS[name][0]
        r = f.reduce(up(inputs[0]), axis=axes) if k else np.zeros(out_shape, np.float32)
        return (down(f(up(np.broadcast_to(inits[0], out_shape)), r), dt),)
    # sequential: acc = body(acc, x[k]) in row-major order of the reduced indices, each x[k] a
    # contiguous row (the reduced indices moved to the front)
    moved = [np.ascontiguousarray(np.moveaxis(x, axes, range(len(axes)))).reshape((k,) + out_shape)
             for x in inputs]
    acc = [np.array(np.broadcast_to(i, out_shape)) for i in inits]
    if name == "stablehlo.add" and dt.kind in "fc":
        for j in range(k):  # IEEE adds in place (the same roundings as acc = acc + x[j])
            np.add(acc[0], moved[0][j], out=acc[0])
        if ctx.reference and dt.kind == "f" and np.isnan(acc[0]).any():  # inf - inf: APFloat's +NaN
            made = np.isnan(acc[0]) & ~np.isnan(moved[0]).any(axis=0) & ~np.isnan(inits[0])
            acc[0][made] = np.nan
        return tuple(acc)
    if name in _COMBINE:
        combine = _COMBINE[name]
        for j in range(k):
            acc = combine(op, [acc[0], moved[0][j]], ctx)
        return tuple(acc)
    body = region_fn(ctx, op.regions[0], op)
    for j in range(k):
        acc = body(*acc, *[m[j] for m in moved])
    return tuple(np.broadcast_to(a, out_shape) for a in acc)


def reduce(op, args, ctx):
    n = len(args) // 2
    axes = tuple(sorted(ints(op, "dimensions")))
    return _fold(op, ctx, combiner(op.regions[0]), args[:n], args[n:], axes)


def _reduce_stacked(op, args, ctx):
    """Over shards stacked on a leading axis: the inits `(k,)` broadcast along the kept dims."""
    n = len(args) // 2
    axes = tuple(sorted(d + 1 for d in ints(op, "dimensions")))
    ones = (1,) * (args[0].ndim - 1 - len(axes))
    return _fold(op, ctx, combiner(op.regions[0]), args[:n], [i.reshape(i.shape[:1] + ones) for i in args[n:]], axes)


reduce.stacked = _reduce_stacked


def _window_view(x, init, op, window, strides, base_dil, win_dil, padding):
    """Padded (with `init`), dilated windows of `x`: shape (out..., window...)."""
    if any(d != 1 for d in base_dil):
        shape = [(s - 1) * d + 1 if s else 0 for s, d in zip(x.shape, base_dil)]
        full = np.full(shape, init, x.dtype)
        full[tuple(np.s_[::d] for d in base_dil)] = x
        x = full
    lo = [p[0] for p in padding]
    hi = [p[1] for p in padding]
    shape = [max(lo_, 0) + s + max(hi_, 0) for s, lo_, hi_ in zip(x.shape, lo, hi)]
    full = np.full(shape, init, x.dtype)
    full[tuple(np.s_[max(l_, 0):max(l_, 0) + s] for s, l_ in zip(x.shape, lo))] = x
    full = full[tuple(np.s_[max(-l_, 0):n - max(-h_, 0)] for n, l_, h_ in zip(shape, lo, hi))]
    span = [(w - 1) * d + 1 for w, d in zip(window, win_dil)]
    if any(f < s for f, s in zip(full.shape, span)):
        return np.zeros(tuple(0 for _ in window) + tuple(window), x.dtype)
    v = np.lib.stride_tricks.sliding_window_view(full, span)
    v = v[tuple(np.s_[::s] for s in strides) + tuple(np.s_[::d] for d in win_dil)]
    return v


def _window_attrs(op, rank):
    window = ints(op, "window_dimensions")
    strides = ints(op, "window_strides", (1,) * rank)
    base = ints(op, "base_dilations", (1,) * rank)
    wdil = ints(op, "window_dilations", (1,) * rank)
    pad = ints(op, "padding", (0,) * (2 * rank))
    return window, strides, base, wdil, [pad[2 * i:2 * i + 2] for i in range(rank)]


def reduce_window(op, args, ctx):
    return _reduce_window(op, args, ctx, 0)


def _reduce_window_stacked(op, args, ctx):
    """Over shards stacked on a leading axis: a window of 1 along it, inits `(k,)`."""
    return _reduce_window(op, args, ctx, 1)


reduce_window.stacked = _reduce_window_stacked


def _reduce_window(op, args, ctx, lead: int):
    n = len(args) // 2
    inputs, inits = args[:n], args[n:]
    rank = inputs[0].ndim
    window, strides, base, wdil, padding = _window_attrs(op, rank - lead)
    if lead:
        window, strides, base, wdil = ((1,) + tuple(a) for a in (window, strides, base, wdil))
        padding = [(0, 0)] + list(padding)
        inits = [i.reshape(i.shape + (1,) * (rank - 1)) for i in inits]
    views = [_window_view(x, i.reshape(i.shape if lead else ()), op, window, strides, base, wdil, padding)
             for x, i in zip(inputs, inits)]
    axes = tuple(range(rank, 2 * rank))
    out = _fold(op, ctx, combiner(op.regions[0]), views, inits, axes)
    return tuple(contiguous(o).reshape(inputs[0].shape[:lead] + result_shape(op, i)) for i, o in enumerate(out))


def select_and_scatter(op, args, ctx):
    x, source, init = args
    rank = x.ndim
    window = ints(op, "window_dimensions")
    strides = ints(op, "window_strides", (1,) * rank)
    pad = ints(op, "padding", (0,) * (2 * rank))
    padding = [pad[2 * i:2 * i + 2] for i in range(rank)]
    # windows of the operand's positions (padding positions marked -1, never selected)
    pos = np.arange(x.size, dtype=np.int64).reshape(x.shape)
    win_pos = _window_view(pos, -1, op, window, strides, (1,) * rank, (1,) * rank, padding)
    win_val = _window_view(x, 0, op, window, strides, (1,) * rank, (1,) * rank, padding)
    out_shape = win_pos.shape[:rank]
    k = int(np.prod(window))
    vals = win_val.reshape(out_shape + (k,))
    poss = win_pos.reshape(out_shape + (k,))
    select = region_fn(ctx, op.regions[0], op)
    best_v, best_p = vals[..., 0], poss[..., 0]
    for j in range(1, k):  # the first element that wins the pairwise selection, row-major
        valid = poss[..., j] >= 0
        keep = np.asarray(select(best_v, vals[..., j])[0], bool)
        take = valid & ((best_p < 0) | ~keep)
        best_v = np.where(take, vals[..., j], best_v)
        best_p = np.where(take, poss[..., j], best_p)
    out = np.broadcast_to(init, x.shape).copy().reshape(-1)
    targets, updates = best_p.reshape(-1), source.reshape(-1)
    ok = targets >= 0
    targets, updates = targets[ok], updates[ok]
    if combiner(op.regions[1]) == "stablehlo.add" and out.dtype.kind in "fiu":
        np.add.at(out, targets, updates)
    else:
        apply_updates(region_fn(ctx, op.regions[1], op), [out], targets, [updates])
    return (out.reshape(x.shape),)


# -- contractions --------------------------------------------------------------------------------

def _compute_dtype(dt, ctx):
    if dt in LOW_FLOATS:
        return np.dtype(np.float64 if ctx.reference else np.float32)
    return dt


def _matmul(op, ctx, L, R, dt):
    """(B, M, K) x (B, K, N) -> (B, M, N) in `dt`'s arithmetic."""
    ct = _compute_dtype(dt, ctx)
    if dt == np.bool_:
        return (np.matmul(L.astype(np.int64), R.astype(np.int64)) != 0)
    L = up(L).astype(ct) if L.dtype != ct else L
    R = up(R).astype(ct) if R.dtype != ct else R
    if not ctx.reference or not (is_float(dt) or dt.kind == "c"):
        return down(np.matmul(L, R), dt)
    # sequential over k, each product rounded then added (no FMA), from +0; in blocks of rows
    # that stay in cache (a Python step per k and block, numpy over the block)
    B, M, K = L.shape
    N = R.shape[2]
    out = np.empty((B, M, N), ct)
    rows = max(1, (1 << 15) // max(N, 1))
    low = dt in LOW_FLOATS
    for b in range(B):
        for m0 in range(0, M, rows):
            lt = np.ascontiguousarray(L[b, m0:m0 + rows].T)  # (K, rows)
            acc = np.zeros((lt.shape[1], N), ct)
            prod = np.empty_like(acc)
            for k in range(K):
                np.multiply(lt[k][:, None], R[b, k][None, :], out=prod)
                if low:
                    acc = down(acc + down(prod, dt).astype(ct), dt).astype(ct)
                else:
                    np.add(acc, prod, out=acc)
            out[b, m0:m0 + rows] = acc
    return down(out, dt)


def dot_general(op, args, ctx):
    lhs, rhs = args
    dn = op.properties.get("dot_dimension_numbers")
    lb, rb = dn.lhs_batching_dimensions, dn.rhs_batching_dimensions
    lc, rc = dn.lhs_contracting_dimensions, dn.rhs_contracting_dimensions
    return (_dot(op, ctx, lhs, rhs, lb, rb, lc, rc),)


def _dot_general_stacked(op, args, ctx):
    """`dot_general` of operands stacked on a new leading axis (one shard per row, as the
    lockstep engine stacks them): that axis is one more batch dim."""
    lhs, rhs = args
    dn = op.properties.get("dot_dimension_numbers")
    lead = (0,)
    return (_dot(op, ctx, lhs, rhs, lead + _shifted(dn.lhs_batching_dimensions),
                 lead + _shifted(dn.rhs_batching_dimensions), _shifted(dn.lhs_contracting_dimensions),
                 _shifted(dn.rhs_contracting_dimensions), stacked=lhs.shape[0]),)


def _shifted(dims) -> tuple:
    return tuple(d + 1 for d in dims)


dot_general.stacked = _dot_general_stacked


def dot(op, args, ctx):
    lhs, rhs = args
    return (_dot(op, ctx, lhs, rhs, (), (), (lhs.ndim - 1,), (0,)),)


def _dot(op, ctx, lhs, rhs, lb, rb, lc, rc, stacked=None):
    lf = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
    rf = [d for d in range(rhs.ndim) if d not in rb and d not in rc]
    shape_b = [lhs.shape[d] for d in lb]
    m = [lhs.shape[d] for d in lf]
    n = [rhs.shape[d] for d in rf]
    k = int(np.prod([lhs.shape[d] for d in lc], dtype=np.int64))
    B, M, N = (int(np.prod(s, dtype=np.int64)) for s in (shape_b, m, n))
    L = np.transpose(lhs, [*lb, *lf, *lc]).reshape(B, M, k)
    R = np.transpose(rhs, [*rb, *rc, *rf]).reshape(B, k, N)
    dt = dtype_of(op.result.type, op)
    lead = () if stacked is None else (stacked,)
    return _matmul(op, ctx, L, R, dt).reshape(lead + tuple(result_shape(op)))


def convolution(op, args, ctx):
    lhs, rhs = args
    dn = op.properties["dimension_numbers"]
    ns = len(dn.input_spatial_dimensions)
    strides = ints(op, "window_strides", (1,) * ns)
    pad = ints(op, "padding", (0,) * (2 * ns))
    lhs_dil = ints(op, "lhs_dilation", (1,) * ns)
    rhs_dil = ints(op, "rhs_dilation", (1,) * ns)
    rev = op.properties.get("window_reversal")
    reversal = tuple(bool(v) for v in rev.values) if rev is not None else (False,) * ns
    G = int_attr(op, "feature_group_count", 1)
    BG = int_attr(op, "batch_group_count", 1)
    dt = dtype_of(op.result.type, op)
    ct = _compute_dtype(dt, ctx) if dt != np.bool_ else np.dtype(np.int64)
    x = np.transpose(lhs, (dn.input_batch_dimension, dn.input_feature_dimension, *dn.input_spatial_dimensions))
    w = np.transpose(rhs, (dn.kernel_output_feature_dimension, dn.kernel_input_feature_dimension,
                           *dn.kernel_spatial_dimensions))
    x, w = up(x).astype(ct), up(w).astype(ct)
    flip = tuple(2 + i for i, r in enumerate(reversal) if r)
    if flip:
        w = np.flip(w, flip)
    if any(d != 1 for d in rhs_dil):
        shape = w.shape[:2] + tuple((s - 1) * d + 1 if s else 0 for s, d in zip(w.shape[2:], rhs_dil))
        full = np.zeros(shape, ct)
        full[(np.s_[:], np.s_[:]) + tuple(np.s_[::d] for d in rhs_dil)] = w
        w = full
    N, C = x.shape[:2]
    O, Cg = w.shape[:2]
    ksp = w.shape[2:]
    padding = [(0, 0), (0, 0)] + [tuple(pad[2 * i:2 * i + 2]) for i in range(ns)]
    win = _window_view(x, np.zeros((), ct), op, (1, 1) + ksp, (1, 1) + tuple(strides), (1, 1) + tuple(lhs_dil),
                       (1,) * (ns + 2), padding)
    # win: (N, C, out..., 1, 1, k...)
    win = win.reshape(win.shape[:2 + ns] + ksp)
    out_sp = win.shape[2:2 + ns]
    Nb = N // BG
    Og = O // G // BG if BG > 1 else O // G
    if BG > 1:  # batch groups: lhs batch split in BG chunks, each with O/BG output features
        win = win.reshape((BG, Nb) + win.shape[1:])
        wg = w.reshape((BG, O // BG, Cg) + ksp)
        sub = "abcdefgh"[:ns]
        kk = "pqrstuvw"[:ns]
        out = _contract(ctx, f"gnc{sub}{kk},goc{kk}->ngo{sub}", win, wg, dt, ct, ksp, reversal)
        out = out.reshape((Nb, O) + out_sp)
    else:
        win = win.reshape((N, G, Cg) + out_sp + ksp)
        wg = w.reshape((G, Og, Cg) + ksp)
        sub = "abcdefgh"[:ns]
        kk = "pqrstuvw"[:ns]
        out = _contract(ctx, f"ngc{sub}{kk},goc{kk}->ngo{sub}", win, wg, dt, ct, ksp, reversal)
        out = out.reshape((N, O) + out_sp)
    inv = np.argsort((dn.output_batch_dimension, dn.output_feature_dimension, *dn.output_spatial_dimensions))
    return (contiguous(np.transpose(out, inv)),)


def _contract(ctx, spec, a, b, dt, ct, ksp, reversal):
    """`einsum(spec)` of windows `a` (.., c, out.., k..) and kernel `b` (.., c, k..); in reference
    mode sequentially as the reference interpreter's per-window `dot_general` over (spatial,
    feature): kernel positions row-major (reversed dims from the window's end), the feature
    minor, each product rounded then added, from +0."""
    if dt == np.bool_:
        return np.einsum(spec, a, b) != 0
    if not ctx.reference or not (is_float(dt) or dt.kind == "c"):
        return down(np.einsum(spec, a, b, optimize=True), dt)
    ins, out = spec.split("->")
    sa, sb = ins.split(",")
    ns = len(ksp)
    pa, pb = sa[:2] + sa[3:3 + ns], sb[:2]  # without the feature and window letters
    term_spec = f"{pa},{pb}->{out}"
    acc = None
    ranges = [range(n - 1, -1, -1) if r else range(n) for n, r in zip(ksp, reversal)]
    for kpos in itertools.product(*ranges):
        for c in range(a.shape[2]):
            term = np.einsum(term_spec, a[(np.s_[:], np.s_[:], c) + (np.s_[:],) * ns + kpos],
                             b[(np.s_[:], np.s_[:], c) + kpos])
            if dt in LOW_FLOATS:
                term = down(term, dt).astype(ct)
                acc = term if acc is None else down(acc + term, dt).astype(ct)
            else:
                acc = term if acc is None else acc + term
    if acc is None:
        return np.zeros(tuple(1 for _ in out), dt)
    return down(acc + np.zeros((), ct), dt)


# -- sort and fft --------------------------------------------------------------------------------

def _simple_key(region, num):
    """For a comparator `compare DIR, %arg0, %arg1[, TYPE]` then return: (direction, type)."""
    block = region.blocks[0]
    ops = block.ops
    a = block.arguments
    if len(ops) == 2 and ops[0].name == "stablehlo.compare" and ops[0].operands == (a[0], a[1]) \
            and ops[1].operands == (ops[0].results[0],):
        ct = ops[0].properties.get("compare_type")
        return ops[0].properties["comparison_direction"].value, ct.value if ct is not None else None
    return None


def sort(op, args, ctx):
    return _sort(op, args, ctx, 0)


def _sort_stacked(op, args, ctx):
    return _sort(op, args, ctx, 1)


sort.stacked = _sort_stacked


def _sort(op, args, ctx, lead: int):
    dim = int_attr(op, "dimension", -1)
    if dim < 0:
        dim += args[0].ndim - lead
    dim += lead
    moved = [np.moveaxis(a, dim, -1) for a in args]
    n = moved[0].shape[-1]
    simple = _simple_key(op.regions[0], len(args))
    key = moved[0]
    if simple is not None and simple[0] in ("LT", "GT") and (
            simple[1] == "TOTALORDER" or not is_float(key.dtype) or not np.isnan(up(key)).any()) \
            and key.dtype.kind != "c":
        k = elementwise._total_order_key(key) if is_float(key.dtype) else up(key)
        if simple[1] == "UNSIGNED":
            k = elementwise._unsigned(key, key.dtype)
        if simple[0] == "GT":  # descending, stable: sort the negated order
            order = np.argsort(_descending(k), axis=-1, kind="stable")
        else:
            order = np.argsort(k, axis=-1, kind="stable")
    else:
        order = _comparator_order(ctx, op, moved, n)
    return tuple(np.moveaxis(np.take_along_axis(m, order, axis=-1), -1, dim) for m in moved)


def _descending(k):
    if k.dtype.kind == "u":
        return np.iinfo(k.dtype).max - k
    if k.dtype == np.bool_:
        return ~k
    return -k.astype(np.float64) if k.dtype.kind == "f" else ~k


def _comparator_order(ctx, op, moved, n):
    """A stable merge sort driven by the comparator, vectorised: at each level every element
    finds its place in the merged pair of runs by a binary search in the other run (its index in
    its own run + the elements of the other run that go before it), so a level is log2(width)
    comparator calls over all rows and elements at once (O(log^2 n) calls, O(n) memory)."""
    body = region_fn(ctx, op.regions[0], op)
    rows = moved[0].shape[:-1]
    flat = [m.reshape(-1, n) for m in moved]
    r = np.arange(flat[0].shape[0])[:, None]

    def less(i, j):  # comparator(x[i], x[j]) for index arrays of shape (rows, n)
        args = []
        for m in flat:
            args += [m[r, i], m[r, j]]
        return np.asarray(body(*args)[0], bool)

    perm = np.broadcast_to(np.arange(n), (flat[0].shape[0], n)).copy()
    p = np.arange(n)
    width = 1
    while width < n:
        start = (p // (2 * width)) * (2 * width)
        in_a = p - start < width
        a_hi = np.minimum(start + width, n)
        own_lo = np.where(in_a, start, a_hi)
        lo = np.broadcast_to(np.where(in_a, a_hi, start), perm.shape).copy()
        hi = np.broadcast_to(np.where(in_a, np.minimum(start + 2 * width, n), a_hi), perm.shape).copy()
        other_lo = lo.copy()
        while (lo < hi).any():
            mid = np.minimum((lo + hi) // 2, n - 1)
            x = np.take_along_axis(perm, mid, axis=1)
            # an A element goes after the B elements less than it; a B element after the A
            # elements not greater than it (stability)
            before = np.where(in_a, less(x, perm), ~less(perm, x)) & (lo < hi)
            lo = np.where(before, mid + 1, lo)
            hi = np.where(before | (lo >= hi), hi, mid)
        new = np.empty_like(perm)
        np.put_along_axis(new, start + (p - own_lo) + (lo - other_lo), perm, axis=1)
        perm = new
        width *= 2
    return perm.reshape(rows + (n,))


def fft(op, args, ctx):
    (x,) = args
    kind = op.properties["fft_type"].value
    length = ints(op, "fft_length")
    axes = tuple(range(x.ndim - len(length), x.ndim))
    dt = dtype_of(op.result.type, op)
    if kind == "FFT":
        r = np.fft.fftn(x.astype(np.complex128), length, axes)
    elif kind == "IFFT":
        r = np.fft.ifftn(x.astype(np.complex128), length, axes)
    elif kind == "RFFT":
        r = np.fft.rfftn(x.astype(np.float64), length, axes)
    else:
        r = np.fft.irfftn(x.astype(np.complex128), length, axes)
    return (r.astype(dt),)
