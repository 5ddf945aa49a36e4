"""Modules for propagation tests: random ones (Hypothesis) and a transformer-like one (benchmarks).

`prop_modules()` draws a module in pretty MLIR: one mesh (some with a size-3 axis, so shardings
need not divide), a `@main` whose arguments carry random shardings (full and sub-axes, open and
closed dims, replicated axes, user priorities `pN`), and a random DAG of element-wise ops,
transposes, reshapes (compound factors), broadcasts, reduces, dot_generals and sharding
constraints. Every draw is a Hypothesis choice, so a disagreeing module shrinks.

`transformer_module(layers)` is a stack of attention-and-MLP blocks (dots, reshapes, transposes,
reduces, broadcasts, element-wise ops), about 40 ops per layer, with sharded arguments.
"""

from __future__ import annotations

import math
import re

import hypothesis.strategies as st

MESHES = (
    (("a", 2), ("b", 2), ("c", 4)),
    (("x", 4), ("y", 2)),
    (("a", 2), ("d", 3)),
)
DIMS = (1, 2, 3, 4, 6, 8, 12, 16)


def ttype(shape) -> str:
    return "tensor<%s>" % "x".join([*map(str, shape), "f32"])


def _axis_pieces(mesh):
    """(text, axis name, units it occupies): full axes, and the halves of axes of size 4."""
    out = []
    for name, size in mesh:
        halves = (f"{name}:1", f"{name}:2") if size == 4 else (name,)
        out.append((f'"{name}"', name, halves))
        if size == 4:
            out.append((f'"{name}":(1)2', name, halves[:1]))
            out.append((f'"{name}":(2)2', name, halves[1:]))
    return out


@st.composite
def _sharding(draw, mesh, rank, priorities=True):
    pieces = _axis_pieces(mesh)
    used: set[str] = set()
    names_used: set[str] = set()
    dims = []
    for _ in range(rank):
        axes, names = [], set()
        for _ in range(draw(st.integers(0, 2))):
            text, name, units = draw(st.sampled_from(pieces))
            if name in names or used.intersection(units):
                continue  # one piece of an axis per dim, and no axis part twice
            axes.append(text)
            names.add(name)
            used.update(units)
        names_used |= names
        closed = draw(st.booleans())
        body = ", ".join(axes)
        if not closed:
            body = body + ", ?" if body else "?"
        can_prioritize = priorities and (axes or not closed)  # `{}p1` is invalid
        prio = f"p{draw(st.integers(0, 2))}" if can_prioritize and draw(st.integers(0, 3)) == 0 else ""
        dims.append("{" + body + "}" + prio)
    replicated = [f'"{n}"' for n, _ in mesh if n not in names_used and draw(st.integers(0, 5)) == 0]
    text = "<@mesh, [" + ", ".join(dims) + "]"
    if replicated:
        text += ", replicated={" + ", ".join(replicated) + "}"
    return text + ">"


def _shape(draw, rank):
    return tuple(draw(st.sampled_from(DIMS)) for _ in range(rank))


def _factorizations(n):
    return [d for d in DIMS if n % d == 0 and d > 1] or [1]


