"""Evaluators beyond the corpus: `rng_bit_generator` per algorithm, dtype and shape against JAX
(XLA:CPU) bit for bit; low-precision and integer variants of the corpus ops; StableHLO ops JAX
does not emit (cholesky, triangular_solve, broadcast, map, composite) by their definitions; and
`ShardedArray` arguments."""

from __future__ import annotations

import numpy as np
import pytest

import sdy_passes
import sharding
from sharding import TensorSharding
from tests.sdy_passes.interpreter_oracle import compare, corpus_results, decode
from tests.sdy_passes.test_interpreter_corpus import float_exact

_RNG = [(f"rbg_{alg}_{dt}_{'x'.join(map(str, shape)) or 'scalar'}",
         f"f = lambda k: lax.rng_bit_generator(k, {shape}, dtype=jnp.{dt}, "
         f"algorithm=lax.RandomAlgorithm.RNG_{alg})\nargs = (S(({n},), jnp.uint32),)")
        for alg, n in (("THREE_FRY", 4), ("PHILOX", 4), ("DEFAULT", 4))
        for dt, shape in (("uint32", (3, 5)), ("uint64", (7,)), ("uint8", (2, 3)), ("uint32", ()),
                          ("uint32", (5, 3)))]

EXTRA = _RNG + [
    ("bf16_ops", "f = lambda x, y: (jnp.tanh(x) * y - x / (jnp.abs(y) + 1), jnp.sum(x * y), x @ y.T)\n"
                 "args = (S((4, 8), jnp.bfloat16), S((4, 8), jnp.bfloat16))"),
    ("f16_ops", "f = lambda x, y: (jnp.exp(x) + y, jnp.max(x, axis=0), jnp.cumsum(x, axis=1))\n"
                "args = (S((4, 8), jnp.float16), S((4, 8), jnp.float16))"),
    ("int8_ops", "f = lambda x, y: (x * y + 3, lax.div(x, y), lax.rem(x, y), x >> 2, jnp.sum(x, axis=0))\n"
                 "args = (S((4, 8), jnp.int8), S((4, 8), jnp.int8))"),
    ("uint32_ops", "f = lambda x, y: (x * y, x // (y + 1), x ^ (y << 3), jnp.max(x), x.astype(jnp.float32))\n"
                   "args = (S((6,), jnp.uint32), S((6,), jnp.uint32))"),
    # (int4 arithmetic widened right after is App. B's contested row: XLA:CPU fuses and never wraps)
    ("int4_ops", "f = lambda x, y: (x + y, x * y, -x, x < y, x.astype(jnp.float32))\n"
                 "args = (S((8,), jnp.int4), S((8,), jnp.int4))"),
    ("cholesky_batched", "f = lambda a: jnp.linalg.cholesky(a @ jnp.swapaxes(a, -1, -2) + 4 * jnp.eye(3))\n"
                         "args = (S((2, 3, 3), jnp.float32),)"),
    ("argmax_int", "f = lambda x: (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0))\nargs = (S((5, 7), jnp.int32),)"),
    ("sort_desc_multi", "f = lambda a, b: lax.sort((a, b), num_keys=2, dimension=0)\n"
                        "args = (S((9, 2), jnp.int32), S((9, 2), jnp.float32))"),
    ("sort_large_ties", "f = lambda x: (jnp.sort(jnp.round(x * 2), axis=1), jnp.argsort(jnp.round(x * 2), axis=1))\n"
                        "args = (S((3, 1000), jnp.float32),)"),
    ("sort_nan", "f = lambda x: jnp.sort(jnp.where(x > 1, jnp.nan, x), axis=0)\nargs = (S((3, 1000), jnp.float32),)"),
    ("scatter_mul_dupes", "f = lambda x, i, u: x.at[i % 4].multiply(u)\n"
                          "args = (S((4, 3), jnp.float32), S((6,), jnp.int32), S((6, 3), jnp.float32))"),
    ("gather_batched", "f = jax.vmap(lambda x, i: x[i])\nargs = (S((3, 5, 2), jnp.float32), S((3, 4), jnp.int32))"),
    ("while_carry_mixed", "f = lambda x, n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 1.5 - 1), (0, x))\n"
                          "args = (S((3,), jnp.float32), S((), jnp.int32))"),
    ("switch_out_of_range", "f = lambda i, x: lax.switch(i, [jnp.sin, jnp.cos], x)\nargs = (S((), jnp.int32), S((4,), jnp.float32))"),
    ("conv_grouped_batch", "f = jax.jit(jax.grad(lambda x, w: (lax.conv_general_dilated(x, w, (1,), 'SAME', feature_group_count=2) ** 2).sum(), argnums=1))\n"
                           "args = (S((2, 4, 9), jnp.float32), S((6, 2, 3), jnp.float32))"),
    ("reduce_window_strided", "f = lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 3), (2, 1), ((1, 0), (1, 1)))\n"
                              "args = (S((7, 6), jnp.float32),)"),
]


_REFERENCE_DIFFERS = {"sort_nan"}
"""The reference interpreter's `compare` ignores `compare_type` (TOTALORDER is IEEE `<` there), so
JAX's sort comparator is no strict weak order on NaNs and its `std::stable_sort` places them
arbitrarily; we keep TOTALORDER (JAX's order) in both modes."""


@pytest.fixture(scope="module")
def results():
    return corpus_results((0,), EXTRA)


