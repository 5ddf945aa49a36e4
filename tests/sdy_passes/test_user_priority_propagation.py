"""`sdy-user-priority-propagate` against jaxlib 0.10.2: Shardy's own lit cases (rule-annotated by jaxlib,
see `propagation_oracle`) and random modules."""

import pathlib
import sys

import pytest

from tests.sdy_passes.propagation_oracle import check_random, lit_case_test, random_module_tests

test_lit_case_matches_jaxlib = lit_case_test("user-priority-propagate")

# jaxlib runs each module twice: its user-priority pass segfaults intermittently (spec §4.6).
test_random_modules_match_jaxlib, test_random_data_flow_modules_match_jaxlib = random_module_tests((
    "builtin.module(sdy-user-priority-propagate)",
), "sdy-user-priority-propagate", runs=2)


@pytest.mark.jaxlib
def test_repeated_steps_match_jaxlib():
    # The benchmark's transformer layers repeat each op's inputs, so most steps reuse an earlier
    # op's outcome (Propagator.steps); the result must still be jaxlib's.
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "asv_bench" / "benchmarks"))
    import sdy_propagation

    text = sdy_propagation.transformer_module(3, batch=4, seq=8, model=16, heads=2, hidden=32)
    # Two ops with equal operands and rule, one result closed and empty: equal steps must
    # not be confused when any input differs.
    twins = """sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %0 = stablehlo.negate %arg0 : tensor<8x8xf32>
  %1 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}]>]>} : tensor<8x8xf32>
  %2 = stablehlo.negate %arg0 : tensor<8x8xf32>
  return %0, %1 : tensor<8x8xf32>, tensor<8x8xf32>
}"""
    assert check_random([text, twins], "builtin.module(sdy-user-priority-propagate)", runs=2) == 2
