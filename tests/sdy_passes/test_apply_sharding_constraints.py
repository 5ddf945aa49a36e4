"""`sdy-apply-sharding-constraints`: when a constraint's sharding moves onto its input.

Hand-checked expectations (spec/sdy_passes.md §5), then the same modules against jaxlib.
"""

import pytest

import sdy_passes
from tests.sdy_passes.pass_oracle import assert_match_jaxlib

FLAG = "sdy-apply-sharding-constraints"
MESH = 'sdy.mesh @mesh = <["a"=2, "b"=2]>\n'
T = "tensor<8x8xf32>"


def run(text):
    module = sdy_passes.parse_module(text)
    sdy_passes.run_passes(module, [FLAG])
    return sdy_passes.print_module(module)


def func(body, args=f"%arg0: {T}", results=T):
    return MESH + f"func.func @f({args}) -> ({results}) {{\n{body}\n}}\n"


APPLIED = func(f'''  %0 = stablehlo.negate %arg0 : {T}
  %1 = sdy.sharding_constraint %0 <@mesh, [{{"a"}}, {{}}]> : {T}
  return %1 : {T}''')
OPEN = func(f'''  %0 = stablehlo.negate %arg0 : {T}
  %1 = sdy.sharding_constraint %0 <@mesh, [{{"a", ?}}, {{}}]> : {T}
  return %1 : {T}''')
OTHER_CONSTRAINT = func(f'''  %0 = stablehlo.negate %arg0 : {T}
  %1 = sdy.sharding_constraint %0 <@mesh, [{{"a"}}, {{}}]> : {T}
  %2 = sdy.sharding_constraint %0 <@mesh, [{{}}, {{"b"}}]> : {T}
  %3 = stablehlo.add %1, %2 : {T}
  return %3 : {T}''')
FUNC_ARG = func(f'''  %0 = sdy.sharding_constraint %arg0 <@mesh, [{{}}, {{"b"}}]> : {T}
  return %0 : {T}''', args=f"%arg0: {T}, %arg1: {T}")
EDGE_TARGET = func(f'''  %0 = stablehlo.optimization_barrier %arg0 : {T}
  %1 = sdy.data_flow_edge %0 : {T}
  %2 = stablehlo.negate %1 : {T}
  %3 = sdy.sharding_constraint %1 <@mesh, [{{"a"}}, {{}}], unreduced={{"b"}}> : {T}
  %4 = stablehlo.add %2, %3 : {T}
  return %4 : {T}''')
MANUAL_ON_EDGE = func(f'''  %0 = stablehlo.optimization_barrier %arg0 : {T}
  %1 = sdy.data_flow_edge %0 : {T}
  %2 = stablehlo.negate %1 : {T}
  %3 = sdy.manual_computation(%1) in_shardings=[<@mesh, [{{"a"}}, {{}}]>] out_shardings=[<@mesh, [{{"a"}}, {{}}]>] manual_axes={{"a"}} (%arg1: tensor<4x8xf32>) {{
    sdy.return %arg1 : tensor<4x8xf32>
  }} : ({T}) -> {T}
  %4 = stablehlo.add %2, %3 : {T}
  return %4 : {T}''')
CHAIN = func(f'''  %0 = stablehlo.negate %arg0 : {T}
  %1 = sdy.sharding_constraint %0 <@mesh, [{{"a"}}, {{}}]> : {T}
  %2 = sdy.sharding_constraint %1 <@mesh, [{{}}, {{"b"}}]> : {T}
  %3 = stablehlo.abs %0 : {T}
  return %2, %3, %0 : {T}, {T}, {T}''', results=f"{T}, {T}, {T}")
SCALAR = MESH + '''func.func @f(%arg0: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.negate %arg0 : tensor<f32>
  %1 = sdy.sharding_constraint %0 <@mesh, []> : tensor<f32>
  return %1 : tensor<f32>
}
'''
WHILE_BODY_ARG = MESH + '''func.func @f(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%iterArg = %arg0, %iterArg_1 = %c) : tensor<8x8xf32>, tensor<i32>
  cond {
    %1 = stablehlo.compare LT, %iterArg_1, %c : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  } do {
    %1 = sdy.sharding_constraint %iterArg <@mesh, [{"a"}, {}]> : tensor<8x8xf32>
    %2 = stablehlo.add %iterArg, %1 : tensor<8x8xf32>
    stablehlo.return %2, %iterArg_1 : tensor<8x8xf32>, tensor<i32>
  }
  return %0#0 : tensor<8x8xf32>
}
'''
ALL = [APPLIED, OPEN, OTHER_CONSTRAINT, FUNC_ARG, EDGE_TARGET, MANUAL_ON_EDGE, CHAIN, SCALAR,
       WHILE_BODY_ARG]


