"""`sdy_passes.common.op_properties` reads the ODS traits in the op table: propagation erases unused
ops without memory effects (chlo ops, `arith.constant`, `dynamic_broadcast_in_dim` included) and
schedules element-wise ops (chlo's too) as jaxlib 0.10.2 does."""

import pytest

from tests.sdy_passes.pass_oracle import run_jaxlib_matrix, compare

MESH = 'sdy.mesh @mesh = <["a"=2, "b"=2]>\n'
ARG0_SHARDED = ('%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}, '
                '%arg1: tensor<8x8xf32>')
ARG1_SHARDED = ('%arg0: tensor<8x8xf32>, '
                '%arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}')
T = "tensor<8x8xf32>"
ADD = f"  %r = stablehlo.add %arg0, %arg1 : {T}\n  return %r : {T}"
DOT = (f"stablehlo.dot_general %0, %arg1, contracting_dims = [1] x [0] : ({T}, {T}) -> {T}")


def _func(body, args=ARG0_SHARDED):
    return MESH + f"func.func @main({args}) -> {T} {{\n{body}\n}}\n"


TEXTS = [
    _func(f"  %0 = chlo.erf %arg0 : {T} -> {T}\n{ADD}"),
    _func(f"  %0 = chlo.broadcast_add %arg0, %arg1 : ({T}, {T}) -> {T}\n{ADD}"),
    _func(f"  %0 = arith.constant dense<1.0> : {T}\n{ADD}"),
    _func("  %c = stablehlo.constant dense<[8, 8]> : tensor<2xi64>\n"
          f"  %0 = stablehlo.dynamic_broadcast_in_dim %arg0, %c, dims = [0, 1] : ({T}, tensor<2xi64>) -> {T}\n"
          + ADD),
    _func(f"  %0 = chlo.erf %arg0 : {T} -> {T}\n  %1 = {DOT}\n  %2 = chlo.erf %1 : {T} -> {T}\n"
          f"  return %2 : {T}", ARG1_SHARDED),
    _func(f"  %0 = chlo.broadcast_multiply %arg0, %arg1 : ({T}, {T}) -> {T}\n  %1 = {DOT}\n"
          f"  return %1 : {T}", ARG1_SHARDED),
]
PASSES = [["sdy-basic-propagate"], ["sdy-op-priority-propagate"], ["sdy-aggressive-propagate"]]


@pytest.mark.filterwarnings("ignore")
def test_dead_and_elementwise_ops_follow_their_traits_as_in_jaxlib():
    failures = []
    for text, (canonical, verdicts) in zip(TEXTS, run_jaxlib_matrix(TEXTS, PASSES)):
        assert canonical.ok, canonical.errors
        for passes, verdict in zip(PASSES, verdicts):
            report = compare(canonical.text, passes, verdict)
            if report:
                failures.append(f"{passes[0]}: {report}\n--- input ---\n{canonical.text}")
    assert not failures, f"{len(failures)} disagreement(s); first:\n{failures[0]}"
