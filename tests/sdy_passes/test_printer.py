"""The printer: generic and pretty forms, by hand and against jaxlib's MLIR printer."""

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdy_passes import (
    IRParseError,
    ArrayAttr, Block, DictionaryAttr, FloatAttr, IntegerAttr, Module, Operation, Region,
    StringAttr, TypeAttr, parse_module, parse_type, print_module, print_op,
)
from sdy_passes.attributes import F32, F64, I32, FloatType, FunctionType, RankedTensorType, round_float
from sdy_passes.element_types import numpy_dtype
from tests.sdy_passes.pass_oracle import jaxlib_parse
from tests.sdy_passes.ssa import assert_same_ir
from tests.sdy_passes.strategies import modules

T = RankedTensorType((8,), F32)


def _module_with(*ops):
    block = Block([T])
    for op in ops:
        block.append(op)
    func = Operation.create("func.func", properties={
        "sym_name": StringAttr("f"), "function_type": TypeAttr(FunctionType((T,), ()))},
        regions=[Region([block])])
    return Module.create([func]), block


def test_generic_form_layout():
    m, block = _module_with()
    neg = Operation.create("stablehlo.negate", [block.arguments[0]], [T], attributes={"b.x": IntegerAttr(1, I32)})
    two = Operation.create("t.two", [neg.result], [T, T], properties={"z": StringAttr("q"), "a": ArrayAttr(())})
    block.append(neg)
    block.append(two)
    block.append(Operation.create("func.return", [two.results[1]]))
    assert print_module(m, generic=True) == '''"builtin.module"() ({
  "func.func"() <{function_type = (tensor<8xf32>) -> (), sym_name = "f"}> ({
  ^bb0(%arg0: tensor<8xf32>):
    %0 = "stablehlo.negate"(%arg0) {b.x = 1 : i32} : (tensor<8xf32>) -> tensor<8xf32>
    %1:2 = "t.two"(%0) <{a = [], z = "q"}> : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
    "func.return"(%1#1) : (tensor<8xf32>) -> ()
  }) : () -> ()
}) : () -> ()
'''


def test_empty_regions_and_blocks():
    op = Operation.create("t.r", regions=[Region(), Region([Block()])])
    assert print_op(op) == '"t.r"() ({\n}, {\n^bb0:\n}) : () -> ()'


def test_successors_and_block_labels():
    b0, b1 = Block(), Block([T])
    b0.append(Operation.create("t.br", successors=[b1]))
    b1.append(Operation.create("t.ret", [b1.arguments[0]]))
    op = Operation.create("t.graph", regions=[Region([b0, b1])])
    assert print_op(op) == ('"t.graph"() ({\n  "t.br"()[^bb1] : () -> ()\n^bb1(%arg0: tensor<8xf32>):\n'
                            '  "t.ret"(%arg0) : (tensor<8xf32>) -> ()\n}) : () -> ()')


def test_dictionary_keys_sorted_and_quoted():
    d = DictionaryAttr.from_dict({"z": IntegerAttr(1), "a b": StringAttr("\u00e9")})
    assert str(d) == '{"a b" = "\\C3\\A9", z = 1 : i64}'


def test_array_elements_leave_out_default_types():
    arr = ArrayAttr((IntegerAttr(1), IntegerAttr(2, I32), FloatAttr(0.5), FloatAttr(math.nan, F64)))
    assert str(arr) == "[1, 2 : i32, 5.000000e-01, 0x7FF8000000000000 : f64]"


