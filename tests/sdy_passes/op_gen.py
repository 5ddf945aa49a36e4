"""Random StableHLO ops, one family at a time, for the op sharding rule differential test.

`case(family, rng)` returns a generic-form module: one func whose arguments feed one op of the
family with random shapes and attributes (valid for jaxlib's verifier in almost all draws; an
input jaxlib refuses is no verdict). Sizes stay small; shapes favour 1s and shared divisors, the
interesting cases for factors.
"""

from __future__ import annotations

import math
import random
import re

FAMILIES = ("elementwise", "select_clamp", "broadcast_in_dim", "reshape", "transpose",
            "bitcast_convert", "concatenate", "pad_slice", "dynamic_slice", "reverse_sort",
            "dot_general", "dot", "convolution", "reduce", "reduce_window", "gather", "scatter",
            "fft", "cholesky_triangular_solve", "batch_norm_rng", "collectives", "custom_call")

UNARY_F = ("abs", "cbrt", "ceil", "cosine", "exponential", "exponential_minus_one", "floor", "log",
           "log_plus_one", "logistic", "negate", "round_nearest_even", "round_nearest_afz", "rsqrt",
           "sign", "sine", "sqrt", "tan", "tanh")
BINARY_F = ("add", "atan2", "divide", "maximum", "minimum", "multiply", "power", "remainder", "subtract")
UNARY_I = ("not", "popcnt", "count_leading_zeros")
BINARY_I = ("and", "or", "xor", "shift_left", "shift_right_arithmetic", "shift_right_logical")


