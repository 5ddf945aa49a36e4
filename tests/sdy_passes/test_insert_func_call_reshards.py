"""`sdy-insert-func-call-reshards`: calls take their callee's result shardings, reshards after
them restore what the users expect."""

import pytest

import sdy_passes
from tests.sdy_passes.propagation_pipeline_oracle import (
    assert_lit_file_matches, assert_pass_matches_stages,
)

TWO_RESULTS = """sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0:2 = call @foo(%arg0) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"y"}]>, <@mesh, [{"y"}]>]>} : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  return %0#0, %0#1 : tensor<8xf32>, tensor<8xf32>
}
func.func private @foo(%arg0: tensor<8xf32>) -> (tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}, tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}], unreduced={"y"}>}) {
  return %arg0, %arg0 : tensor<8xf32>, tensor<8xf32>
}
"""


def test_reshards_follow_the_call_in_reverse_result_order():
    m = sdy_passes.parse_module(TWO_RESULTS)
    sdy_passes.run_passes(m, ["sdy-insert-func-call-reshards"])
    lines = [line.strip() for line in sdy_passes.print_module(m).splitlines()]
    start = next(i for i, line in enumerate(lines) if "call @foo" in line)
    assert lines[start:start + 4] == [
        '%0:2 = call @foo(%arg0) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>, '
        '<@mesh, [{"x"}], unreduced={"y"}>]>} : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)',
        '%1 = sdy.reshard %0#1 <@mesh, [{"y"}]> : tensor<8xf32>',
        '%2 = sdy.reshard %0#0 <@mesh, [{"y"}]> : tensor<8xf32>',
        "return %2, %1 : tensor<8xf32>, tensor<8xf32>"]


@pytest.mark.jaxlib
def test_lit_chunks_match_jaxlib():
    assert_lit_file_matches("insert_func_call_reshards.mlir", min_changed=5)


@pytest.mark.jaxlib
def test_pipeline_stages_match_jaxlib():
    assert_pass_matches_stages("sdy-insert-func-call-reshards", min_changed=2)