@pytest.mark.parametrize("numerics", ["fast", "reference"])
@pytest.mark.parametrize("name", [n for n, _ in EXTRA])
def test_extra_programs_equal_jax(results, name, numerics):
    r = results[f"{name}@0"]
    if "error" in r:
        pytest.skip(f"JAX refuses: {r['error'][:200]}")
    module = sdy_passes.parse_module(r["text"])
    got = sdy_passes.interpret(module, *[decode(x) for x in r["inputs"]], numerics=numerics)
    want = [decode(x) for x in r["outputs"]]
    exact = float_exact(module)
    for j, (g, w) in enumerate(zip(got, want)):
        ok, detail = compare(g, w, exact=exact)
        assert ok, f"output {j}: {detail}"
    ref = r.get("reference")
    if numerics == "reference" and ref is not None and "error" not in ref and name not in _REFERENCE_DIFFERS:
        for j, (g, w) in enumerate(zip(got, [decode(x) for x in ref["outputs"]])):
            ok, detail = compare(g, w, exact=True)
            assert ok, f"output {j} vs the reference interpreter: {detail}"


def test_stablehlo_ops_jax_does_not_emit():
    text = """func.func @main(%a: tensor<3x3xf32>, %b: tensor<3x2xf32>) -> (tensor<3x3xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<2x3x3xf32>, tensor<3x3xf32>, tensor<3x2xf32>, tensor<i32>) {
  %0 = stablehlo.cholesky %a, lower = true : tensor<3x3xf32>
  %1 = "stablehlo.triangular_solve"(%0, %b) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %2 = "stablehlo.triangular_solve"(%0, %b) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose TRANSPOSE>, unit_diagonal = true}> : (tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %3 = stablehlo.broadcast %a, sizes = [2] : (tensor<3x3xf32>) -> tensor<2x3x3xf32>
  %4 = "stablehlo.map"(%a, %a) ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %s = stablehlo.multiply %x, %y : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {dimensions = array<i64: 0, 1>} : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  %5 = stablehlo.composite "my.double" %b {decomposition = @double} : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %6 = stablehlo.get_dimension_size %b, dim = 1 : (tensor<3x2xf32>) -> tensor<i32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<3x3xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<2x3x3xf32>, tensor<3x3xf32>, tensor<3x2xf32>, tensor<i32>
}
func.func private @double(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %0 = stablehlo.add %x, %x : tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}"""
    a = np.array([[4, 1, 0], [1, 3, 1], [0, 1, 2]], np.float32)
    b = np.arange(6, dtype=np.float32).reshape(3, 2)
    chol, x, xt, bc, mp, comp, size = sdy_passes.interpret(text, a, b)
    assert np.allclose(chol @ chol.T, a, atol=1e-5) and np.array_equal(np.triu(chol, 1), np.zeros((3, 3)))
    assert np.allclose(chol @ x, b, atol=1e-5)
    unit = np.tril(chol, -1) + np.eye(3)
    assert np.allclose(unit.T @ xt, b, atol=1e-5)
    assert np.array_equal(bc, np.broadcast_to(a, (2, 3, 3))) and np.array_equal(mp, a * a)
    assert np.array_equal(comp, 2 * b) and size == 2


def test_sharded_array_arguments_are_their_global_value():
    dm = sharding.DeviceMesh('<["x"=2, "y"=2]>')
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    sa = dm.shard(x, TensorSharding.parse('#sdy.sharding<@m, [{"x", "y"}, {}]>'))
    text = ("func.func @main(%a: tensor<4x3xf32>) -> tensor<4x3xf32> {\n"
            "  %0 = stablehlo.negate %a : tensor<4x3xf32>\n  return %0 : tensor<4x3xf32>\n}")
    (out,) = sdy_passes.interpret(text, sa)
    assert np.array_equal(out, -x)


def test_chlo_broadcasting_and_constant_like():
    text = """func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = "chlo.broadcast_compare"(%a, %b) {broadcast_dimensions = array<i64: 1>, comparison_direction = #chlo<comparison_direction GT>} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %1 = "chlo.constant_like"(%a) {value = 2.5 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = "chlo.broadcast_add"(%a, %b) {broadcast_dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0, %1, %2 : tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>
}"""
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([1, 4, 0], np.float32)
    gt, const, added = sdy_passes.interpret(text, a, b)
    assert np.array_equal(gt, a > b) and np.array_equal(const, np.full((2, 3), 2.5, np.float32))
    assert np.array_equal(added, a + b)


def test_collectives_inside_a_called_function_of_a_manual_computation():
    text = """sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%a: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %0 = sdy.manual_computation(%a) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x", "y"} (%b: tensor<2x2xf32>) {
    %1 = func.call @body(%b) : (tensor<2x2xf32>) -> tensor<2x2xf32>
    sdy.return %1 : tensor<2x2xf32>
  } : (tensor<4x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}
func.func private @body(%b: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %1 = "stablehlo.all_reduce"(%b) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, use_global_device_ids}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %s = stablehlo.add %x, %y : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %1 : tensor<2x2xf32>
}"""
    a = np.arange(8, dtype=np.float32).reshape(4, 2)
    (out,) = sdy_passes.interpret(text, a)
    total = a[:2] + a[2:]  # psum over "x": both halves become the sum
    assert np.array_equal(out, np.concatenate([total, total]))
