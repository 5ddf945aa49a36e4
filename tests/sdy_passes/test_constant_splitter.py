"""`sdy-constant-splitter`: the old pass (openxla/shardy `cf15aa28`, spec/sdy_passes.md §6.3).

jaxlib 0.10.2 no longer has this pass, so these expectations are checked by hand against the
old source; each test also shows where the old rules differ from `sdy-constant-or-scalar-splitter`.
"""

import re

import sdy_passes

OLD, NEW = "sdy-constant-splitter", "sdy-constant-or-scalar-splitter"


def run(text, flag=OLD):
    module = sdy_passes.parse_module(text)
    sdy_passes.run_passes(module, [flag])
    return sdy_passes.print_module(module)


def op_names(out):
    return re.findall(r"= ((?:sdy|stablehlo|func)\.\w+|call)", out)


SCALARS = '''func.func @f(%arg0: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  %s = stablehlo.constant dense<2.000000e+00> : tensor<f32>
  %0 = stablehlo.add %arg0, %s : tensor<f32>
  %1 = stablehlo.multiply %arg0, %s : tensor<f32>
  return %0, %1 : tensor<f32>, tensor<f32>
}
'''
BROADCAST_OF_ARG = '''func.func @f(%arg0: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<f32>) -> tensor<8xf32>
  %1 = stablehlo.negate %0 : tensor<8xf32>
  return %0, %1 : tensor<8xf32>, tensor<8xf32>
}
'''
RESHAPE = '''func.func @f(%arg0: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %c = stablehlo.constant dense<1.000000e+00> : tensor<2x4xf32>
  %0 = stablehlo.reshape %c : (tensor<2x4xf32>) -> tensor<8xf32>
  %1 = stablehlo.add %arg0, %0 : tensor<8xf32>
  %2 = stablehlo.multiply %arg0, %0 : tensor<8xf32>
  return %1, %2 : tensor<8xf32>, tensor<8xf32>
}
'''
SUB_COMPUTATION = '''func.func @f(%arg0: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %c = stablehlo.constant dense<1.000000e+00> : tensor<8xf32>
  %i = stablehlo.iota dim = 0 : tensor<8xf32>
  %0 = stablehlo.add %c, %i : tensor<8xf32>
  sdy.sharding_group %0 group_id=4 : tensor<8xf32>
  %1 = stablehlo.add %arg0, %0 : tensor<8xf32>
  %2 = stablehlo.dot %0, %1 : (tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
  return %1, %0 : tensor<8xf32>, tensor<8xf32>
}
'''


def test_scalar_constants_are_copied_too():
    assert op_names(run(SCALARS)) == ["sdy.constant", "sdy.constant", "stablehlo.add", "stablehlo.multiply"]
    assert op_names(run(SCALARS, NEW)) == ["sdy.constant", "stablehlo.add", "stablehlo.multiply"]


def test_broadcast_of_a_non_constant_scalar_is_not_split():
    assert run(BROADCAST_OF_ARG).count("broadcast_in_dim") == 1
    assert run(BROADCAST_OF_ARG, NEW).count("broadcast_in_dim") == 2


def test_reshape_is_not_constant_preserving():
    out = run(RESHAPE)
    assert out.count("sdy.constant") == 1 and out.count("stablehlo.reshape") == 1
    assert run(RESHAPE, NEW).count("stablehlo.reshape") == 2


def test_sub_computation_copied_per_use_and_originals_erased():
    out = run(SUB_COMPUTATION)
    # Three uses of %0 (add, dot, return): three copies of constant, iota and add, each copy right
    # before its original, and the sharding group copied with each add; the originals are gone.
    assert op_names(out) == ["sdy.constant"] * 3 + ["stablehlo.iota"] * 3 + ["stablehlo.add"] * 4 + [
        "stablehlo.dot"]
    assert re.findall(r"sdy.sharding_group %(\d+)", out) == ["6", "7", "8"]
    assert "return %9, %8" in out


def test_all_constants_converted():
    assert "stablehlo.constant" not in run(SCALARS) + run(RESHAPE)
