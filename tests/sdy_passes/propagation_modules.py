"""Random modules for propagation tests (Hypothesis).

`prop_modules()` draws a module in pretty MLIR: one mesh (some with a size-3 axis, so shardings
need not divide, one with a size-1 axis), a `@main` whose arguments and results carry random
shardings (full and sub-axes, open and closed dims, replicated and unreduced axes, user
priorities `pN`), and a random DAG of
element-wise ops and trees of them (some with an `sdy.sharding`), transposes, reshapes
(compound factors), broadcasts, reduces, dot_generals, concatenates, slices, pads, selects,
iotas, reverses, dynamic slices, sharding constraints, reshards, sharding groups, optimization barriers, while loops, `stablehlo.case`s, named computations and manual computations (bodies drawn
the same way; inside a manual computation shardings use only the free axes). Every draw is a
Hypothesis choice, so a disagreeing module shrinks.

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
    (("a", 2), ("e", 1), ("c", 4)),
)
DIMS = (1, 2, 3, 4, 6, 8, 12, 16)
SIMPLE = ("unary", "binary", "tree", "transpose", "reshape", "broadcast", "reduce", "dot",
          "constraint", "group", "barrier", "concatenate", "slice", "pad", "select", "iota",
          "reverse", "dynamic_slice", "reshard")
NESTED = ("while", "named", "manual", "case")


def ttype(shape, element="f32") -> str:
    return "tensor<%s>" % "x".join([*map(str, shape), element])


def _axis_pieces(mesh, exclude=()):
    """(text, axis name, units it occupies): full axes, and the halves of axes of size 4."""
    out = []
    for name, size in mesh:
        if name in exclude:
            continue
        halves = (f"{name}:1", f"{name}:2") if size == 4 else (name,)
        out.append((f'"{name}"', name, halves))
        if size == 4:
            out.append((f'"{name}":(1)2', name, halves[:1]))
            out.append((f'"{name}":(2)2', name, halves[1:]))
    return out


@st.composite
def _sharding(draw, mesh, rank, priorities=True, exclude=(), first=()):
    """`<@mesh, [dims], replicated=...>`; `first[d]` are axis names put first in dim d (a manual
    computation's manual axes), `exclude` axes are not drawn."""
    pieces = _axis_pieces(mesh, exclude)
    used: set[str] = {n for names in first for n in names}
    names_used = set(used)
    dims = []
    for d in range(rank):
        axes, names = [f'"{n}"' for n in (first[d] if first else ())], set()
        for _ in range(draw(st.integers(0, 2))):
            text, name, units = draw(st.sampled_from(pieces)) if pieces else (None, None, ())
            if text is None or name in names or used.intersection(units) or name in used:
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
    free = [n for n, _ in mesh if n not in names_used and n not in exclude]
    replicated = [n for n in free if draw(st.integers(0, 5)) == 0]
    unreduced = [n for n in free if n not in replicated and draw(st.integers(0, 7)) == 0]
    text = "<@mesh, [" + ", ".join(dims) + "]"
    for key, axes in (("replicated", replicated), ("unreduced", unreduced)):
        if axes:
            text += f", {key}={{" + ", ".join(f'"{n}"' for n in axes) + "}"
    return text + ">"


def _factorizations(n):
    return [d for d in DIMS if n % d == 0 and d > 1] or [1]


class _Gen:
    def __init__(self, draw, mesh, priorities):
        self.draw, self.mesh, self.priorities = draw, mesh, priorities
        self.counter = 0
        self.lines: list[str] = []
        self.groups: dict = {}  # (shape, manual axes) -> its first group id / 2

    def fresh(self, n=1):
        self.counter += 1
        name = f"%{self.counter}"
        return [name] if n == 1 else [f"{name}#{i}" for i in range(n)]

    def sharding(self, rank, manual=(), priorities=None, first=()):
        priorities = self.priorities if priorities is None else priorities
        return self.draw(_sharding(self.mesh, rank, priorities, exclude=manual, first=first))

    def emit(self, indent, values, text, shapes):
        """`%n = text` (or `%n:k = text`); the results join `values`."""
        names = self.fresh(len(shapes))
        lhs = names[0].split("#")[0] + (f":{len(shapes)}" if len(shapes) > 1 else "")
        self.lines.append("  " * indent + f"{lhs} = {text}")
        values.extend(zip(names, shapes))
        return names

    def op_sharding(self, shape, manual):
        if self.draw(st.integers(0, 4)):
            return ""
        return " {sdy.sharding = #sdy.sharding_per_value<[%s]>}" % self.sharding(len(shape), manual)

    def body(self, indent, values, n, manual, depth):
        """`n` random ops over `values` (a list of (name, shape) the ops extend)."""
        draw = self.draw
        for _ in range(n):
            v, shape = draw(st.sampled_from(values))
            kind = draw(st.sampled_from(SIMPLE + NESTED if depth < 2 else SIMPLE))
            t = ttype(shape)
            if kind == "unary":
                op = draw(st.sampled_from(("negate", "abs", "tanh")))
                self.emit(indent, values, f"stablehlo.{op} {v}{self.op_sharding(shape, manual)} : {t}", [shape])
            elif kind in ("binary", "tree"):
                same = [n for n, s in values if s == shape]
                leaves = [v] + [draw(st.sampled_from(same)) for _ in range(1 if kind == "binary" else 3)]
                while len(leaves) > 1:  # a balanced tree of element-wise ops
                    a, b = leaves.pop(0), leaves.pop(0)
                    op = draw(st.sampled_from(("add", "multiply", "maximum", "subtract")))
                    leaves.append(self.emit(indent, values, f"stablehlo.{op} {a}, {b}"
                                            f"{self.op_sharding(shape, manual)} : {t}", [shape])[0])
            elif kind == "transpose" and len(shape) > 1:
                perm = draw(st.permutations(range(len(shape))))
                out = tuple(shape[p] for p in perm)
                self.emit(indent, values, f"stablehlo.transpose {v}, dims = [{', '.join(map(str, perm))}] : "
                                          f"({t}) -> {ttype(out)}", [out])
            elif kind == "reshape":
                n_elems = math.prod(shape)
                out = []
                while n_elems > 1 and len(out) < 3:
                    d = draw(st.sampled_from(_factorizations(n_elems)))
                    out.append(d)
                    n_elems //= d
                if n_elems > 1:
                    out.append(n_elems)
                out = tuple(out) or (1,)
                if out != shape and all(d in DIMS or d <= 48 for d in out):
                    self.emit(indent, values, f"stablehlo.reshape {v} : ({t}) -> {ttype(out)}", [out])
            elif kind == "broadcast" and len(shape) < 3:
                pos = draw(st.integers(0, len(shape)))
                out = shape[:pos] + (draw(st.sampled_from(DIMS)),) + shape[pos:]
                dims = [i if i < pos else i + 1 for i in range(len(shape))]
                self.emit(indent, values, f"stablehlo.broadcast_in_dim {v}, dims = [{', '.join(map(str, dims))}] : "
                                          f"({t}) -> {ttype(out)}", [out])
            elif kind == "reduce" and len(shape) > 1:
                dim = draw(st.integers(0, len(shape) - 1))
                zero = self.emit(indent, [], "stablehlo.constant dense<0.0> : tensor<f32>", [()])[0]
                out = shape[:dim] + shape[dim + 1:]
                self.emit(indent, values, f"stablehlo.reduce({v} init: {zero}) applies stablehlo.add across "
                                          f"dimensions = [{dim}] : ({t}, tensor<f32>) -> {ttype(out)}", [out])
            elif kind == "dot" and len(shape) > 1:
                batch = len(shape) == 3 and draw(st.booleans())
                last = len(shape) - 1
                if batch:
                    out = (shape[0], shape[1], shape[1])
                    dims = f"batching_dims = [0] x [0], contracting_dims = [{last}] x [{last}]"
                else:
                    out = shape[:-1] + shape[:-1]
                    dims = f"contracting_dims = [{last}] x [{last}]"
                w = draw(st.sampled_from([n for n, s in values if s == shape]))
                if len(out) <= 4:
                    self.emit(indent, values, f"stablehlo.dot_general {v}, {w}, {dims} : ({t}, {t}) -> "
                                              f"{ttype(out)}", [out])
            elif kind == "constraint":
                self.emit(indent, values, f"sdy.sharding_constraint {v} {self.sharding(len(shape), manual)} : {t}",
                          [shape])
            elif kind == "reshard":
                self.emit(indent, values, f"sdy.reshard {v} {self.sharding(len(shape), manual)} : {t}", [shape])
            elif kind == "group":
                # One id per shape and scope (a group may not cross a manual computation).
                group = self.groups.setdefault((shape, manual), len(self.groups)) * 2 + draw(st.integers(0, 1))
                self.lines.append("  " * indent + f"sdy.sharding_group {v} group_id={group} : {t}")
            elif kind == "barrier":
                ins = [(v, shape)] + [draw(st.sampled_from(values)) for _ in range(draw(st.integers(0, 1)))]
                self.emit(indent, values, "stablehlo.optimization_barrier " + ", ".join(n for n, _ in ins)
                          + " : " + ", ".join(ttype(s) for _, s in ins), [s for _, s in ins])
            elif kind == "concatenate":
                dim = draw(st.integers(0, len(shape) - 1)) if shape else None
                w = draw(st.sampled_from([n for n, s in values if s == shape]))
                if dim is not None:
                    out = shape[:dim] + (2 * shape[dim],) + shape[dim + 1:]
                    self.emit(indent, values, f"stablehlo.concatenate {v}, {w}, dim = {dim} : ({t}, {t}) -> "
                                              f"{ttype(out)}", [out])
            elif kind == "slice":
                starts = [draw(st.integers(0, d - 1)) for d in shape]
                strides = [draw(st.integers(1, 2)) for _ in shape]
                out = tuple(-(-(d - a) // k) for d, a, k in zip(shape, starts, strides))
                ranges = ", ".join(f"{a}:{d}" + (f":{k}" if k > 1 else "") for a, d, k in zip(starts, shape, strides))
                self.emit(indent, values, f"stablehlo.slice {v} [{ranges}] : ({t}) -> {ttype(out)}", [out])
            elif kind == "pad":
                low, high = ([draw(st.integers(0, 2)) for _ in shape] for _ in range(2))
                out = tuple(d + a + b for d, a, b in zip(shape, low, high))
                zero = self.emit(indent, [], "stablehlo.constant dense<0.0> : tensor<f32>", [()])[0]
                self.emit(indent, values, f"stablehlo.pad {v}, {zero}, low = {low}, high = {high}, interior = "
                                          f"{[0] * len(shape)} : ({t}, tensor<f32>) -> {ttype(out)}", [out])
            elif kind == "select":
                a, b = (draw(st.sampled_from([n for n, s in values if s == shape])) for _ in range(2))
                pred = self.emit(indent, [], f"stablehlo.compare GT, {v}, {a} : ({t}, {t}) -> {ttype(shape, 'i1')}",
                                 [shape])[0]
                self.emit(indent, values, f"stablehlo.select {pred}, {a}, {b}{self.op_sharding(shape, manual)} : "
                                          f"{ttype(shape, 'i1')}, {t}", [shape])
            elif kind == "iota" and shape:
                self.emit(indent, values, f"stablehlo.iota dim = {draw(st.integers(0, len(shape) - 1))} : {t}", [shape])
            elif kind == "reverse" and shape:
                dims = sorted(draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
                self.emit(indent, values, f"stablehlo.reverse {v}, dims = {dims} : {t}", [shape])
            elif kind == "dynamic_slice" and shape:
                out = tuple(draw(st.integers(1, d)) for d in shape)
                index = self.emit(indent, [], "stablehlo.constant dense<1> : tensor<i32>", [()])[0]
                self.emit(indent, values, f"stablehlo.dynamic_slice {v}, {', '.join([index] * len(shape))}, sizes = "
                                          f"{list(out)} : ({t}, {', '.join(['tensor<i32>'] * len(shape))}) -> "
                                          f"{ttype(out)}", [out])
            elif kind == "while":
                self.op_while(indent, values, (v, shape), manual, depth)
            elif kind == "named":
                self.op_named(indent, values, (v, shape), manual, depth)
            elif kind == "case":
                self.op_case(indent, values, (v, shape), manual, depth)
            elif kind == "manual" and not manual:
                self.op_manual(indent, values, (v, shape), depth)

    def op_while(self, indent, values, carried, manual, depth):
        draw = self.draw
        zero, limit = (self.emit(indent, [], f"stablehlo.constant dense<{k}> : tensor<i32>", [()])[0]
                       for k in (0, 3))
        carries = [carried] + [draw(st.sampled_from(values)) for _ in range(draw(st.integers(0, 1)))]
        its = [self.fresh()[0].replace("%", "%it") for _ in range(len(carries) + 1)]
        types = [ttype(s) for _, s in carries] + ["tensor<i32>"]
        results = self.fresh(len(types))
        header = ", ".join(f"{i} = {n}" for i, n in zip(its, [n for n, _ in carries] + [zero]))
        attrs = ""
        if draw(st.integers(0, 3)) == 0:
            attrs = " attributes {sdy.sharding = #sdy.sharding_per_value<[%s]>}" % ", ".join(
                [self.sharding(len(s), manual) for _, s in carries] + ["<@mesh, []>"])
        pad = "  " * indent
        self.lines.append(f"{pad}{results[0].split('#')[0]}:{len(types)} = stablehlo.while({header}) : "
                          f"{', '.join(types)}{attrs}")
        cmp_ = self.fresh()[0]
        self.lines += [f"{pad}  cond {{",
                       f"{pad}  {cmp_} = stablehlo.compare LT, {its[-1]}, {limit} : (tensor<i32>, tensor<i32>) -> tensor<i1>",
                       f"{pad}  stablehlo.return {cmp_} : tensor<i1>",
                       f"{pad}}} do {{"]
        inner = values + [(i, s) for i, (_, s) in zip(its, carries)]
        self.body(indent + 1, inner, draw(st.integers(1, 4)), manual, depth + 1)
        rets = [draw(st.sampled_from([n for n, s in inner if s == shape])) for _, shape in carries]
        one = self.emit(indent + 1, [], "stablehlo.constant dense<1> : tensor<i32>", [()])[0]
        step = self.emit(indent + 1, [], f"stablehlo.add {its[-1]}, {one} : tensor<i32>", [()])[0]
        self.lines += [f"{pad}  stablehlo.return {', '.join(rets + [step])} : {', '.join(types)}",
                       f"{pad}}}"]
        values.extend((r, s) for r, (_, s) in zip(results, carries))

    def op_case(self, indent, values, operand, manual, depth):
        """`stablehlo.case` on a constant index: two branches over the values above (not
        isolated), each returning a value of the operand's shape."""
        draw = self.draw
        shape = operand[1]
        index = self.emit(indent, [], f"stablehlo.constant dense<{draw(st.integers(0, 1))}> : tensor<i32>", [()])[0]
        start = len(self.lines)
        self.lines.append("")  # the header, once the result is named
        pad = "  " * indent
        for branch in range(2):
            inner = list(values)
            self.body(indent + 1, inner, draw(st.integers(0, 3)), manual, depth + 1)
            ret = draw(st.sampled_from([n for n, s in inner if s == shape]))
            self.lines += [f"{pad}  stablehlo.return {ret} : {ttype(shape)}", f"{pad}}}, {{" if branch == 0 else ""]
        self.lines.pop()
        result = self.fresh()[0]
        attrs = ""
        if draw(st.integers(0, 3)) == 0:
            attrs = " {sdy.sharding = #sdy.sharding_per_value<[%s]>}" % self.sharding(len(shape), manual)
        self.lines[start] = f'{pad}{result} = "stablehlo.case"({index}) ({{'
        self.lines.append(f"{pad}}}){attrs} : (tensor<i32>) -> {ttype(shape)}")
        values.append((result, shape))

    def _region(self, indent, values, args, manual, depth, local_outs=None):
        """An isolated body over `args` ((name, shape) pairs); returns the returned values."""
        inner = list(args)
        self.body(indent + 1, inner, self.draw(st.integers(1, 4)), manual, depth + 1)
        outs = [self.draw(st.sampled_from(inner)) for _ in range(self.draw(st.integers(1, 2)))]
        self.lines.append("  " * (indent + 1) + "sdy.return " + ", ".join(n for n, _ in outs) + " : "
                          + ", ".join(ttype(s) for _, s in outs))
        return outs

    def op_named(self, indent, values, operand, manual, depth):
        draw = self.draw
        ins = [operand] + [draw(st.sampled_from(values)) for _ in range(draw(st.integers(0, 1)))]
        args = [(self.fresh()[0].replace("%", "%na"), s) for _, s in ins]
        start = len(self.lines)
        self.lines.append("")  # the header, once the results are known
        outs = self._region(indent, values, args, manual, depth)
        props = ""
        if draw(st.booleans()):
            props += " in_shardings=[%s]" % ", ".join(self.sharding(len(s), manual) for _, s in ins)
        if draw(st.booleans()):
            props += " out_shardings=[%s]" % ", ".join(self.sharding(len(s), manual) for _, s in outs)
        results = self.fresh(len(outs))
        lhs = results[0].split("#")[0] + (f":{len(outs)}" if len(outs) > 1 else "")
        self.lines[start] = ("  " * indent + f'{lhs} = sdy.named_computation<"nc{self.counter}">('
                             + ", ".join(n for n, _ in ins) + f"){props} ("
                             + ", ".join(f"{a}: {ttype(s)}" for a, s in args) + ") {")
        self.lines.append("  " * indent + "} : (" + ", ".join(ttype(s) for _, s in ins) + ") -> "
                          + _types(outs))
        values.extend((r, s) for r, (_, s) in zip(results, outs))

    def _manual_dims(self, shape, manual, local):
        """Manual axes per dim (each at most once per tensor): `local` shapes must divide."""
        sizes = dict(self.mesh)
        free = list(manual)
        dims = []
        for d in shape:
            here = []
            for axis in list(free):
                if self.draw(st.booleans()) and (not local or d % (math.prod(sizes[a] for a in here) * sizes[axis]) == 0):
                    here.append(axis)
                    free.remove(axis)
            dims.append(tuple(here))
        return dims

    def op_manual(self, indent, values, operand, depth):
        draw = self.draw
        sizes = dict(self.mesh)
        manual = tuple(n for n, _ in self.mesh if draw(st.booleans()))
        ins = [operand] + [draw(st.sampled_from(values)) for _ in range(draw(st.integers(0, 1)))]
        in_dims = [self._manual_dims(s, manual, local=True) for _, s in ins]
        args = [(self.fresh()[0].replace("%", "%ma"), tuple(d // math.prod(sizes[a] for a in m) for d, m in zip(s, dims)))
                for (_, s), dims in zip(ins, in_dims)]
        start = len(self.lines)
        self.lines.append("")
        outs = self._region(indent, values, args, manual, depth)
        out_dims = [self._manual_dims(s, manual, local=False) for _, s in outs]
        out_shapes = [tuple(d * math.prod(sizes[a] for a in m) for d, m in zip(s, dims))
                      for (_, s), dims in zip(outs, out_dims)]
        in_sh = [self.sharding(len(s), manual, False, dims) for (_, s), dims in zip(ins, in_dims)]
        out_sh = [self.sharding(len(s), manual, False, dims) for s, dims in zip(out_shapes, out_dims)]
        results = self.fresh(len(outs))
        lhs = results[0].split("#")[0] + (f":{len(outs)}" if len(outs) > 1 else "")
        self.lines[start] = ("  " * indent + f"{lhs} = sdy.manual_computation(" + ", ".join(n for n, _ in ins)
                             + f") in_shardings=[{', '.join(in_sh)}] out_shardings=[{', '.join(out_sh)}] "
                             + "manual_axes={" + ", ".join(f'"{m}"' for m in manual) + "} ("
                             + ", ".join(f"{a}: {ttype(s)}" for a, s in args) + ") {")
        self.lines.append("  " * indent + "} : (" + ", ".join(ttype(s) for _, s in ins) + ") -> "
                          + _types([(None, s) for s in out_shapes]))
        values.extend(zip(results, out_shapes))


def _types(values):
    types = [ttype(s) for _, s in values]
    return types[0] if len(types) == 1 else "(" + ", ".join(types) + ")"


@st.composite
def prop_modules(draw, *, max_ops=10, priorities=True):
    mesh = draw(st.sampled_from(MESHES))
    gen = _Gen(draw, mesh, priorities)
    values, args = [], []
    for i in range(draw(st.integers(1, 3))):
        shape = tuple(draw(st.sampled_from(DIMS)) for _ in range(draw(st.integers(1, 3))))
        attr = ""
        if draw(st.integers(0, 3)):
            attr = " {sdy.sharding = #sdy.sharding%s}" % gen.sharding(len(shape))
        args.append(f"%arg{i}: {ttype(shape)}{attr}")
        values.append((f"%arg{i}", shape))
    gen.body(1, values, draw(st.integers(1, max_ops)), (), 0)
    # Return the leaves (most of them: an unused op is erased by propagation, as in jaxlib).
    lines = gen.lines
    used = {u for line in lines for u in re.findall(r"%[\w#]+", line.partition(" = ")[2])}
    used |= {u.split("#")[0] for u in used}
    leaves = [(n, s) for n, s in values if not n.startswith("%arg") and n not in used]
    returned = [(n, s) for n, s in leaves if draw(st.integers(0, 4))] or values[-1:]
    results = []
    for _, s in returned:
        attr = " {sdy.sharding = #sdy.sharding%s}" % gen.sharding(len(s)) if draw(st.integers(0, 5)) == 0 else ""
        results.append(ttype(s) + attr)
    mesh_text = "[" + ", ".join(f'"{n}"={s}' for n, s in mesh) + "]"
    return "\n".join([
        f"sdy.mesh @mesh = <{mesh_text}>",
        f"func.func @main({', '.join(args)}) -> ({', '.join(results)}) {{",
        *lines,
        f"  return {', '.join(n for n, _ in returned)} : {', '.join(ttype(s) for _, s in returned)}",
        "}",
    ])