PRETTY = '''module {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @f(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"b"}]>}) {
    %0 = sdy.sharding_constraint %arg0 <@mesh, [{}, {"b"}]> : tensor<8x8xf32>
    %1 = sdy.reshard %0 <@mesh, [{"a"}, {}]> : tensor<8x8xf32>
    %abs = stablehlo.abs %1 : tensor<8x8xf32>
    %2 = sdy.data_flow_edge %abs sharding=<@mesh, [{"a"}, {}]> : tensor<8x8xf32>
    sdy.sharding_group %2 group_id=3 : tensor<8x8xf32>
    %3 = sdy.constant {foo} dense<2.000000e+00> : tensor<f32>
    %4 = sdy.manual_computation(%2, %arg0) in_shardings=[<@mesh, [{"a"}, {}]>, <@mesh, [{}, {}]>] out_shardings=[<@mesh, [{"a"}, {}]>] manual_axes={"a"} (%arg1: tensor<4x8xf32>, %arg2: tensor<8x8xf32>) {
      sdy.return %arg1 : tensor<4x8xf32>
    } : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %5:2 = sdy.named_computation<"nc">(%4) in_shardings=[<@mesh, [{"a"}, {}]>] out_shardings=[<@mesh, [{"a"}, {}]>, <@mesh, [{}, {}]>] (%arg1: tensor<8x8xf32>) {
      sdy.return %arg1, %arg1 : tensor<8x8xf32>, tensor<8x8xf32>
    } : (tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>)
    %6 = sdy.propagation_barrier %5#0 allowed_direction=NONE : tensor<8x8xf32>
    %7 = stablehlo.add %6, %5#1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {"b"}]>]>} : tensor<8x8xf32>
    %8 = stablehlo.iota dim = 0 : tensor<8xi32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0] : (tensor<8xi32>) -> tensor<8x8xi32>
    %10 = stablehlo.reshape %9 : (tensor<8x8xi32>) -> tensor<64xi32>
    %11 = stablehlo.slice %10 [0:8] : (tensor<64xi32>) -> tensor<8xi32>
    %12 = stablehlo.dot %7, %7 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %13 = stablehlo.dot_general %7, %12, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %14 = stablehlo.compare LT, %13, %7 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xi1>
    %15 = call @g(%14) : (tensor<8x8xi1>) -> tensor<8x8xi1>
    return %13 : tensor<8x8xf32>
  }
  func.func private @g(%arg0: tensor<8x8xi1>) -> tensor<8x8xi1> {
    return %arg0 : tensor<8x8xi1>
  }
}
'''


def test_pretty_form_reads_back():
    m = parse_module(PRETTY)
    pretty = print_module(m)
    assert print_module(parse_module(pretty)) == pretty
    assert print_module(parse_module(pretty), generic=True) == print_module(m, generic=True)
    # Same text as the input, but for SSA names (ours are numbered module-wide).
    assert [line.split("%")[0] for line in pretty.splitlines()] == [
        line.split("%")[0] for line in PRETTY.splitlines()]


def test_unknown_ops_print_generic_in_pretty_mode():
    m = parse_module('"t.x"() {a = 1 : i32} : () -> ()')
    assert print_module(m) == 'module {\n  "t.x"() {a = 1 : i32} : () -> ()\n}\n'


@pytest.mark.jaxlib
def test_pretty_example_matches_jaxlib_both_ways():
    (r,) = jaxlib_parse([PRETTY])
    generic, pretty = r["generic"], r["pretty"]
    ours = parse_module(PRETTY)
    assert_same_ir(print_module(ours, generic=True), generic)
    assert_same_ir(print_module(parse_module(pretty), generic=True), generic)
    assert print_module(ours, mlir_names=True) == pretty  # byte for byte, SSA names included


@pytest.mark.jaxlib
@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(modules(registered=True), min_size=60, max_size=60))
def test_random_modules_print_as_jaxlib_prints_them(batch):
    generic = [print_module(m, generic=True) for m in batch]
    exact = [print_module(m, generic=True, mlir_names=True) for m in batch]
    pretty = [print_module(m, mlir_names=True) for m in batch]
    results = [(r.get("generic"), r.get("pretty") or r["error"]) for r in jaxlib_parse(generic + pretty)]
    for ours, ours_exact, ours_pretty, (g, p) in zip(generic, exact, pretty, results[:len(batch)]):
        assert g is not None, p
        assert_same_ir(ours, g)                                    # generic printer
        assert ours_exact == g                                     # ... with MLIR's names
        assert ours_pretty == p                                    # pretty printer, names too
        assert_same_ir(print_module(parse_module(p), generic=True), ours)  # reading jaxlib's pretty
    for ours, (g, _) in zip(generic, results[len(batch):]):
        assert g is not None, _
        assert_same_ir(g, ours)                                    # jaxlib reads our pretty form


_FLOAT_TYPES = [F32, F64, FloatType("bf16"), FloatType("f16")]


@pytest.mark.jaxlib
@settings(max_examples=1, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_FLOAT_TYPES), st.floats(allow_nan=False, allow_infinity=False, width=64)),
                min_size=200, max_size=200))
