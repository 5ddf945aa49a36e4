"""`symbol-dce`: unreferenced private funcs go, transitively; public symbols and meshes stay."""

import pytest

import sdy_passes
from tests.sdy_passes.pass_oracle import assert_match_jaxlib

TEXT = """sdy.mesh @mesh = <["x"=2]>
func.func @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<8xf32> {
  %0 = call @used(%arg0) : (tensor<8xf32>) -> tensor<8xf32>
  %1 = "stablehlo.custom_call"(%0) <{call_target_name = "foo", called_computations = [@by_custom_call]}> : (tensor<8xf32>) -> tensor<8xf32>
  return %1 : tensor<8xf32>
}
func.func private @used(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = call @used_by_used(%arg0) : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
func.func private @used_by_used(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}
func.func private @by_custom_call(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}
func.func private @dead(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = call @dead_by_dead(%arg0) : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
func.func private @dead_by_dead(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}
func.func private @self_recursive(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = call @self_recursive(%arg0) : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
func.func @public_unused() {
  return
}
"""


def test_erases_unreferenced_private_funcs_transitively():
    m = sdy_passes.parse_module(TEXT)
    sdy_passes.run_passes(m, ["symbol-dce"])
    names = [op.properties["sym_name"].value for op in m.ops]
    assert names == ["mesh", "main", "used", "used_by_used", "by_custom_call", "public_unused"]


@pytest.mark.jaxlib
def test_matches_jaxlib():
    assert_match_jaxlib([TEXT], ["symbol-dce"])
