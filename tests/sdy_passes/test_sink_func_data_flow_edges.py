"""`sdy-sink-func-data-flow-edges` (a func pass): func data-flow edges give their sharding to
their operand and go."""

import pytest

import sdy_passes
from sdy_passes.pass_manager import UnknownPassError
from tests.sdy_passes.propagation_pipeline_oracle import (
    assert_lit_file_matches, assert_pass_matches_stages,
)

EDGES = """sdy.mesh @mesh = <["x"=2]>
func.func private @foo(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}, %arg1: tensor<8xf32>) -> tensor<8xf32> {
  %0 = sdy.func_data_flow_edge %arg0 : tensor<8xf32>
  %1 = sdy.func_data_flow_edge %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x", ?}]>]>} : tensor<8xf32>
  %2 = stablehlo.add %0, %1 : tensor<8xf32>
  return %2 : tensor<8xf32>
}
"""


def test_operands_take_the_edge_sharding_or_become_open():
    m = sdy_passes.parse_module(EDGES)
    sdy_passes.run_passes(m, ["sdy-sink-func-data-flow-edges"])  # nested in func.func for us
    text = sdy_passes.print_module(m)
    assert "func_data_flow_edge" not in text
    assert ('@foo(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}]>}, '
            '%arg1: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}]>})') in text
    assert "stablehlo.add %arg0, %arg1" in text


def test_is_a_func_pass():
    with pytest.raises(UnknownPassError, match="restricted to 'func.func'"):
        sdy_passes.run_passes(sdy_passes.parse_module(EDGES), "builtin.module(sdy-sink-func-data-flow-edges)")


@pytest.mark.jaxlib
def test_lit_chunks_match_jaxlib():
    assert_lit_file_matches("sink_func_data_flow_edges.mlir", min_changed=6)


@pytest.mark.jaxlib
def test_pipeline_stages_match_jaxlib():
    assert_pass_matches_stages("sdy-sink-func-data-flow-edges", min_changed=5)