def test_float_printing_matches_jaxlib(values):
    values = [(t, round_float(v, t)) for t, v in values]
    values = [(t, v) for t, v in values if math.isfinite(v)]
    values += [(F32, 1e-5), (F64, 1e-7), (F64, 1000001.0), (FloatType("bf16"), 0.1), (F32, -0.0)]
    attrs = ", ".join(f"t.v{i} = {FloatAttr(v, t)}" for i, (t, v) in enumerate(values))
    text = f'"func.func"() <{{function_type = () -> (), sym_name = "f", sym_visibility = "private"}}> ({{\n}}) {{{attrs}}} : () -> ()'
    ours = print_module(parse_module(text), generic=True)
    (r,) = jaxlib_parse([text])
    jax_generic = r["generic"]
    assert ours == jax_generic


def test_arith_constants_print_with_mlirs_names():
    # jaxlib 0.10.2's print of this text, byte for byte.
    text = '''module {
  func.func @f() -> (i32, i1, tensor<2xf32>, index, tensor<2xi32>) {
    %c3_i32 = arith.constant 3 : i32
    %true = arith.constant true
    %cst = arith.constant dense<1.000000e+00> : tensor<2xf32>
    %c0 = arith.constant 0 : index
    %cst_0 = arith.constant dense<1> : tensor<2xi32>
    return %c3_i32, %true, %cst, %c0, %cst_0 : i32, i1, tensor<2xf32>, index, tensor<2xi32>
  }
}
'''
    assert print_module(parse_module(text)) == text


def test_func_data_flow_edge_pretty_form():
    text = '''module {
  func.func @f(%arg0: tensor<8xf32>) -> tensor<8xf32> {
    %0 = sdy.func_data_flow_edge %arg0 : tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}
'''
    module = parse_module(text)
    assert print_module(module) == text
    assert '"sdy.func_data_flow_edge"(%arg0) : (tensor<8xf32>) -> tensor<8xf32>' in print_module(module, generic=True)


@pytest.mark.jaxlib
@settings(max_examples=1, deadline=None)
@given(st.integers(0, 2**32))
def test_every_op_familys_pretty_form_is_jaxlibs_when_types_coincide(seed):
    """Each op family of op_gen with all element types made one (i1, i32 or f32): pretty forms
    that collapse equal types (select's predicate equal to its operands) print as jaxlib's do,
    and jaxlib reads them back."""
    import random
    import re

    from tests.sdy_passes import op_gen

    rng = random.Random(seed)
    texts = [re.sub(r"(?<=[x<])(f32|i32|i1)>", dtype + ">", op_gen.case(family, rng))
             for family in op_gen.FAMILIES for _ in range(3) for dtype in ("i1", "i32", "f32")]
    texts = [t for t, r in zip(texts, jaxlib_parse(texts)) if not r.get("error")]
    ours = [print_module(parse_module(t), mlir_names=True) for t in texts]
    for text, mine, theirs in zip(texts, ours, jaxlib_parse(texts)):
        assert mine == theirs["pretty"], text
    for mine, back in zip(ours, jaxlib_parse(ours)):
        assert back.get("error") is None, (mine, back["error"])


def test_select_takes_two_types_or_a_function_type():
    text = ("func.func @f(%p: tensor<2xi1>, %a: tensor<2xi1>) -> tensor<2xi1> {\n"
            "  %0 = stablehlo.select %p, %a, %a : {types}\n  return %0 : tensor<2xi1>\n}\n")
    two = text.replace("{types}", "tensor<2xi1>, tensor<2xi1>")
    assert print_module(parse_module(two)) == print_module(parse_module(print_module(parse_module(two))))
    assert "stablehlo.select %arg0, %arg1, %arg1 : tensor<2xi1>, tensor<2xi1>" in print_module(parse_module(two))
    for types in ("tensor<2xi1>", "tensor<2xi1>, tensor<2xi1>, tensor<2xi1>"):
        with pytest.raises(IRParseError) as info:
            parse_module(text.replace("{types}", types))
        assert info.value.message == "custom op 'stablehlo.select' expected functional type or list of two types"
        assert (info.value.line, info.value.col) == (2, 38)