def test_applied_with_identity_rule():
    out = run(APPLIED)
    assert '%0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {}]>]>}' in out
    assert "{sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=8, j=8}>}" in out


def test_rank_0_rule_has_no_factors():
    assert "{sdy.sharding_rule = #sdy.op_sharding_rule<([])->([])>}" in run(SCALAR)


def test_open_or_contested_constraints_are_not_applied():
    for text in (OPEN, OTHER_CONSTRAINT):
        out = run(text)
        assert "sdy.sharding_per_value" not in out and "sharding_rule" not in out


def test_func_argument_gets_an_arg_attr():
    out = run(FUNC_ARG)
    assert f'%arg0: {T} {{sdy.sharding = #sdy.sharding<@mesh, [{{}}, {{"b"}}]>}}, %arg1: {T})' in out


def test_data_flow_edge_target_keeps_the_constraint():
    out = run(EDGE_TARGET).splitlines()
    # The constraint moves right after the edge and takes over the other uses; the unreduced axes
    # are written on the edge itself.
    assert 'sdy.data_flow_edge %0 sharding=<@mesh, [{?}, {?}], unreduced={"b"}>' in out[4]
    assert out[5].strip().startswith("%2 = sdy.sharding_constraint %1")
    assert out[6].strip() == f"%3 = stablehlo.negate %2 : {T}"


def test_manual_computation_operand_on_edge_gets_a_new_constraint():
    out = run(MANUAL_ON_EDGE).splitlines()
    assert out[5].strip() == f'%2 = sdy.sharding_constraint %1 <@mesh, [{{"a"}}, {{}}]> : {T}'
    assert "stablehlo.negate %2" in out[6] and "sdy.manual_computation(%2)" in out[7]


def test_chain_of_constraints():
    out = run(CHAIN)
    # Uses of %0 after the chain's tail (not the return) read the tail; the head's sharding
    # goes on %0.
    assert f"%3 = stablehlo.abs %2 : {T}" in out
    assert f"return %2, %3, %0 : {T}, {T}, {T}" in out
    assert '%0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {}]>]>}' in out


def test_while_body_argument_sharding_lives_on_the_while():
    out = run(WHILE_BODY_ARG)
    assert '{sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {}]>, <@mesh, []>]>}' in out


@pytest.mark.parametrize("text", ALL)
def test_idempotent(text):
    once = run(text)
    assert run(once) == once


@pytest.mark.jaxlib
def test_matches_jaxlib():
    assert_match_jaxlib(ALL, [FLAG])


DEBUG_OFF = FLAG + "{debug-propagation-edge-sharding=false debug-sharding-origins=false}"


@pytest.mark.jaxlib
def test_debug_options_off_match_jaxlib():
    assert_match_jaxlib(ALL, [DEBUG_OFF])


DEBUG_ON = FLAG + "{debug-propagation-edge-sharding=true debug-sharding-origins=true}"


def test_debug_options_record_the_constraint_as_origin():
    # Against jaxlib: the golden debug cases (test_aggressive_propagation) and random modules
    # (test_source_sharding) run this pass with both options.
    module = sdy_passes.parse_module(APPLIED)
    sdy_passes.run_passes(module, [DEBUG_ON])
    negate, constraint = module.funcs()[0].regions[0].blocks[0].ops[:2]
    assert str(constraint.attributes["sdy.sharding_origin_name"]) == '"constraint_0"'
    assert str(negate.attributes["sdy.sharding_origins"]) == '[{a = "constraint_0"}]'
    assert str(constraint.attributes["sdy.propagation_edges"]) == \
        '#sdy.propagation_edges<[{step-0 = [{"a" = result-0 -> [operand-0]}]}]>'
