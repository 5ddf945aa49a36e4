"""`sdy-manual-axes-cleanup`: sorted manual axes, unused ones added to `replicated`.

Hand-checked expectations (spec/sdy_passes.md §9), then the same modules against jaxlib.
"""

import pytest

import sdy_passes
from sdy_passes.errors import PassFailedError
from tests.sdy_passes.pass_oracle import assert_match_jaxlib

FLAG = "sdy-manual-axes-cleanup"


def run(text):
    module = sdy_passes.parse_module(text)
    sdy_passes.run_passes(module, [FLAG])
    return sdy_passes.print_module(module)


def manual(in_shardings, out_shardings, axes, operand="tensor<16xf32>", arg="tensor<2xf32>",
           result="tensor<16xf32>", ret="tensor<2xf32>", meshes='sdy.mesh @mesh = <["x"=8, "y"=8]>'):
    return f'''{meshes}
func.func @f(%arg0: {operand}) -> {result} {{
  %0 = sdy.manual_computation(%arg0) in_shardings=[{in_shardings}] out_shardings=[{out_shardings}] manual_axes={{{axes}}} (%arg1: {arg}) {{
    %1 = stablehlo.constant dense<0.000000e+00> : {ret}
    sdy.return %1 : {ret}
  }} : ({operand}) -> {result}
  return %0 : {result}
}}
'''


SUB_AXES = manual('<@mesh, [{"x"}]>', '<@mesh, [{"y":(1)2}], replicated={"x":(2)2}>', '"y", "x"',
                  ret="tensor<8xf32>")
EMPTY_MESH = manual('<@mesh, [{"x"}]>', "<@empty_mesh, [{}]>", '"x"', ret="tensor<16xf32>",
                    meshes='sdy.mesh @mesh = <["x"=8, "y"=8]>\nsdy.mesh @empty_mesh = <[]>')
INLINE = manual('<mesh<["x"=8, "y"=8]>, [{"x"}]>', "<mesh<[]>, [{}]>", '"x", "y"', ret="tensor<16xf32>")
NOTHING_MISSING = manual('<@mesh, [{"x", "y"}]>', '<@mesh, [{"x", "y"}]>', '"x", "y"',
                         arg="tensor<1xf32>", operand="tensor<64xf32>", result="tensor<64xf32>",
                         ret="tensor<1xf32>")
TOKEN = '''sdy.mesh @mesh = <["x"=2]>
func.func @f(%arg0: !stablehlo.token, %arg1: tensor<4xf32>) -> tensor<4xf32> {
  %0 = sdy.manual_computation(%arg0, %arg1) in_shardings=[<@mesh, []>, <@mesh, [{}]>] out_shardings=[<@mesh, [{}]>] manual_axes={"x"} (%arg2: !stablehlo.token, %arg3: tensor<4xf32>) {
    sdy.return %arg3 : tensor<4xf32>
  } : (!stablehlo.token, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
'''
NO_SHARDINGS = '''sdy.mesh @mesh = <["a"=2]>
func.func @f() {
  sdy.manual_computation() in_shardings=[] out_shardings=[] manual_axes={"a"} () {
    %0 = stablehlo.constant dense<1.000000e+00> : tensor<8xf32>
    sdy.return
  } : () -> ()
  return
}
'''
EMPTY_BODY = NO_SHARDINGS.replace("    %0 = stablehlo.constant dense<1.000000e+00> : tensor<8xf32>\n", "")
ALL = [SUB_AXES, EMPTY_MESH, INLINE, NOTHING_MISSING, TOKEN, EMPTY_BODY]


def test_sorted_manual_axes_and_set_difference():
    out = run(SUB_AXES)
    assert 'manual_axes={"x", "y"}' in out
    assert 'in_shardings=[<@mesh, [{"x"}], replicated={"y"}>]' in out
    # used "y":(1)2 and "x":(2)2: missing "x":(1)2, "x":(4)2, "y":(2)4, merged with "x":(2)2
    assert 'out_shardings=[<@mesh, [{"y":(1)2}], replicated={"x", "y":(2)4}>]' in out


def test_empty_mesh_replaced_by_the_common_mesh():
    out = run(EMPTY_MESH)
    assert 'out_shardings=[<@mesh, [{}], replicated={"x"}>]' in out
    out = run(INLINE)
    assert 'in_shardings=[<mesh<["x"=8, "y"=8]>, [{"x"}], replicated={"y"}>]' in out
    assert 'out_shardings=[<mesh<["x"=8, "y"=8]>, [{}], replicated={"x", "y"}>]' in out


def test_nothing_to_do():
    module = sdy_passes.parse_module(NOTHING_MISSING)
    before = sdy_passes.print_module(module)
    assert run(NOTHING_MISSING) == before


def test_token_sharding_untouched():
    out = run(TOKEN)
    assert 'in_shardings=[<@mesh, []>, <@mesh, [{}], replicated={"x"}>]' in out


def test_manual_axes_without_shardings():
    with pytest.raises(PassFailedError, match="op has manual_axes when there are no in/out shardings") as e:
        run(NO_SHARDINGS)
    assert (e.value.location.line, e.value.location.col) == (3, 3)
    assert "manual_axes" in run(EMPTY_BODY)  # an empty body is fine


@pytest.mark.parametrize("text", ALL)
def test_idempotent(text):
    once = run(text)
    assert run(once) == once


@pytest.mark.jaxlib
def test_matches_jaxlib():
    assert_match_jaxlib(ALL + [NO_SHARDINGS], [FLAG])
