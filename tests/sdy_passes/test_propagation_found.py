"""Disagreements with jaxlib 0.10.2 that the propagation fuzzers found (minimal modules), kept as
regression tests: each pipeline must print what jaxlib prints (jaxlib runs live, one child)."""

import pytest

from tests.sdy_passes.propagation_oracle import check_random_module

pytestmark = pytest.mark.jaxlib

_EDGES = "builtin.module(sdy-add-data-flow-edges,{},func.func(sdy-sink-data-flow-edges))"

FOUND = [
    # A free axis propagated before a manual one (`{"a", "c"}`, "c" manual): Shardy finds the end
    # of a dim's manual prefix by binary search (llvm::partition_point), which on `[a, c]`
    # answers 2, so erasing the manual axes erases both and nothing enters the body.
    ("manual_axis_after_free_axis", _EDGES.format("sdy-basic-propagate"), """
sdy.mesh @mesh = <["a"=2, "e"=1, "c"=4]>
func.func @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", "c", ?}]>}) -> tensor<8xf32> {
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{?}]>] out_shardings=[<@mesh, [{?}]>] manual_axes={"c"} (%x: tensor<8xf32>) {
    sdy.return %x : tensor<8xf32>
  } : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}"""),
]


@pytest.mark.parametrize("pipeline, text", [pytest.param(p, t, id=n) for n, p, t in FOUND])
def test_found_module_matches_jaxlib(pipeline, text):
    assert check_random_module(text, [pipeline])