@st.composite
def prop_modules(draw, *, max_ops=10, priorities=True):
    mesh = draw(st.sampled_from(MESHES))
    lines = []
    values = []  # (name, shape)
    args = []
    for i in range(draw(st.integers(1, 3))):
        shape = _shape(draw, draw(st.integers(1, 3)))
        attr = ""
        if draw(st.integers(0, 3)):
            attr = " {sdy.sharding = #sdy.sharding%s}" % draw(_sharding(mesh, len(shape), priorities))
        args.append(f"%arg{i}: {ttype(shape)}{attr}")
        values.append((f"%arg{i}", shape))
    counter = [0]

    def fresh():
        counter[0] += 1
        return f"%{counter[0]}"

    def emit(text, shape):
        name = fresh()
        lines.append(f"  {name} = {text}")
        values.append((name, shape))

    zero = None
    for _ in range(draw(st.integers(1, max_ops))):
        v, shape = draw(st.sampled_from(values))
        kind = draw(st.sampled_from(("unary", "binary", "transpose", "reshape", "broadcast",
                                     "reduce", "dot", "constraint")))
        t = ttype(shape)
        if kind == "unary":
            op = draw(st.sampled_from(("negate", "abs", "tanh")))
            emit(f"stablehlo.{op} {v} : {t}", shape)
        elif kind == "binary":
            same = [n for n, s in values if s == shape]
            w = draw(st.sampled_from(same))
            op = draw(st.sampled_from(("add", "multiply", "maximum")))
            emit(f"stablehlo.{op} {v}, {w} : {t}", shape)
        elif kind == "transpose" and len(shape) > 1:
            perm = draw(st.permutations(range(len(shape))))
            out = tuple(shape[p] for p in perm)
            emit(f"stablehlo.transpose {v}, dims = [{', '.join(map(str, perm))}] : ({t}) -> {ttype(out)}", out)
        elif kind == "reshape":
            n = math.prod(shape)
            out = []
            while n > 1 and len(out) < 3:
                d = draw(st.sampled_from(_factorizations(n)))
                out.append(d)
                n //= d
            if n > 1:
                out.append(n)
            out = tuple(out) or (1,)
            if out != shape and all(d in DIMS or d <= 48 for d in out):
                emit(f"stablehlo.reshape {v} : ({t}) -> {ttype(out)}", out)
        elif kind == "broadcast" and len(shape) < 3:
            pos = draw(st.integers(0, len(shape)))
            new = draw(st.sampled_from(DIMS))
            out = shape[:pos] + (new,) + shape[pos:]
            dims = [i if i < pos else i + 1 for i in range(len(shape))]
            emit(f"stablehlo.broadcast_in_dim {v}, dims = [{', '.join(map(str, dims))}] : ({t}) -> {ttype(out)}", out)
        elif kind == "reduce" and len(shape) > 1:
            dim = draw(st.integers(0, len(shape) - 1))
            if zero is None:
                zero = fresh()
                lines.append(f"  {zero} = stablehlo.constant dense<0.0> : tensor<f32>")
            out = shape[:dim] + shape[dim + 1:]
            emit(f"stablehlo.reduce({v} init: {zero}) applies stablehlo.add across dimensions = [{dim}] : "
                 f"({t}, tensor<f32>) -> {ttype(out)}", out)
        elif kind == "dot" and len(shape) > 1:
            batch = len(shape) == 3 and draw(st.booleans())
            last = len(shape) - 1
            if batch:
                out = (shape[0], shape[1], shape[1])
                dims = f"batching_dims = [0] x [0], contracting_dims = [{last}] x [{last}]"
            else:
                out = shape[:-1] + shape[:-1]
                dims = f"contracting_dims = [{last}] x [{last}]"
            if len(out) <= 4:
                emit(f"stablehlo.dot_general {v}, {v}, {dims} : ({t}, {t}) -> {ttype(out)}", out)
        elif kind == "constraint":
            emit(f"sdy.sharding_constraint {v} {draw(_sharding(mesh, len(shape), False))} : {t}", shape)
    # Return the leaves (most of them: an unused op is erased by propagation, as in jaxlib).
    used = {u for line in lines for u in re.findall(r"%\w+", line.partition(" = ")[2])}
    leaves = [(n, s) for n, s in values if not n.startswith("%arg") and n not in used]
    returned = [(n, s) for n, s in leaves if draw(st.integers(0, 4))] or values[-1:]
    results, result_types = [n for n, _ in returned], [ttype(s) for _, s in returned]
    mesh_text = "[" + ", ".join(f'"{n}"={s}' for n, s in mesh) + "]"
    return "\n".join([
        f"sdy.mesh @mesh = <{mesh_text}>",
        f"func.func @main({', '.join(args)}) -> ({', '.join(result_types)}) {{",
        *lines,
        f"  return {', '.join(results)} : {', '.join(result_types)}",
        "}",
    ])


