"""Hypothesis strategies for the IR: attributes, types, and whole modules built through the API.

`modules()` draws a `Module` with meshes and funcs whose bodies mix element-wise ops, constants,
sdy ops (constraints, groups, edges, named and manual computations), calls, while loops,
optimization barriers and unknown ops in generic form with arbitrary attributes, regions,
several blocks and successors.
"""

from __future__ import annotations

import math
import os

from hypothesis import strategies as st
from sharding import (
    AxisRef, DimensionSharding, ManualAxes, Mesh, MeshAxis, TensorSharding, TensorShardingPerValue,
)

from sdy_passes import (
    ArrayAttr, Block, BoolAttr, DenseArrayAttr, DenseElementsAttr, DictionaryAttr, FloatAttr,
    FloatType, FunctionType, IntegerAttr, IntegerType, Module, OpaqueAttr, Operation,
    RankedTensorType, Region, StringAttr, SymbolRefAttr, TypeAttr, UnitAttr,
)
from sdy_passes.attributes import F32, F64, I1, I32, I64, TOKEN, OpShardingRule, round_float

ELEMENT_TYPES = [F32, I32, FloatType("bf16"), I1, IntegerType(8, "u"), F64]
MESH = Mesh((MeshAxis("x", 2), MeshAxis("y", 4)))

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)
bare_names = st.from_regex(r"[a-z_][a-z0-9_.]{0,6}", fullmatch=True)


@st.composite
def tensor_types(draw, *, static: bool = False, max_rank: int = 3):
    rank = draw(st.integers(0, max_rank))
    dim = st.integers(1, 16) if static else st.one_of(st.integers(0, 16), st.none())
    return RankedTensorType(tuple(draw(dim) for _ in range(rank)), draw(st.sampled_from(ELEMENT_TYPES)))


def value_types():
    return st.one_of(tensor_types(), st.just(TOKEN))


def _floats(t):
    return st.floats(allow_nan=False, width=64).map(lambda v: round_float(v, t))


@st.composite
def float_attrs(draw):
    t = draw(st.sampled_from([F32, F64, FloatType("bf16")]))
    # A non-finite f64 prints as a hex literal whose type MLIR leaves out inside arrays, so it
    # reads back as an integer (in MLIR too): only f32/bf16 get NaN and infinities here.
    special = st.nothing() if t == F64 else st.sampled_from([math.inf, -math.inf, math.nan])
    v = draw(st.one_of(_floats(t), special))
    return FloatAttr(v, t)


def leaf_attributes(registered: bool = False):
    """Attribute leaves; `registered` leaves out other dialects' attributes (jaxlib rejects them)."""
    opaque = st.nothing() if registered else st.builds(OpaqueAttr, st.sampled_from([
        "#stablehlo<comparison_direction LT>", "#foo.bar<[1, 2] -> {x}>", "#stablehlo.dot<>"]))
    return st.one_of(
        st.builds(IntegerAttr, st.integers(-2**63, 2**63 - 1), st.just(I64)),
        st.builds(IntegerAttr, st.integers(-2**31, 2**31 - 1), st.just(I32)),
        st.builds(BoolAttr, st.booleans()),
        float_attrs(),
        st.builds(StringAttr, names),
        st.just(UnitAttr()),
        st.builds(SymbolRefAttr, names.filter(bool), st.lists(names.filter(bool), max_size=2).map(tuple)),
        st.builds(DenseArrayAttr, st.just(I64), st.lists(st.integers(-9, 9), max_size=4).map(tuple)),
        st.builds(DenseArrayAttr, st.just(I1), st.lists(st.booleans(), max_size=4).map(tuple)),
        st.builds(TypeAttr, value_types()),
        opaque,
        shardings(),
    )


def attributes(registered: bool = False):
    return st.recursive(
        leaf_attributes(registered),
        lambda inner: st.one_of(
            st.lists(inner, max_size=3).map(lambda xs: ArrayAttr(tuple(xs))),
            st.dictionaries(names.filter(bool), inner, max_size=3).map(DictionaryAttr.from_dict),
        ),
        max_leaves=6,
    )


@st.composite
def shardings(draw, rank: int | None = None, mesh_or_ref=None):
    rank = draw(st.integers(0, 3)) if rank is None else rank
    free = ["x", "y"]
    dims = []
    for _ in range(rank):
        axes = []
        if free and draw(st.booleans()):
            axes.append(AxisRef(free.pop(draw(st.integers(0, len(free) - 1)))))
        closed = draw(st.booleans())
        prio = draw(st.one_of(st.none(), st.integers(0, 3))) if axes or not closed else None
        dims.append(DimensionSharding(tuple(axes), closed, prio))
    ref = mesh_or_ref if mesh_or_ref is not None else draw(st.sampled_from(["mesh", MESH]))
    return TensorSharding(ref, tuple(dims))