_EXPORT_CODE = """
import jax, jax.numpy as jnp
from jax import export
b, bc = export.symbolic_shape("b, 4"), export.symbolic_shape("b, c")
add = jax.lax.add
programs = [
    (lambda x: x + 1.0, b), (lambda x: jnp.broadcast_to(x[:, :1], x.shape), b), (lambda x: x.reshape(-1), b),
    (lambda x: jnp.sum(x, axis=0), b), (lambda x: jax.lax.reduce_window(x, 0., add, (2, 1), (1, 1), "SAME"), b),
    (lambda x: jnp.where(x > 0, x, 0.), bc), (lambda x: jnp.concatenate([x, x]), bc), (lambda x: x @ x.T, b),
    (lambda x: jnp.cumsum(x, axis=0), b), (lambda x: jax.nn.softmax(x), bc), (lambda x: x[::2], b),
    (lambda x: jnp.pad(x, ((1, 1), (0, 0))), b), (lambda x: jnp.argmax(x, axis=0), b), (lambda x: jnp.sort(x, axis=0), b),
    (lambda x: jnp.arange(x.shape[0]) * x[:, 0], b), (lambda x: jnp.zeros_like(x) + jnp.ones(x.shape), bc),
    (lambda x: jax.lax.dynamic_slice(x, (1, 0), (1, 4)), b), (lambda x: jnp.mean(x) * x, b),
    (lambda x: jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (2, 2), (1, 1), "VALID"), bc),
    (lambda x: x.reshape(x.shape[0] // 2, 8) if False else x.reshape(-1, 2), b),
]
RESULT = [export.export(jax.jit(f))(jax.ShapeDtypeStruct(s, jnp.float32)).mlir_module() for f, s in programs]
"""

_DYNAMIC_OPS = [
    '"stablehlo.dynamic_broadcast_in_dim"(%a, %s) <{broadcast_dimensions = array<i64: 0, 1>, '
    'known_expanding_dimensions = array<i64: 1>, known_nonexpanding_dimensions = array<i64: 0>}> '
    ': (tensor<?x1xf32>, tensor<2xi64>) -> tensor<?x4xf32>',
    '"stablehlo.dynamic_broadcast_in_dim"(%a, %s) <{broadcast_dimensions = array<i64: 0, 1>, '
    'known_nonexpanding_dimensions = array<i64: 0>}> : (tensor<?x1xf32>, tensor<2xi64>) -> tensor<?x4xf32>',
    '"stablehlo.dynamic_reshape"(%a, %s) : (tensor<?x1xf32>, tensor<2xi64>) -> tensor<?x?xf32>',
    '"stablehlo.dynamic_iota"(%s) <{iota_dimension = 1 : i64}> : (tensor<2xi64>) -> tensor<?x4xf32>',
    '"stablehlo.custom_call"(%a, %s) <{call_target_name = "stablehlo.dynamic_reduce_window"}> '
    ': (tensor<?x1xf32>, tensor<2xi64>) -> tensor<?x1xf32>',
]


@pytest.mark.jaxlib
def test_shape_polymorphic_programs_print_as_jaxlib_prints_them():
    """What `jax.export` writes under symbolic shapes (dynamic_broadcast_in_dim, dynamic_iota,
    dynamic_reshape, reduce windows, ...) and the dynamic ops with every optional attribute:
    read, printed as jaxlib prints them, and read back by jaxlib."""
    from tests.jaxlib_child import run_child

    texts = run_child(_EXPORT_CODE, {}, timeout=600)
    texts += ['func.func @f(%a: tensor<?x1xf32>, %s: tensor<2xi64>) {\n  %0 = ' + op + '\n  return\n}'
              for op in _DYNAMIC_OPS]
    ours = [print_module(parse_module(t), mlir_names=True) for t in texts]
    for text, mine, theirs in zip(texts, ours, jaxlib_parse(texts)):
        assert mine == theirs["pretty"], text
    for mine, back in zip(ours, jaxlib_parse(ours)):
        assert back.get("error") is None, (mine, back["error"])