def transformer_module(layers: int, *, batch=8, seq=128, model=256, heads=8, hidden=1024) -> str:
    """A stack of `layers` attention + MLP blocks on `@mesh` `["data"=2, "model"=4]`."""
    head = model // heads
    x_t, w_t = ttype((batch, seq, model)), ttype((model, model))
    lines = []
    counter = [0]

    def emit(text):
        counter[0] += 1
        lines.append(f"  %{counter[0]} = {text}")
        return f"%{counter[0]}"

    args = [f'%arg0: {x_t} {{sdy.sharding = #sdy.sharding<@mesh, [{{"data"}}, {{}}, {{}}]>}}',
            f'%arg1: {w_t} {{sdy.sharding = #sdy.sharding<@mesh, [{{}}, {{"model"}}]>}}',
            f'%arg2: {ttype((model, hidden))} {{sdy.sharding = #sdy.sharding<@mesh, [{{}}, {{"model"}}]>}}',
            f'%arg3: {ttype((hidden, model))} {{sdy.sharding = #sdy.sharding<@mesh, [{{"model"}}, {{}}]>}}']
    zero = emit("stablehlo.constant dense<0.0> : tensor<f32>")
    x = "%arg0"
    bsm, bshd = (batch, seq, model), (batch, seq, heads, head)
    bhsd, bhss = (batch, heads, seq, head), (batch, heads, seq, seq)
    for _ in range(layers):
        def proj(inp):
            y = emit(f"stablehlo.dot_general {inp}, %arg1, contracting_dims = [2] x [0] : "
                     f"({x_t}, {w_t}) -> {x_t}")
            y = emit(f"stablehlo.reshape {y} : ({x_t}) -> {ttype(bshd)}")
            return emit(f"stablehlo.transpose {y}, dims = [0, 2, 1, 3] : ({ttype(bshd)}) -> {ttype(bhsd)}")
        q, k, v = proj(x), proj(x), proj(x)
        s = emit(f"stablehlo.dot_general {q}, {k}, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3] : "
                 f"({ttype(bhsd)}, {ttype(bhsd)}) -> {ttype(bhss)}")
        m = emit(f"stablehlo.reduce({s} init: {zero}) applies stablehlo.maximum across dimensions = [3] : "
                 f"({ttype(bhss)}, tensor<f32>) -> {ttype(bhss[:3])}")
        m = emit(f"stablehlo.broadcast_in_dim {m}, dims = [0, 1, 2] : ({ttype(bhss[:3])}) -> {ttype(bhss)}")
        e = emit(f"stablehlo.subtract {s}, {m} : {ttype(bhss)}")
        e = emit(f"stablehlo.exponential {e} : {ttype(bhss)}")
        z = emit(f"stablehlo.reduce({e} init: {zero}) applies stablehlo.add across dimensions = [3] : "
                 f"({ttype(bhss)}, tensor<f32>) -> {ttype(bhss[:3])}")
        z = emit(f"stablehlo.broadcast_in_dim {z}, dims = [0, 1, 2] : ({ttype(bhss[:3])}) -> {ttype(bhss)}")
        p = emit(f"stablehlo.divide {e}, {z} : {ttype(bhss)}")
        o = emit(f"stablehlo.dot_general {p}, {v}, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : "
                 f"({ttype(bhss)}, {ttype(bhsd)}) -> {ttype(bhsd)}")
        o = emit(f"stablehlo.transpose {o}, dims = [0, 2, 1, 3] : ({ttype(bhsd)}) -> {ttype(bshd)}")
        o = emit(f"stablehlo.reshape {o} : ({ttype(bshd)}) -> {x_t}")
        o = emit(f"stablehlo.dot_general {o}, %arg1, contracting_dims = [2] x [0] : ({x_t}, {w_t}) -> {x_t}")
        x = emit(f"stablehlo.add {x}, {o} : {x_t}")
        sq = emit(f"stablehlo.multiply {x}, {x} : {x_t}")
        var = emit(f"stablehlo.reduce({sq} init: {zero}) applies stablehlo.add across dimensions = [2] : "
                   f"({x_t}, tensor<f32>) -> {ttype(bsm[:2])}")
        var = emit(f"stablehlo.rsqrt {var} : {ttype(bsm[:2])}")
        var = emit(f"stablehlo.broadcast_in_dim {var}, dims = [0, 1] : ({ttype(bsm[:2])}) -> {x_t}")
        n = emit(f"stablehlo.multiply {x}, {var} : {x_t}")
        h_t = ttype((batch, seq, hidden))
        h = emit(f"stablehlo.dot_general {n}, %arg2, contracting_dims = [2] x [0] : ({x_t}, {ttype((model, hidden))}) -> {h_t}")
        h = emit(f"stablehlo.logistic {h} : {h_t}")
        h = emit(f"stablehlo.dot_general {h}, %arg3, contracting_dims = [2] x [0] : ({h_t}, {ttype((hidden, model))}) -> {x_t}")
        x = emit(f"stablehlo.add {x}, {h} : {x_t}")
    return "\n".join([
        'sdy.mesh @mesh = <["data"=2, "model"=4]>',
        f"func.func @main({', '.join(args)}) -> {x_t} {{",
        *lines,
        f"  return {x} : {x_t}",
        "}",
    ])