def attr_dicts(registered: bool = False):
    return st.dictionaries(bare_names.map(lambda n: "t." + n), attributes(registered), max_size=2)


class _Builder:
    """Builds func bodies from drawn choices, keeping values usable by type."""

    def __init__(self, draw, funcs, registered):
        self.draw = draw
        self.funcs = funcs
        self.registered = registered

    def pick(self, values, t=None):
        pool = [v for v in values if t is None or v.type == t]
        return self.draw(st.sampled_from(pool)) if pool else None

    def fill(self, block: Block, values: list, depth: int) -> None:
        draw = self.draw
        for _ in range(draw(st.integers(0, 5))):
            kinds = ["add", "negate", "constant", "constraint", "group", "call", "named", "manual",
                     "while", "barrier"]
            if not self.registered:  # unknown ops; edges whose input may have several users
                kinds += ["generic", "edge"]
            kind = draw(st.sampled_from(kinds))
            op = self.make(kind, values, depth)
            if op is not None:
                block.append(op)
                values.extend(op.results)

    def make(self, kind, values, depth):
        draw = self.draw
        tensors = [v for v in values if isinstance(v.type, RankedTensorType)]
        static = [v for v in tensors if v.type.has_static_shape]
        attrs = draw(attr_dicts(self.registered))
        if kind == "add" and tensors:
            x = self.pick(tensors)
            y = self.pick(tensors, x.type)
            return Operation.create("stablehlo.add", [x, y], [x.type], attributes=attrs)
        negatable = [v for v in tensors if v.type.element_type != I1]  # stablehlo: no i1 negate
        if kind == "negate" and negatable:
            x = self.pick(negatable)
            sh = {"sdy.sharding": TensorShardingPerValue((draw(shardings(rank=x.type.rank)),))} \
                if draw(st.booleans()) else {}
            return Operation.create("stablehlo.negate", [x], [x.type], attributes=sh)
        if kind == "constant":
            t = draw(tensor_types(static=True))
            body = {F32: "1.500000e+00", I32: "-3", I1: "true", F64: "-2.000000e+00",
                    FloatType("bf16"): "0.000000e+00"}.get(t.element_type, "0")
            name = draw(st.sampled_from(["stablehlo.constant", "sdy.constant"]))
            return Operation.create(name, [], [t], {"value": DenseElementsAttr(body, t)}, attrs)
        if kind == "constraint" and tensors:
            x = self.pick(tensors)
            name = draw(st.sampled_from(["sdy.sharding_constraint", "sdy.reshard"]))
            return Operation.create(name, [x], [x.type], {"sharding": draw(shardings(rank=x.type.rank))})
        if kind == "group" and tensors:
            x = self.pick(tensors)
            return Operation.create("sdy.sharding_group", [x], [],
                                    {"group_id": IntegerAttr(draw(st.integers(0, 99)), I64)})
        if kind == "edge" and static:
            x = self.pick(static)
            props = {"sharding": draw(shardings(rank=x.type.rank))} if draw(st.booleans()) else {}
            return Operation.create("sdy.data_flow_edge", [x], [x.type], props)
        if kind == "call" and self.funcs:
            f = draw(st.sampled_from(self.funcs))
            ft = f.properties["function_type"].type
            args = [self.pick(values, t) for t in ft.inputs]
            if None in args:
                return None
            return Operation.create("func.call", args, ft.results, {"callee": SymbolRefAttr(f.properties["sym_name"].value)})
        if kind in ("named", "manual") and depth < 2:
            ins = draw(st.lists(st.sampled_from(values), max_size=2)) if values else []
            body = Block([v.type for v in ins])
            inner = list(body.arguments)
            self.fill(body, inner, depth + 1)
            outs = draw(st.lists(st.sampled_from(inner), max_size=2)) if inner else []
            body.append(Operation.create("sdy.return", outs))
            if kind == "named":
                props = {"name": StringAttr(draw(names))}
                if draw(st.booleans()) and all(isinstance(v.type, RankedTensorType) for v in ins):
                    props["in_shardings"] = TensorShardingPerValue(tuple(
                        draw(shardings(rank=v.type.rank, mesh_or_ref="mesh")) for v in ins))
            else:
                props = {"in_shardings": TensorShardingPerValue(tuple(
                    draw(shardings(rank=getattr(v.type, "rank", 0), mesh_or_ref="mesh")) for v in ins)),
                    "out_shardings": TensorShardingPerValue(tuple(
                        draw(shardings(rank=getattr(v.type, "rank", 0), mesh_or_ref="mesh")) for v in outs)),
                    "manual_axes": ManualAxes(())}
            return Operation.create(f"sdy.{kind}_computation", ins, [v.type for v in outs], props,
                                    regions=[Region([body])])
        if kind == "while" and tensors and depth < 2:
            ins = [self.pick(tensors)]
            ts = [v.type for v in ins]
            cond, body = Block(ts), Block(ts)
            c = Operation.create("stablehlo.constant", [], [RankedTensorType((), I1)],
                                 {"value": DenseElementsAttr("true", RankedTensorType((), I1))})
            cond.append(c)
            cond.append(Operation.create("stablehlo.return", [c.result]))
            inner = list(body.arguments)
            self.fill(body, inner, depth + 1)
            body.append(Operation.create("stablehlo.return", list(body.arguments)))
            return Operation.create("stablehlo.while", ins, ts, attributes=attrs,
                                    regions=[Region([cond]), Region([body])])
        if kind == "barrier" and values:
            ins = draw(st.lists(st.sampled_from(values), min_size=1, max_size=3))
            return Operation.create("stablehlo.optimization_barrier", ins, [v.type for v in ins])
        if kind == "generic":
            ins = draw(st.lists(st.sampled_from(values), max_size=3)) if values else []
            outs = draw(st.lists(value_types(), max_size=2))
            regions = []
            for _ in range(draw(st.integers(0, 2))):
                blocks = [Block(draw(st.lists(value_types(), max_size=2))) for _ in range(draw(st.integers(0, 3)))]
                for b in blocks:
                    if depth < 2 and draw(st.booleans()):
                        inner = list(b.arguments) + list(values)
                        self.fill(b, inner, depth + 1)
                    # the entry block cannot be a branch target (MLIR rejects it)
                    succ = draw(st.lists(st.sampled_from(blocks[1:]), max_size=2)) if len(blocks) > 1 else []
                    b.append(Operation.create("t.br", [], [], successors=succ))
                regions.append(Region(blocks))
            props = draw(st.dictionaries(bare_names, attributes(), max_size=2))
            return Operation.create("t." + draw(bare_names), ins, outs, props, attrs, regions)
        return None


