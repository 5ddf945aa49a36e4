"""`sdy-export-named-computations`: named computations become calls of new private funcs."""

import pytest

import sdy_passes
from tests.sdy_passes.propagation_pipeline_oracle import (
    assert_lit_file_matches, assert_pass_matches_stages,
)

TWO_FOOS = """sdy.mesh @mesh = <["x"=2]>
func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = sdy.named_computation<"foo">(%arg0) (%arg1: tensor<8xf32>) {
    %1 = sdy.data_flow_edge %arg1 sharding=<@mesh, [{"x"}]> : tensor<8xf32>
    %2 = stablehlo.negate %1 : tensor<8xf32>
    sdy.return %2 : tensor<8xf32>
  } {execution_thread = "host", other = 1 : i64} : (tensor<8xf32>) -> tensor<8xf32>
  %3 = sdy.data_flow_edge %0 : tensor<8xf32>
  %4 = sdy.named_computation<"foo">(%3) (%arg1: tensor<8xf32>) {
    sdy.return %arg1 : tensor<8xf32>
  } : (tensor<8xf32>) -> tensor<8xf32>
  return %4 : tensor<8xf32>
}
func.func private @foo_0(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}
"""


def test_computations_become_funcs_named_after_them():
    m = sdy_passes.parse_module(TWO_FOOS)
    sdy_passes.run_passes(m, ["sdy-export-named-computations"])
    text = sdy_passes.print_module(m)
    assert "named_computation" not in text and "data_flow_edge" not in text
    # `foo` is free, `foo_0` is taken: the second one is `foo_1` (one counter per run)
    assert [f.properties["sym_name"].value for f in m.funcs()] == ["main", "foo_0", "foo", "foo_1"]
    # execution_thread goes to the func, other attributes stay on the call; the result edge
    # had no sharding, so the call has none
    assert "call @foo(%arg0) {other = 1 : i64} :" in text
    assert ('func.func private @foo(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, '
            '[{"x"}]>}) -> tensor<8xf32> attributes {execution_thread = "host", '
            'sdy.original_func_name = "foo"}') in text


@pytest.mark.jaxlib
def test_lit_chunks_match_jaxlib():
    assert_lit_file_matches("export_named_computations.mlir", min_changed=25)


@pytest.mark.jaxlib
def test_pipeline_stages_match_jaxlib():
    assert_pass_matches_stages("sdy-export-named-computations", min_changed=20)
