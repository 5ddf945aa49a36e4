"""Random modules for propagation tests (Hypothesis).

`prop_modules()` draws a module in pretty MLIR: one mesh (some with a size-3 axis, so shardings
need not divide), a `@main` whose arguments carry random shardings (full and sub-axes, open and
closed dims, replicated axes, user priorities `pN`), and a random DAG of element-wise ops,
transposes, reshapes (compound factors), broadcasts, reduces, dot_generals and sharding
constraints. Every draw is a Hypothesis choice, so a disagreeing module shrinks.

(The transformer-like module of the benchmarks is `asv_bench/benchmarks/sdy_propagation.py`.)
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