def _dense_literals(rng):
    """(body, type) pairs around MLIR's hex threshold of 100 elements: random decimals, float
    midpoints (round to nearest even) and near-midpoints (rounding through f64), denormals,
    overflow, -0.0, splats, nested lists, and hex blobs of random bits (NaN payloads included)."""
    def decimals(t, n):
        dt = numpy_dtype(FloatType(t))
        bits = rng.integers(0, 1 << (8 * dt.itemsize), n, dtype=np.uint64).astype(f"u{dt.itemsize}")
        with np.errstate(invalid="ignore"):
            values = bits.view(dt).astype(np.float64)
        finite = values[np.isfinite(values)]
        nxt = np.nextafter(finite.astype(dt), dt.type(np.inf)).astype(np.float64)
        with localcontext(prec=1200):  # exact midpoints (f64 has up to 767 significant digits)
            mids = [Decimal(a) + (Decimal(b) - Decimal(a)) / 2 for a, b in zip(finite, nxt) if np.isfinite(b)]
            pool = ([repr(float(v)) for v in finite] + [f"{m:e}" for m in mids]
                    + [f"{m + m * Decimal(int(s)) * Decimal(10) ** -25:e}" for m, s in zip(mids, rng.choice([-1, 1], len(mids)))]
                    + [f"{v:.3e}" for v in rng.standard_normal(n) * 10.0 ** rng.integers(-50, 40, n)]
                    + ["-0.0", "0.0", "1.0e-45", "1.0e-320", "3.5e38"]
                    + ["1.0e400"] * (t in ("f32", "f16", "bf16", "f64", "f8E5M2")))  # beyond f64: inf
        return [x if "." in x else x.replace("e", ".0e", 1) for x in rng.choice(pool, n)]

    out = []
    for t in ("f32", "f16", "bf16", "f64", "f8E4M3FN", "f8E5M2", "f4E2M1FN"):
        for n in (3, 100, 101, 160):
            out.append(("[" + ", ".join(decimals(t, n)) + "]", f"tensor<{n}x{t}>"))
        out.append(("[" + ", ".join(["1.5e+00"] * 120) + "]", f"tensor<120x{t}>"))
        rows = decimals(t, 120)
        out.append(("[" + ", ".join("[" + ", ".join(rows[i:i + 12]) + "]" for i in range(0, 120, 12)) + "]",
                    f"tensor<10x12x{t}>"))
    for t, lo, hi in (("i1", 0, 2), ("i4", -8, 8), ("ui4", 0, 16), ("i8", -128, 256), ("ui16", 0, 1 << 16),
                      ("si32", -(1 << 31), 1 << 31), ("i64", -(1 << 63), 1 << 63)):
        for n in (3, 101):
            values = [int(v) for v in rng.integers(lo, hi, n, dtype=np.int64 if lo < 0 else np.uint64)]
            out.append(("[" + ", ".join(("true" if v else "false") if t == "i1" else str(v) for v in values) + "]",
                        f"tensor<{n}x{t}>"))
    for t in ("f32", "f16", "bf16", "f64", "f8E4M3FN", "i1", "i4", "i8", "i64"):
        dt = numpy_dtype(parse_type(t))
        top = 2 if t == "i1" else 16 if dt.name in ("int4",) else 256
        for n in (1, 5, 100, 101, 130):
            raw = rng.integers(0, top, n * dt.itemsize, dtype=np.uint8)
            out.append(('"0x' + raw.tobytes().hex() + '"', f"tensor<{n}x{t}>"))
            out.append(('"0x' + np.tile(raw[:dt.itemsize], n).tobytes().hex() + '"', f"tensor<{n}x{t}>"))
    return out


@pytest.mark.jaxlib
@pytest.mark.parametrize("seed", [0, 1])
def test_dense_literals_print_as_jaxlib_prints_them(seed):
    """Dense constants read (decimal lists all at once above the threshold) and printed as MLIR
    does: a hex blob above 100 elements unless a splat, decimals at or below it."""
    texts = [f"func.func @f() -> {t} {{\n  %0 = stablehlo.constant dense<{b}> : {t}\n  return %0 : {t}\n}}\n"
             for b, t in _dense_literals(np.random.default_rng(seed))]
    theirs = jaxlib_parse(texts)
    checked = 0
    for text, r in zip(texts, theirs):
        if r.get("error"):
            continue
        module = parse_module(text)
        assert print_module(module) == r["pretty"], text[:300]
        assert print_module(module, generic=True) == r["generic"], text[:300]
        checked += 1
    assert checked > 0.95 * len(texts)
