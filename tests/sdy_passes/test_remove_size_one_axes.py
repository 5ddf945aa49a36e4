"""`sdy-remove-size-one-axes`: size-1 axes leave every sharding, the meshes keep them."""

import pytest

import sdy_passes
from tests.sdy_passes.pass_oracle import assert_match_jaxlib

TEXT = """sdy.mesh @mesh = <["a"=1, "b"=2, "c"=1]>
sdy.mesh @other = <["x"=4]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", "b"}p1, {"c"}p2]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"c", ?}p0, {}]>}) {
  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"b"}, {}], replicated={"a"}, unreduced={"c"}>]>} : tensor<8x8xf32>
  %1 = sdy.sharding_constraint %0 <@other, [{"x"}, {}]> : tensor<8x8xf32>
  %2 = sdy.sharding_constraint %1 <mesh<["z"=1, "y"=2]>, [{"z", "y"}, {}]> : tensor<8x8xf32>
  return %2 : tensor<8x8xf32>
}
"""


def test_drops_size_one_axes_and_closed_empty_priorities():
    m = sdy_passes.parse_module(TEXT)
    sdy_passes.run_passes(m, ["sdy-remove-size-one-axes"])
    text = sdy_passes.print_module(m)
    assert '#sdy.sharding<@mesh, [{"b"}p1, {}]>' in text
    assert '#sdy.sharding<@mesh, [{?}p0, {}]>' in text
    assert '<@mesh, [{"b"}, {}]>' in text
    assert '<mesh<["z"=1, "y"=2]>, [{"y"}, {}]>' in text
    assert 'sdy.mesh @mesh = <["a"=1, "b"=2, "c"=1]>' in text


@pytest.mark.jaxlib
def test_matches_jaxlib():
    no_size_one = TEXT.replace('"a"=1', '"a"=3').replace('"c"=1', '"c"=5').replace('"z"=1', '"z"=6')
    assert_match_jaxlib([TEXT, no_size_one], ["sdy-remove-size-one-axes"])
