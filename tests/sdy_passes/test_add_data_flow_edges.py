"""`sdy-add-data-flow-edges`: which owners get an edge, where, and with which sharding.

Hand-checked expectations (spec/sdy_passes.md §4), then the same modules against jaxlib.
"""

import pytest

import sdy_passes
from sdy_passes.errors import VerificationError
from tests.sdy_passes.pass_oracle import assert_match_jaxlib

FLAG = "sdy-add-data-flow-edges"
MESH = 'sdy.mesh @mesh = <["a"=2, "b"=2]>\n'


def run(text):
    module = sdy_passes.parse_module(text)
    sdy_passes.run_passes(module, [FLAG])
    return sdy_passes.print_module(module)


NAMED = MESH + '''func.func @f(%arg0: tensor<8x8xf32>, %arg1: tensor<4xf32>) -> (tensor<8x8xf32>, tensor<4xf32>) {
  %0:2 = sdy.named_computation<"nc">(%arg0, %arg1) in_shardings=[<@mesh, [{"a"}, {}]>, <@mesh, [{?}]>] (%arg2: tensor<8x8xf32>, %arg3: tensor<4xf32>) {
    %1 = stablehlo.negate %arg2 : tensor<8x8xf32>
    sdy.return %1, %arg3 : tensor<8x8xf32>, tensor<4xf32>
  } : (tensor<8x8xf32>, tensor<4xf32>) -> (tensor<8x8xf32>, tensor<4xf32>)
  %2 = stablehlo.add %0#0, %0#0 : tensor<8x8xf32>
  return %2, %0#1 : tensor<8x8xf32>, tensor<4xf32>
}
'''
MANUAL = MESH + '''func.func @f(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"a", "b"}p1, {?}], replicated={}>] out_shardings=[<@mesh, [{"a"}, {}]>] manual_axes={"a"} (%arg1: tensor<4x8xf32>) {
    sdy.return %arg1 : tensor<4x8xf32>
  } : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
'''.replace(", replicated={}", "")
SKIPPED = MESH + '''func.func @f(%arg0: tensor<8xf32>, %arg1: tensor<?xf32>, %arg2: !stablehlo.token, %arg3: tensor<i32>)
    -> (tensor<8xf32>, tensor<?xf32>, !stablehlo.token) {
  %0:2 = stablehlo.optimization_barrier %arg0, %arg1 : tensor<8xf32>, tensor<?xf32>
  %1:2 = "stablehlo.case"(%arg3) ({
    stablehlo.return %arg0, %arg2 : tensor<8xf32>, !stablehlo.token
  }, {
    stablehlo.return %0#0, %arg2 : tensor<8xf32>, !stablehlo.token
  }) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}]>, <@mesh, []>]>} : (tensor<i32>) -> (tensor<8xf32>, !stablehlo.token)
  return %1#0, %0#1, %1#1 : tensor<8xf32>, tensor<?xf32>, !stablehlo.token
}
'''
CALLS = MESH + '''func.func @f(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = call @g(%arg0) : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
func.func private @g(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}
'''
EMPTY_CLOSED_PRIORITY = MESH + '''func.func @f(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"a"}p1, {}]>] out_shardings=[<@mesh, [{"a"}, {}]>] manual_axes={"a"} (%arg1: tensor<4x8xf32>) {
    sdy.return %arg1 : tensor<4x8xf32>
  } : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
'''
ALL = [NAMED, MANUAL, SKIPPED, CALLS, EMPTY_CLOSED_PRIORITY]


def test_named_computation_edges_and_placement():
    lines = [l.strip() for l in run(NAMED).splitlines()]
    body = lines.index(next(l for l in lines if "sdy.named_computation" in l))
    # MLIR's names: the body is numbered after the ops of the function.
    assert lines[body + 1] == '%4 = sdy.data_flow_edge %arg2 sharding=<@mesh, [{"a"}, {}]> : tensor<8x8xf32>'
    assert lines[body + 2] == "%5 = sdy.data_flow_edge %arg3 sharding=<@mesh, [{?}]> : tensor<4xf32>"
    assert lines[body + 3] == "%6 = stablehlo.negate %4 : tensor<8x8xf32>"
    assert lines[body + 6] == "%1 = sdy.data_flow_edge %0#0 : tensor<8x8xf32>"
    assert lines[body + 7] == "%2 = sdy.data_flow_edge %0#1 : tensor<4xf32>"
    assert lines[body + 8] == "%3 = stablehlo.add %1, %1 : tensor<8x8xf32>"
    assert lines[body + 9] == "return %3, %2 : tensor<8x8xf32>, tensor<4xf32>"


def test_manual_axes_stripped_from_body_argument_edges():
    out = run(MANUAL)
    assert 'sdy.data_flow_edge %arg1 sharding=<@mesh, [{"b"}p1, {?}]> : tensor<4x8xf32>' in out
    assert 'sdy.data_flow_edge %0 sharding=<@mesh, [{"a"}, {}]> : tensor<8x8xf32>' in out


def test_tokens_and_dynamic_shapes_skipped():
    out = run(SKIPPED)
    assert out.count("sdy.data_flow_edge") == 2
    assert 'sdy.data_flow_edge %2#0 sharding=<@mesh, [{"a"}]>' in out
    assert "return %3, %0#1, %2#1" in out


def test_calls_get_no_edges():
    assert "data_flow_edge" not in run(CALLS)


def test_stripping_can_leave_invalid_priority():
    # `{"a"}p1` minus the manual "a" is `{}p1`: the verifier after the pass rejects it (as MLIR's
    # pass manager does with the real pass).
    with pytest.raises(VerificationError, match="dim 0 is empty and closed but has a priority"):
        run(EMPTY_CLOSED_PRIORITY)


@pytest.mark.jaxlib
def test_matches_jaxlib():
    assert_match_jaxlib(ALL, [FLAG])
