"""`sdy-constant-or-scalar-splitter`: copies of constant sub-computations and scalar broadcasts.

Hand-checked expectations (spec/sdy_passes.md §6), then the same modules against jaxlib.
"""

import re

import pytest

import sdy_passes
from tests.sdy_passes.pass_oracle import assert_match_jaxlib

FLAG = "sdy-constant-or-scalar-splitter"


def run(text, flag=FLAG):
    module = sdy_passes.parse_module(text)
    sdy_passes.run_passes(module, [flag])
    return sdy_passes.print_module(module)


def op_names(out):
    return re.findall(r"= ((?:sdy|stablehlo|func)\.\w+|call)", out)


USERS = '''func.func @f(%arg0: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>) {
  %c = stablehlo.constant {foo} dense<1.000000e+00> : tensor<8xf32>
  %s = stablehlo.constant dense<2.000000e+00> : tensor<f32>
  %0 = stablehlo.add %c, %c : tensor<8xf32>
  %1 = stablehlo.add %arg0, %0 : tensor<8xf32>
  %2 = stablehlo.multiply %arg0, %0 : tensor<8xf32>
  %3 = stablehlo.negate %s : tensor<f32>
  return %1, %2, %3, %s : tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>
}
'''
BROADCASTS = '''func.func @f(%arg0: tensor<f32>, %arg1: tensor<8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %0 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
  %1 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
  %2 = stablehlo.add %0, %0 : tensor<8x8xf32>
  %3 = stablehlo.add %1, %1 : tensor<8x8xf32>
  return %2, %0, %3 : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}
'''
CALLS = '''func.func @main(%arg0: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0 = call @foo() : () -> tensor<8xf32>
  %1 = stablehlo.add %arg0, %0 : tensor<8xf32>
  %2 = stablehlo.multiply %arg0, %0 : tensor<8xf32>
  return %1, %2 : tensor<8xf32>, tensor<8xf32>
}
func.func private @foo() -> tensor<8xf32> {
  %0 = call @bar() : () -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
func.func private @bar() -> tensor<8xf32> {
  %0 = stablehlo.iota dim = 0 : tensor<8xf32>
  return %0 : tensor<8xf32>
}
'''
GROUPS = '''func.func @f(%arg0: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %c = stablehlo.constant dense<1.000000e+00> : tensor<8xf32>
  sdy.sharding_group %c group_id=1 : tensor<8xf32>
  sdy.sharding_group %c group_id=2 : tensor<8xf32>
  %0 = stablehlo.add %arg0, %c : tensor<8xf32>
  %1 = stablehlo.add %0, %c : tensor<8xf32>
  return %0, %1 : tensor<8xf32>, tensor<8xf32>
}
'''
GROUPS_SDY = GROUPS.replace("stablehlo.constant", "sdy.constant")
NAMED = '''func.func @f(%arg0: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0 = sdy.named_computation<"const">() () {
    %c = stablehlo.constant dense<1.000000e+00> : tensor<8xf32>
    sdy.return %c : tensor<8xf32>
  } : () -> tensor<8xf32>
  %1 = sdy.named_computation<"not_const">(%0) (%arg1: tensor<8xf32>) {
    %d = stablehlo.dot %arg1, %arg1 : (tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
    %b = stablehlo.broadcast_in_dim %d, dims = [] : (tensor<f32>) -> tensor<8xf32>
    sdy.return %b : tensor<8xf32>
  } : (tensor<8xf32>) -> tensor<8xf32>
  %2 = stablehlo.add %arg0, %0 : tensor<8xf32>
  return %1, %2, %0 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
'''
WHILE = '''func.func @f(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %c = stablehlo.constant dense<1.000000e+00> : tensor<8xf32>
  %i = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%iterArg = %arg0, %iterArg_1 = %i) : tensor<8xf32>, tensor<i32>
  cond {
    %1 = stablehlo.compare LT, %iterArg_1, %i : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  } do {
    %1 = stablehlo.add %iterArg, %c : tensor<8xf32>
    stablehlo.return %1, %iterArg_1 : tensor<8xf32>, tensor<i32>
  }
  %2 = stablehlo.add %0#0, %c : tensor<8xf32>
  return %2 : tensor<8xf32>
}
'''
ALL = [USERS, BROADCASTS, CALLS, GROUPS, GROUPS_SDY, NAMED, WHILE]


def test_each_user_gets_its_own_copy():
    out = run(USERS)
    # `%0 = add(c, c)` is constant: each of its two users gets a copy of the whole expression,
    # copies right before their originals; scalar `%s` stays one value.
    assert op_names(out) == ["sdy.constant", "sdy.constant", "sdy.constant", "stablehlo.add",
                             "stablehlo.add", "stablehlo.add", "stablehlo.multiply", "stablehlo.negate"]
    assert out.count("sdy.constant {foo} dense<1.000000e+00>") == 2
    assert "return %5, %6, %7, %2 :" in out


def test_scalar_broadcasts_split_per_use():
    out = run(BROADCASTS)
    assert out.count("broadcast_in_dim %arg0") == 3  # two uses by one add, one by return
    assert out.count("broadcast_in_dim %arg1") == 1  # a vector broadcast is not split


def test_constant_calls_clone_the_callees():
    out = run(CALLS)
    # bar first (post-order): foo's call is redirected to a copy `bar_0`; each copy of foo then
    # copies the func it calls now, `bar_0` (spec §3).
    assert re.findall(r"func.func (?:private )?@(\w+)", out) == [
        "main", "foo", "bar", "bar_0", "bar_0_1", "foo_2", "bar_0_3", "foo_4"]
    assert 'func.func private @foo_2() -> tensor<8xf32> attributes {sdy.original_func_name = "foo"}' in out
    assert 'func.func private @bar_0_1() -> tensor<8xf32> attributes {sdy.original_func_name = "bar"}' in out
    assert "call @foo_2()" in out and "call @foo_4()" in out and "call @bar_0_3()" in out


def test_sharding_groups_follow_the_copies():
    # Copies of the groups come right after each copy, in MLIR's use-list order: oldest first for
    # a converted `stablehlo.constant` (its uses were moved over), newest first otherwise.
    groups = re.findall(r"sdy.sharding_group %(\d+) group_id=(\d+)", run(GROUPS))
    assert groups == [("0", "1"), ("0", "2"), ("1", "1"), ("1", "2")]
    groups = re.findall(r"sdy.sharding_group %(\d+) group_id=(\d+)", run(GROUPS_SDY))
    assert groups == [("0", "2"), ("0", "1"), ("1", "2"), ("1", "1")]


def test_named_computations():
    out = run(NAMED)
    assert out.count('sdy.named_computation<"const">') == 3
    assert out.count('sdy.named_computation<"not_const">') == 1


def test_constant_used_in_a_while_body():
    out = run(WHILE)
    assert out.count("sdy.constant dense<1.000000e+00> : tensor<8xf32>") == 2
    assert out.count("sdy.constant dense<0> : tensor<i32>") == 1


@pytest.mark.parametrize("text", [USERS, BROADCASTS, WHILE])
def test_second_run_changes_nothing_more(text):
    once = run(text)
    assert run(once) == once


@pytest.mark.jaxlib
def test_matches_jaxlib():
    assert_match_jaxlib(ALL, [FLAG])
    assert_match_jaxlib(ALL, [FLAG, FLAG])