def t(shape, dtype="f32"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


def _dim(rng):
    return rng.choice((1, 1, 2, 3, 4, 6, 8, 12, 16))


def _shape(rng, lo=0, hi=4):
    return [_dim(rng) for _ in range(rng.randint(lo, hi))]


def _arr(values):
    return "array<i64" + (": " + ", ".join(map(str, values)) if values else "") + ">"


def _list(values):
    return "[" + ", ".join(map(str, values)) + "]"


class _Func:
    """Collects arguments and ops; `text()` is the module."""

    def __init__(self):
        self.args: list[str] = []
        self.lines: list[str] = []
        self.n = 0

    def arg(self, type_):
        self.args.append(type_)
        return f"%arg{len(self.args) - 1}"

    def op(self, name, operands, results, props="", region="", attrs=""):
        res = f"%{self.n}" + (f":{len(results)}" if len(results) > 1 else "")
        value = f"%{self.n}"
        self.n += 1
        ins = ", ".join(v for v, _ in operands)
        in_types = ", ".join(ty for _, ty in operands)
        out_types = results[0] if len(results) == 1 else "(" + ", ".join(results) + ")"
        prefix = f"{res} = " if results else ""
        props = f" <{{{props}}}>" if props else ""
        attrs = f" {{{attrs}}}" if attrs else ""
        self.lines.append(f'    {prefix}"{name}"({ins}){props}{region}{attrs} : ({in_types}) -> {out_types if results else "()"}')
        return [(value if len(results) == 1 else f"{value}#{i}", ty) for i, ty in enumerate(results)]

    def text(self, returned):
        rets = ", ".join(v for v, _ in returned)
        types = ", ".join(ty for _, ty in returned)
        sig = ", ".join(self.args)
        res = types if len(returned) == 1 else f"({types})"
        args = "".join(f"%arg{i}: {ty}, " for i, ty in enumerate(self.args))[:-2]
        body = "\n".join(self.lines)
        return ('"builtin.module"() ({\n  "func.func"() <{function_type = (' + sig + ") -> " + res
                + ', sym_name = "main"}> ({\n  ^bb0(' + args + "):\n" + body
                + f'\n    "func.return"({rets}) : ({types}) -> ()\n  }}) : () -> ()\n}}) : () -> ()\n')


def _reducer(dtypes, op="stablehlo.add", base=0):
    """A region `(a0.., b0..) -> op(ai, bi)` over scalars, for reduce-like ops."""
    n = len(dtypes)
    args = ", ".join(f"%r{i}: tensor<{d}>" for i, d in enumerate(dtypes * 2))
    lines = [f"    ^bb0({args}):"]
    outs = []
    for i, d in enumerate(dtypes):
        lines.append(f'      %s{i} = "{op}"(%r{i}, %r{i + n}) : (tensor<{d}>, tensor<{d}>) -> tensor<{d}>')
        outs.append(f"%s{i}")
    lines.append(f'      "stablehlo.return"({", ".join(outs)}) : ({", ".join(f"tensor<{d}>" for d in dtypes)}) -> ()')
    return " ({\n" + "\n".join(lines) + "\n    })"


def case(family: str, rng: random.Random) -> str:
    f = _Func()
    return f.text(globals()[f"_{family}"](f, rng))


def _elementwise(f, rng):
    shape = _shape(rng)
    kind = rng.randrange(7)
    if kind == 0:
        x = f.arg(t(shape))
        return f.op(f"stablehlo.{rng.choice(UNARY_F)}", [(x, t(shape))], [t(shape)])
    if kind == 1:
        x, y = f.arg(t(shape)), f.arg(t(shape))
        return f.op(f"stablehlo.{rng.choice(BINARY_F)}", [(x, t(shape)), (y, t(shape))], [t(shape)])
    if kind == 2:
        x = f.arg(t(shape, "i32"))
        return f.op(f"stablehlo.{rng.choice(UNARY_I)}", [(x, t(shape, "i32"))], [t(shape, "i32")])
    if kind == 3:
        x, y = f.arg(t(shape, "i32")), f.arg(t(shape, "i32"))
        return f.op(f"stablehlo.{rng.choice(BINARY_I)}", [(x, t(shape, "i32")), (y, t(shape, "i32"))],
                    [t(shape, "i32")])
    if kind == 4:
        x, y = f.arg(t(shape)), f.arg(t(shape))
        return f.op("stablehlo.compare", [(x, t(shape)), (y, t(shape))], [t(shape, "i1")],
                    "comparison_direction = #stablehlo<comparison_direction LT>")
    if kind == 5:
        x = f.arg(t(shape))
        if rng.random() < 0.5:
            return f.op("stablehlo.convert", [(x, t(shape))], [t(shape, "i32")])
        dims = ", ".join("{}" for _ in shape)
        return f.op("sdy.sharding_constraint", [(x, t(shape))], [t(shape)],
                    f'sharding = #sdy.sharding<mesh<["a"=2]>, [{dims}]>')
    x = f.arg(t(shape))
    return f.op("stablehlo.reduce_precision", [(x, t(shape))], [t(shape)],
                "exponent_bits = 5 : i32, mantissa_bits = 10 : i32")


def _select_clamp(f, rng):
    shape = _shape(rng)
    if rng.random() < 0.5:
        pshape = [] if rng.random() < 0.5 else shape
        p, x, y = f.arg(t(pshape, "i1")), f.arg(t(shape)), f.arg(t(shape))
        return f.op("stablehlo.select", [(p, t(pshape, "i1")), (x, t(shape)), (y, t(shape))], [t(shape)])
    lo = [] if rng.random() < 0.5 else shape
    hi = [] if rng.random() < 0.5 else shape
    a, x, b = f.arg(t(lo)), f.arg(t(shape)), f.arg(t(hi))
    return f.op("stablehlo.clamp", [(a, t(lo)), (x, t(shape)), (b, t(hi))], [t(shape)])


def _broadcast_in_dim(f, rng):
    out = _shape(rng, 0, 5)
    dims = sorted(rng.sample(range(len(out)), rng.randint(0, len(out))))
    if rng.random() < 0.5:
        rng.shuffle(dims)
    in_shape = [out[d] if rng.random() < 0.7 else 1 for d in dims]
    x = f.arg(t(in_shape))
    return f.op("stablehlo.broadcast_in_dim", [(x, t(in_shape))], [t(out)],
                f"broadcast_dimensions = {_arr(dims)}")


def _factor_shape(rng, factors, rank):
    shape = [1] * rank
    for p in factors:
        shape[rng.randrange(rank)] *= p
    return shape


def _reshape(f, rng):
    factors = [rng.choice((2, 2, 3, 5)) for _ in range(rng.randint(0, 5))]
    if rng.random() < 0.1:
        factors.append(0)
    in_shape = _factor_shape(rng, factors, rng.randint(1, 4))
    out_shape = _factor_shape(rng, factors, rng.randint(1, 4))
    if 0 not in factors and rng.random() < 0.2:
        in_shape = [] if math.prod(in_shape) == 1 else in_shape
    x = f.arg(t(in_shape))
    return f.op("stablehlo.reshape", [(x, t(in_shape))], [t(out_shape)])


def _transpose(f, rng):
    shape = _shape(rng, 1, 5)
    perm = list(range(len(shape)))
    rng.shuffle(perm)
    x = f.arg(t(shape))
    return f.op("stablehlo.transpose", [(x, t(shape))], [t([shape[p] for p in perm])],
                f"permutation = {_arr(perm)}")


def _bitcast_convert(f, rng):
    shape = _shape(rng, 0, 3)
    choice = rng.randrange(3)
    if choice == 0:
        x = f.arg(t(shape + [2], "ui32"))
        return f.op("stablehlo.bitcast_convert", [(x, t(shape + [2], "ui32"))], [t(shape, "ui64")])
    if choice == 1:
        x = f.arg(t(shape, "ui64"))
        return f.op("stablehlo.bitcast_convert", [(x, t(shape, "ui64"))], [t(shape + [4], "ui16")])
    x = f.arg(t(shape, "f32"))
    return f.op("stablehlo.bitcast_convert", [(x, t(shape, "f32"))], [t(shape, "i32")])


def _concatenate(f, rng):
    shape = _shape(rng, 1, 4)
    dim = rng.randrange(len(shape))
    n = rng.randint(1, 3)
    operands = []
    base = f.arg(t(shape))
    for _ in range(n):
        how = rng.randrange(3)
        if how == 0:
            operands.append((base, t(shape)))
        elif how == 1:
            s = list(shape)
            s[dim] = rng.randint(1, 5)
            operands.append((f.arg(t(s)), t(s)))
        else:
            size = rng.randint(1, shape[dim])
            start = rng.randint(0, shape[dim] - size)
            s = list(shape)
            s[dim] = size
            starts = [start if d == dim else 0 for d in range(len(shape))]
            limits = [start + size if d == dim else shape[d] for d in range(len(shape))]
            operands += f.op("stablehlo.slice", [(base, t(shape))], [t(s)],
                             f"limit_indices = {_arr(limits)}, start_indices = {_arr(starts)}, "
                             f"strides = {_arr([1] * len(shape))}")
    out = list(shape)
    out[dim] = sum(int(ty[7:-4].split("x")[dim]) for _, ty in operands)
    return f.op("stablehlo.concatenate", operands, [t(out)], f"dimension = {dim} : i64")


def _pad_slice(f, rng):
    shape = _shape(rng, 0, 4)
    x = f.arg(t(shape))
    if rng.random() < 0.5:
        lo = [rng.choice((0, 0, 1, 2, -1)) if d > 1 else 0 for d in shape]
        hi = [rng.choice((0, 0, 1, 3)) for _ in shape]
        out = [d + a + b for d, a, b in zip(shape, lo, hi)]
        v = f.arg(t([]))
        return f.op("stablehlo.pad", [(x, t(shape)), (v, t([]))], [t(out)],
                    f"edge_padding_high = {_arr(hi)}, edge_padding_low = {_arr(lo)}, "
                    f"interior_padding = {_arr([0] * len(shape))}")
    starts = [rng.randint(0, d - 1) for d in shape]
    limits = [rng.randint(s + 1, d) for s, d in zip(starts, shape)]
    strides = [rng.choice((1, 1, 2)) for _ in shape]
    out = [-(-(l - s) // st) for s, l, st in zip(starts, limits, strides)]
    return f.op("stablehlo.slice", [(x, t(shape))], [t(out)],
                f"limit_indices = {_arr(limits)}, start_indices = {_arr(starts)}, strides = {_arr(strides)}")


def _dynamic_slice(f, rng):
    shape = _shape(rng, 1, 4)
    x = f.arg(t(shape))
    sizes = [rng.randint(1, d) if rng.random() < 0.5 else d for d in shape]
    if rng.random() < 0.5:
        indices = [f.arg(t([], "i32")) for _ in shape]
    else:
        indices = [f.op("stablehlo.constant", [], [t([], "i32")], "value = dense<0> : tensor<i32>")[0][0]
                   for _ in shape]
    index_operands = [(i, t([], "i32")) for i in indices]
    if rng.random() < 0.5:
        return f.op("stablehlo.dynamic_slice", [(x, t(shape)), *index_operands], [t(sizes)],
                    f"slice_sizes = {_arr(sizes)}")
    u = f.arg(t(sizes))
    return f.op("stablehlo.dynamic_update_slice", [(x, t(shape)), (u, t(sizes)), *index_operands], [t(shape)])


def _reverse_sort(f, rng):
    shape = _shape(rng, 1, 4)
    if rng.random() < 0.5:
        x = f.arg(t(shape))
        dims = sorted(rng.sample(range(len(shape)), rng.randint(0, len(shape))))
        return f.op("stablehlo.reverse", [(x, t(shape))], [t(shape)], f"dimensions = {_arr(dims)}")
    n = rng.randint(1, 2)
    xs = [(f.arg(t(shape)), t(shape)) for _ in range(n)]
    args = ", ".join(f"%c{i}: tensor<f32>" for i in range(2 * n))
    region = (f' ({{\n    ^bb0({args}):\n      %cmp = "stablehlo.compare"(%c0, %c1) <{{comparison_direction = '
              f'#stablehlo<comparison_direction GT>}}> : (tensor<f32>, tensor<f32>) -> tensor<i1>\n'
              f'      "stablehlo.return"(%cmp) : (tensor<i1>) -> ()\n    }})')
    return f.op("stablehlo.sort", xs, [t(shape)] * n, f"dimension = {rng.randrange(len(shape))} : i64", region)


def _dot_general(f, rng):
    nb, nc = rng.randint(0, 2), rng.randint(0, 2)
    batch = [_dim(rng) for _ in range(nb)]
    contract = [_dim(rng) for _ in range(nc)]
    lfree, rfree = _shape(rng, 0, 2), _shape(rng, 0, 2)
    lhs = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("f", i) for i in range(len(lfree))]
    rhs = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("f", i) for i in range(len(rfree))]
    rng.shuffle(lhs)
    rng.shuffle(rhs)

    def size(kind, i, free):
        return batch[i] if kind == "b" else contract[i] if kind == "c" else free[i]

    lshape = [size(k, i, lfree) for k, i in lhs]
    rshape = [size(k, i, rfree) for k, i in rhs]
    out = batch + [size(k, i, lfree) for k, i in lhs if k == "f"] + [size(k, i, rfree) for k, i in rhs if k == "f"]
    dn = (f"lhs_batching_dimensions = {_list([lhs.index(('b', i)) for i in range(nb)])}, "
          f"rhs_batching_dimensions = {_list([rhs.index(('b', i)) for i in range(nb)])}, "
          f"lhs_contracting_dimensions = {_list([lhs.index(('c', i)) for i in range(nc)])}, "
          f"rhs_contracting_dimensions = {_list([rhs.index(('c', i)) for i in range(nc)])}")
    x, y = f.arg(t(lshape)), f.arg(t(rshape))
    return f.op("stablehlo.dot_general", [(x, t(lshape)), (y, t(rshape))], [t(out)],
                f"dot_dimension_numbers = #stablehlo.dot<{dn}>")


def _dot(f, rng):
    m, k, n = _dim(rng), _dim(rng), _dim(rng)
    lshape = [m, k] if rng.random() < 0.7 else [k]
    rshape = [k, n] if rng.random() < 0.7 else [k]
    out = lshape[:-1] + rshape[1:]
    x, y = f.arg(t(lshape)), f.arg(t(rshape))
    return f.op("stablehlo.dot", [(x, t(lshape)), (y, t(rshape))], [t(out)])


def _convolution(f, rng):
    ns = rng.randint(1, 2)
    groups = rng.choice((1, 1, 2, 4))
    batch_groups = 1
    if groups > 1 and rng.random() < 0.5:
        batch_groups, groups = groups, 1
    batch = rng.choice((1, 2, 4)) * batch_groups
    in_feat = rng.choice((1, 2, 3)) * groups
    out_feat = rng.choice((1, 2, 3)) * groups * batch_groups
    spatial = [rng.choice((1, 3, 4, 8, 9)) for _ in range(ns)]
    window = [rng.randint(1, s) for s in spatial]
    strides = [rng.choice((1, 2, 3)) for _ in range(ns)]
    pads = [(rng.choice((0, 0, 1)), rng.choice((0, 0, 1))) for _ in range(ns)]
    out_sp = [(s + lo + hi - w) // st + 1 for s, w, st, (lo, hi) in zip(spatial, window, strides, pads)]
    lhs_layout = ["b", "f"] + [str(i) for i in range(ns)]
    rhs_layout = ["i", "o"] + [str(i) for i in range(ns)]
    out_layout = ["b", "f"] + [str(i) for i in range(ns)]
    for layout in (lhs_layout, rhs_layout, out_layout):
        rng.shuffle(layout)

    def shape(layout, sizes):
        return [sizes[c] if c in sizes else sizes["s"][int(c)] for c in layout]

    lshape = shape(lhs_layout, {"b": batch, "f": in_feat, "s": spatial})
    rshape = shape(rhs_layout, {"i": in_feat // groups, "o": out_feat, "s": window})
    oshape = shape(out_layout, {"b": batch // batch_groups, "f": out_feat, "s": out_sp})
    dn = f"[{', '.join(lhs_layout)}]x[{', '.join(rhs_layout)}]->[{', '.join(out_layout)}]"
    x, y = f.arg(t(lshape)), f.arg(t(rshape))
    pad_text = "[" + ", ".join(f"[{lo}, {hi}]" for lo, hi in pads) + "]"
    return f.op("stablehlo.convolution", [(x, t(lshape)), (y, t(rshape))], [t(oshape)],
                f"batch_group_count = {batch_groups} : i64, dimension_numbers = #stablehlo.conv<{dn}>, "
                f"feature_group_count = {groups} : i64, padding = dense<{pad_text}> : tensor<{ns}x2xi64>, "
                f"window_strides = {_arr(strides)}")


def _reduce(f, rng):
    shape = _shape(rng, 1, 4)
    dims = sorted(rng.sample(range(len(shape)), rng.randint(0, len(shape))))
    n = rng.randint(1, 2)
    dtypes = ["f32", "i32"][:n]
    xs = [(f.arg(t(shape, d)), t(shape, d)) for d in dtypes]
    inits = [(f.arg(t([], d)), t([], d)) for d in dtypes]
    out = [s for i, s in enumerate(shape) if i not in dims]
    return f.op("stablehlo.reduce", xs + inits, [t(out, d) for d in dtypes],
                f"dimensions = {_arr(dims)}", _reducer(dtypes))


def _window(rng, shape):
    window = [rng.choice((1, 1, 2, 3)) if d >= 3 else 1 for d in shape]
    strides = [rng.choice((1, 1, 2)) for _ in shape]
    pads = [(rng.choice((0, 0, 1)), rng.choice((0, 0, 1))) for _ in shape]
    out = [(d + lo + hi - w) // s + 1 for d, w, s, (lo, hi) in zip(shape, window, strides, pads)]
    return window, strides, pads, out


def _reduce_window(f, rng):
    shape = [rng.choice((1, 3, 4, 8)) for _ in range(rng.randint(1, 3))]
    window, strides, pads, out = _window(rng, shape)
    x, init = f.arg(t(shape)), f.arg(t([]))
    pad_text = "[" + ", ".join(f"[{lo}, {hi}]" for lo, hi in pads) + "]"
    props = f"padding = dense<{pad_text}> : tensor<{len(shape)}x2xi64>, window_dimensions = {_arr(window)}"
    if rng.random() < 0.7:
        props += f", window_strides = {_arr(strides)}"
    else:
        out = [(d + lo + hi - w) + 1 for d, w, (lo, hi) in zip(shape, window, pads)]
    if rng.random() < 0.5:
        return f.op("stablehlo.reduce_window", [(x, t(shape)), (init, t([]))], [t(out)], props,
                    _reducer(["f32"], "stablehlo.maximum"))
    # select_and_scatter: source has the windowed shape
    source = f.arg(t(out))
    args = "%q0: tensor<f32>, %q1: tensor<f32>"
    select = (f' ({{\n    ^bb0({args}):\n      %g = "stablehlo.compare"(%q0, %q1) <{{comparison_direction = '
              f'#stablehlo<comparison_direction GE>}}> : (tensor<f32>, tensor<f32>) -> tensor<i1>\n'
              f'      "stablehlo.return"(%g) : (tensor<i1>) -> ()\n    }}, {{\n    ^bb0({args}):\n'
              f'      %h = "stablehlo.add"(%q0, %q1) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n'
              f'      "stablehlo.return"(%h) : (tensor<f32>) -> ()\n    }})')
    return f.op("stablehlo.select_and_scatter", [(x, t(shape)), (source, t(out)), (init, t([]))],
                [t(shape)], props, select)


def _gather_dims(rng, operand, with_batching):
    rank = len(operand)
    batching = sorted(rng.sample(range(rank), rng.randint(0, min(1, rank)))) if with_batching else []
    rest = [d for d in range(rank) if d not in batching]
    collapsed = sorted(rng.sample(rest, rng.randint(0, len(rest))))
    index_map = rng.sample([d for d in range(rank) if d not in batching], rng.randint(1, len(rest)) if rest else 0)
    return batching, collapsed, index_map


def _gather(f, rng):
    operand = _shape(rng, 1, 3)
    batching, collapsed, index_map = _gather_dims(rng, operand, rng.random() < 0.3)
    if not index_map:
        operand, batching, collapsed, index_map = [4], [], [0], [0]
    sizes = [1 if d in collapsed or d in batching else rng.randint(1, s) for d, s in enumerate(operand)]
    batch_shape = [operand[d] for d in batching] + _shape(rng, 0, 2)
    ivd = rng.randint(0, len(batch_shape))
    indices = batch_shape[:ivd] + [len(index_map)] + batch_shape[ivd:]
    idx_batching = [i if i < ivd else i + 1 for i in range(len(batching))]
    offsets = [sizes[d] for d in range(len(operand)) if d not in collapsed and d not in batching]
    out_rank = len(batch_shape) + len(offsets)
    offset_dims = sorted(rng.sample(range(out_rank), len(offsets)))
    out, bi, oi = [], 0, 0
    for d in range(out_rank):
        if d in offset_dims:
            out.append(offsets[oi])
            oi += 1
        else:
            out.append(batch_shape[bi])
            bi += 1
    x, idx = f.arg(t(operand)), f.arg(t(indices, "i32"))
    dn = (f"offset_dims = {_list(offset_dims)}, collapsed_slice_dims = {_list(collapsed)}, "
          + (f"operand_batching_dims = {_list(batching)}, start_indices_batching_dims = {_list(idx_batching)}, "
             if batching else "")
          + f"start_index_map = {_list(index_map)}, index_vector_dim = {ivd}")
    return f.op("stablehlo.gather", [(x, t(operand)), (idx, t(indices, "i32"))], [t(out)],
                f"dimension_numbers = #stablehlo.gather<{dn}>, slice_sizes = {_arr(sizes)}")


def _scatter(f, rng):
    operand = _shape(rng, 1, 3)
    batching, inserted, index_map = _gather_dims(rng, operand, rng.random() < 0.3)
    if not index_map:
        operand, batching, inserted, index_map = [4], [], [0], [0]
    windows = [1 if d in inserted or d in batching else rng.randint(1, s) for d, s in enumerate(operand)]
    batch_shape = [operand[d] for d in batching] + _shape(rng, 0, 2)
    ivd = rng.randint(0, len(batch_shape))
    indices = batch_shape[:ivd] + [len(index_map)] + batch_shape[ivd:]
    idx_batching = [i if i < ivd else i + 1 for i in range(len(batching))]
    window_sizes = [windows[d] for d in range(len(operand)) if d not in inserted and d not in batching]
    upd_rank = len(batch_shape) + len(window_sizes)
    window_dims = sorted(rng.sample(range(upd_rank), len(window_sizes)))
    upd, bi, wi = [], 0, 0
    for d in range(upd_rank):
        if d in window_dims:
            upd.append(window_sizes[wi])
            wi += 1
        else:
            upd.append(batch_shape[bi])
            bi += 1
    n = rng.randint(1, 2)
    xs = [(f.arg(t(operand)), t(operand)) for _ in range(n)]
    idx = (f.arg(t(indices, "i32")), t(indices, "i32"))
    us = [(f.arg(t(upd)), t(upd)) for _ in range(n)]
    dn = (f"update_window_dims = {_list(window_dims)}, inserted_window_dims = {_list(inserted)}, "
          + (f"input_batching_dims = {_list(batching)}, scatter_indices_batching_dims = {_list(idx_batching)}, "
             if batching else "")
          + f"scatter_dims_to_operand_dims = {_list(index_map)}, index_vector_dim = {ivd}")
    body = rng.choice(["stablehlo.add", "stablehlo.maximum", "stablehlo.subtract"])
    return f.op("stablehlo.scatter", xs + [idx] + us, [t(operand)] * n,
                f"scatter_dimension_numbers = #stablehlo.scatter<{dn}>", _reducer(["f32"] * n, body))


def _fft(f, rng):
    batch = _shape(rng, 0, 2)
    n = rng.randint(1, 3)
    lengths = [rng.choice((1, 4, 8)) for _ in range(n)]
    kind = rng.choice(("FFT", "IFFT", "RFFT", "IRFFT"))
    if kind in ("FFT", "IFFT"):
        ins, outs = (batch + lengths, "complex<f32>"), (batch + lengths, "complex<f32>")
    elif kind == "RFFT":
        ins, outs = (batch + lengths, "f32"), (batch + lengths[:-1] + [lengths[-1] // 2 + 1], "complex<f32>")
    else:
        ins, outs = (batch + lengths[:-1] + [lengths[-1] // 2 + 1], "complex<f32>"), (batch + lengths, "f32")
    x = f.arg(t(*ins))
    return f.op("stablehlo.fft", [(x, t(*ins))], [t(*outs)],
                f"fft_length = {_arr(lengths)}, fft_type = #stablehlo<fft_type {kind}>")


def _cholesky_triangular_solve(f, rng):
    batch = _shape(rng, 0, 2)
    m = _dim(rng)
    if rng.random() < 0.3:
        x = f.arg(t(batch + [m, m]))
        return f.op("stablehlo.cholesky", [(x, t(batch + [m, m]))], [t(batch + [m, m])], "lower = true")
    n = _dim(rng)
    left = rng.random() < 0.5
    b = batch + ([m, n] if left else [n, m])
    a = f.arg(t(batch + [m, m]))
    y = f.arg(t(b))
    tr = rng.choice(("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"))
    return f.op("stablehlo.triangular_solve", [(a, t(batch + [m, m])), (y, t(b))], [t(b)],
                f"left_side = {'true' if left else 'false'}, lower = true, transpose_a = "
                f"#stablehlo<transpose {tr}>, unit_diagonal = false")


def _batch_norm_rng(f, rng):
    if rng.random() < 0.5:
        shape = _shape(rng, 1, 4)
        feat = rng.randrange(len(shape))
        x = f.arg(t(shape))
        vs = [(f.arg(t([shape[feat]])), t([shape[feat]])) for _ in range(4)]
        return f.op("stablehlo.batch_norm_inference", [(x, t(shape)), *vs], [t(shape)],
                    f"epsilon = 1.000000e-03 : f32, feature_index = {feat} : i64")
    state = [rng.choice((2, 3))]
    out = _shape(rng, 0, 3)
    s = f.arg(t(state, "ui64"))
    return f.op("stablehlo.rng_bit_generator", [(s, t(state, "ui64"))], [t(state, "ui64"), t(out, "ui32")],
                "rng_algorithm = #stablehlo<rng_algorithm DEFAULT>")


def _collectives(f, rng):
    shape = [rng.choice((2, 4, 6)) for _ in range(rng.randint(1, 3))]
    n = rng.randint(1, 2)
    groups = "replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>"
    xs = [(f.arg(t(shape)), t(shape)) for _ in range(n)]
    kind = rng.randrange(4)
    dim = rng.randrange(len(shape))
    if kind == 0:
        out = list(shape)
        out[dim] *= 2
        return f.op("stablehlo.all_gather", xs, [t(out)] * n,
                    f"all_gather_dim = {dim} : i64, channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>, {groups}")
    if kind == 1:
        concat = rng.randrange(len(shape))
        out = list(shape)
        out[dim] //= 2
        out[concat] *= 2
        return f.op("stablehlo.all_to_all", xs, [t(out)] * n,
                    f"concat_dimension = {concat} : i64, {groups}, split_count = 2 : i64, split_dimension = {dim} : i64")
    if kind == 2:
        out = list(shape)
        out[dim] //= 2
        return f.op("stablehlo.reduce_scatter", xs[:1], [t(out)],
                    f"channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>, {groups}, scatter_dimension = {dim} : i64",
                    _reducer(["f32"]))
    return f.op("stablehlo.collective_permute", xs[:1], [t(shape)],
                "channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>, "
                "source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>")


_POINTWISE_TARGETS = ("annotate_device_placement", "Cholesky", "LayoutConstraint", "mhlo.erf",
                      "MoveToHost", "X64SplitLow", "_SPMDInternalOp_Wrap", "xla_python_cpu_callback")


def _custom_call(f, rng):
    batch = _shape(rng, 0, 2)
    m, n = _dim(rng), _dim(rng)
    kind = rng.randrange(6)
    if kind == 0:
        shape = _shape(rng)
        x = f.arg(t(shape))
        return f.op("stablehlo.custom_call", [(x, t(shape))], [t(shape)],
                    f'call_target_name = "{rng.choice(_POINTWISE_TARGETS)}"')
    if kind == 1:
        x = f.arg(t(batch + [m, m]))
        return f.op("stablehlo.custom_call", [(x, t(batch + [m, m]))], [t(batch + [m, m]), t(batch + [m])],
                    'call_target_name = "Eigh"')
    if kind == 2:
        x = f.arg(t(batch + [m, n]))
        return f.op("stablehlo.custom_call", [(x, t(batch + [m, n]))],
                    [t(batch + [m, n]), t(batch + [min(m, n)])],
                    f'call_target_name = "{rng.choice(("Qr", "QrDecompositionBlock"))}"')
    if kind == 3:
        x, taus = f.arg(t(batch + [m, n])), f.arg(t(batch + [min(m, n)]))
        return f.op("stablehlo.custom_call", [(x, t(batch + [m, n])), (taus, t(batch + [min(m, n)]))],
                    [t(batch + [m, n])], 'call_target_name = "ProductOfElementaryHouseholderReflectors"')
    if kind == 4:
        shape = batch + [m]
        k = rng.randint(1, m)
        x = f.arg(t(shape))
        return f.op("stablehlo.custom_call", [(x, t(shape))], [t(batch + [k]), t(batch + [k], "i32")],
                    'call_target_name = "mhlo.topk"', attrs=f"mhlo.attributes = {{k = {k} : i64}}")
    x, y = f.arg(t([2], "ui32")), f.arg(t([2], "ui32"))
    combined = f.op("stablehlo.custom_call", [(x, t([2], "ui32")), (y, t([2], "ui32"))], [t([2], "ui64")],
                    'call_target_name = "X64Combine"')
    if rng.random() < 0.5:
        return combined
    return f.op("stablehlo.rng_bit_generator", combined, [t([2], "ui64"), t([m, n], "ui32")],
                "rng_algorithm = #stablehlo<rng_algorithm DEFAULT>")


SHARDED_MESH = '"sdy.mesh"() <{mesh = #sdy.mesh<["x"=2, "y"=2, "z"=2]>, sym_name = "mesh"}> : () -> ()'


def sharded_case(family: str, rng: random.Random) -> str:
    """`case(family, rng)` on the mesh x=2, y=2, z=2: most arguments sharded at random (each dim
    replicated or on one unused axis, open or closed; sometimes an unreduced axis), for the
    passes after propagation (explicit reshards, collectives, the export)."""
    text = case(family, rng)
    signature = re.search(r"function_type = \((.*?)\) -> ", text).group(1)
    attrs = []
    for shape in re.findall(r"tensor<((?:\d+x)*)[a-z]", signature):
        free = rng.sample(["x", "y", "z"], 3)
        dims = [f'{{"{free.pop()}"{rng.choice(["", ", ?"])}}}' if free and rng.random() < 0.5
                else rng.choice(["{}", "{?}"]) for _ in shape.split("x")[:-1]]
        unreduced = f', unreduced={{"{free[0]}"}}' if free and rng.random() < 0.1 else ""
        attrs.append(f"{{sdy.sharding = #sdy.sharding<@mesh, [{', '.join(dims)}]{unreduced}>}}"
                     if rng.random() < 0.8 else "{}")
    text = text.replace('"func.func"() <{', f'"func.func"() <{{arg_attrs = [{", ".join(attrs)}], ', 1)
    return text.replace('"builtin.module"() ({\n', f'"builtin.module"() ({{\n  {SHARDED_MESH}\n', 1)