@st.composite
def modules(draw, registered: bool = False):
    """A random module built through the IR API (valid enough to print and re-parse).

    With `registered`, only ops and attributes jaxlib knows, in modules that verify.
    """
    module = Module.create()
    module.body.append(Operation.create("sdy.mesh", [], [], {"sym_name": StringAttr("mesh"), "mesh": MESH}))
    funcs = []
    for i in range(draw(st.integers(0, 3))):
        arg_types = draw(st.lists(value_types(), max_size=3))
        block = Block(arg_types)
        values = list(block.arguments)
        _Builder(draw, funcs, registered).fill(block, values, 0)
        rets = draw(st.lists(st.sampled_from(values), max_size=2)) if values else []
        block.append(Operation.create("func.return", rets))
        props = {"sym_name": StringAttr(f"f{i}"),
                 "function_type": TypeAttr(FunctionType(tuple(arg_types), tuple(v.type for v in rets)))}
        if arg_types and draw(st.booleans()):
            arg_attrs = ArrayAttr(tuple(
                DictionaryAttr.from_dict({"sdy.sharding": draw(shardings(rank=getattr(t, "rank", 0)))})
                if isinstance(t, RankedTensorType) and draw(st.booleans()) else DictionaryAttr()
                for t in arg_types))
            if any(len(d) for d in arg_attrs):  # MLIR drops an all-empty list
                props["arg_attrs"] = arg_attrs
        if draw(st.booleans()):
            props["sym_visibility"] = StringAttr("private")
        func = Operation.create("func.func", [], [], props, draw(attr_dicts(registered)), [Region([block])])
        module.body.append(func)
        funcs.append(func)
    return module


def sharding_rules():
    """Random `#sdy.op_sharding_rule` values (factors i..z, z_1, ...)."""
    @st.composite
    def build(draw):
        n = draw(st.integers(1, 22))
        factor = st.integers(0, n - 1)
        tensor = st.lists(st.lists(factor, min_size=1, max_size=2, unique=True).map(tuple), max_size=3).map(tuple)
        special = st.lists(factor, max_size=2, unique=True).map(lambda xs: tuple(sorted(xs)))
        return OpShardingRule(
            tuple(draw(st.lists(tensor, min_size=1, max_size=2))), tuple(draw(st.lists(tensor, min_size=1, max_size=2))),
            tuple(draw(st.lists(st.integers(1, 64), min_size=n, max_size=n))),
            draw(special), draw(special), draw(special), draw(special), draw(st.booleans()))
    return build()


def ir_examples(default):
    """Examples per pure-Python test on random `modules()`: drawing one costs up to a second, so
    the default run is modest; SDY_IR_EXAMPLES=N runs N in each such test."""
    return int(os.environ.get("SDY_IR_EXAMPLES", default))
