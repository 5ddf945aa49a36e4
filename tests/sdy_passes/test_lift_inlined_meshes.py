"""`sdy-lift-inlined-meshes`: naming, placement, deduplication, replica groups, `stablehlo.mesh`.

Hand-checked expectations (spec/sdy_passes.md §3, §7), then the same modules against jaxlib.
"""

import re

import pytest

import sdy_passes
from tests.sdy_passes.pass_oracle import assert_match_jaxlib

FLAG = "sdy-lift-inlined-meshes"


def run(text, flag=FLAG):
    module = sdy_passes.parse_module(text)
    sdy_passes.run_passes(module, [flag])
    return sdy_passes.print_module(module)


def meshes(out):
    """`name = <body>` of every `sdy.mesh`, in order."""
    return re.findall(r"sdy\.mesh @(\S+) = (<.*?>)(?: \{|$)", out, re.M)


def _func(*shardings):
    """A func whose i-th op carries `shardings[i]` as its result sharding."""
    ops = "\n".join(
        f"  %{i} = stablehlo.negate %arg0 {{sdy.sharding = #sdy.sharding_per_value<[{s}]>}} : tensor<f32>"
        for i, s in enumerate(shardings))
    return f"func.func @f(%arg0: tensor<f32>) -> tensor<f32> {{\n{ops}\n  return %arg0 : tensor<f32>\n}}\n"


NAMING = (
    'sdy.mesh @maximal_mesh_3 = <["a"=2]>\nsdy.mesh @mesh = <["a"=4]>\nsdy.mesh @empty_mesh = <["z"=2]>\n'
    + _func("<mesh<[], device_ids=[3]>, []>", '<mesh<["b"=2]>, []>', "<mesh<[]>, []>",
            '<mesh<["c"=2]>, []>', '<mesh<["d"=2]>, []>'))
FRESH = _func('<mesh<["x"=2]>, []>', "<mesh<[]>, []>", "<mesh<[], device_ids=[7]>, []>",
              '<mesh<["x"=2]>, []>')
ONE_EXISTING = 'sdy.mesh @mesh = <["a"=2]>\n' + _func('<mesh<["x"=2]>, []>')
DUPLICATES = (
    'sdy.mesh @mesh = <["a"=2]>\nsdy.mesh @copy = <["a"=2]>\nsdy.mesh @other = <["a"=2], device_ids=[1, 0]>\n'
    + _func("<@copy, []>", '<mesh<["a"=2]>, []>', '<mesh<["a"=2], device_ids=[1, 0]>, []>', "<@mesh, []>"))
REPLICA_GROUPS = '''
sdy.mesh @mesh = <["z"=4]>
sdy.mesh @dup = <["z"=4]>
func.func @f(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = "stablehlo.all_reduce"(%arg0) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {replica_groups = #stablehlo.replica_group_mesh_axes<mesh = #stablehlo.mesh<axes = [#stablehlo.mesh_axis<name = "z", size = 4>], device_ids = dense<[3, 2, 1, 0]> : tensor<4xi64>>, axes = [#stablehlo.axis_ref<name = "z">]>} : (tensor<8xf32>) -> tensor<8xf32>
  %1 = "stablehlo.all_gather"(%0) {all_gather_dim = 0 : i64, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @dup, axes = [#stablehlo.axis_ref<name = "z">]>} : (tensor<8xf32>) -> tensor<32xf32>
  return %0 : tensor<8xf32>
}
'''
FUNC_AND_MANUAL = '''
sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @f(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<mesh<["a"=2, "b"=2]>, [{"a"}, {}]>})
    -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<mesh<["q"=2]>, [{"q"}, {}]>}) {
  %0 = sdy.manual_computation(%arg0) in_shardings=[<mesh<["a"=2, "b"=2]>, [{"a"}, {}]>] out_shardings=[<mesh<["a"=2, "b"=2]>, [{"a"}, {}]>] manual_axes={"a"} (%arg1: tensor<4x8xf32>) {
    %1 = sdy.sharding_constraint %arg1 <mesh<["a"=2, "b"=2]>, [{}, {"b"}]> : tensor<4x8xf32>
    sdy.return %1 : tensor<4x8xf32>
  } : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
'''
_IDS = [(i * 37) % 128 for i in range(128)]
MANY_DEVICES = (  # more than 100 device ids: MLIR prints the dense ids as a hex blob
    f'sdy.mesh @mesh = <["a"=4, "b"=32], device_ids={_IDS}>\n'
    + _func(f'<mesh<["c"=101], device_ids={list(range(100, -1, -1))}>, []>', "<@mesh, []>"))
ALL = [NAMING, FRESH, ONE_EXISTING, DUPLICATES, REPLICA_GROUPS, FUNC_AND_MANUAL, MANY_DEVICES]


def test_one_counter_for_all_base_names():
    out = run(NAMING)
    assert [n for n, _ in meshes(out)] == [
        "maximal_mesh_3", "mesh", "empty_mesh", "maximal_mesh_3_0", "mesh_1", "empty_mesh_2", "mesh_3",
        "mesh_4"]
    assert "<@maximal_mesh_3_0, []>" in out and "<@mesh_4, []>" in out


def test_base_names_used_as_is_when_free():
    out = run(FRESH)
    assert meshes(out) == [("mesh", '<["x"=2]>'), ("empty_mesh", "<[]>"),
                           ("maximal_mesh_7", "<[], device_ids=[7]>")]
    assert out.count("<@mesh, []>") == 2  # the second identical inlined mesh reuses the first


def test_new_mesh_after_existing_ones():
    assert [n for n, _ in meshes(run(ONE_EXISTING))] == ["mesh", "mesh_0"]


def test_duplicates_erased_and_remapped():
    out = run(DUPLICATES)
    assert meshes(out) == [("mesh", '<["a"=2]>'), ("other", '<["a"=2], device_ids=[1, 0]>')]
    assert "@copy" not in out
    assert out.count("<@mesh, []>") == 3 and out.count("<@other, []>") == 1


def test_stablehlo_mesh_attribute():
    out = run(DUPLICATES + "\n" + 'sdy.mesh @max = <[], device_ids=[3]>\n')
    assert 'sdy.mesh @mesh = <["a"=2]> {stablehlo.mesh = {axes = [{name = "a", size = 2 : i64}]}}' in out
    assert ('{stablehlo.mesh = {axes = [{name = "a", size = 2 : i64}], '
            "device_ids = dense<[1, 0]> : tensor<2xi64>}}") in out
    assert "{stablehlo.mesh = {axes = [], device_ids = dense<3> : tensor<1xi64>}}" in out
    out = run(MANY_DEVICES)
    blob = "".join(f"{i:02X}00000000000000" for i in _IDS)
    assert f'device_ids = dense<"0x{blob}"> : tensor<128xi64>}}' in out
    assert 'device_ids = dense<"0x6400000000000000630000000000000062' in out  # 100, 99, 98, ...


def test_replica_groups():
    out = run(REPLICA_GROUPS)
    # The inlined stablehlo mesh is not shared with the identical sdy mesh; its ids are dropped.
    assert meshes(out) == [("mesh", '<["z"=4]>'), ("mesh_0", '<["z"=4]>')]
    assert "replica_group_mesh_axes<mesh = @mesh_0, axes" in out
    assert "replica_group_mesh_axes<mesh = @mesh, axes" in out  # @dup was a duplicate of @mesh


def test_func_and_manual_computation_shardings():
    out = run(FUNC_AND_MANUAL)
    assert "mesh<" not in out.replace("sdy.mesh", "")
    assert [n for n, _ in meshes(out)] == ["mesh", "mesh_0"]
    assert '#sdy.sharding<@mesh_0, [{"q"}, {}]>' in out


@pytest.mark.parametrize("text", [t for t in ALL if t is not REPLICA_GROUPS])
def test_idempotent(text):
    once = run(text)
    assert run(once) == once


def test_second_run_merges_the_mesh_lifted_from_stablehlo():
    # Not idempotent, exactly like Shardy: the new `mesh_0` equals `mesh`, so a second run
    # erases it as a duplicate (checked against jaxlib below).
    twice = run(run(REPLICA_GROUPS))
    assert meshes(twice) == [("mesh", '<["z"=4]>')]
    assert "@mesh_0" not in twice


@pytest.mark.jaxlib
def test_matches_jaxlib():
    assert_match_jaxlib(ALL, [FLAG])
    assert_match_jaxlib(ALL, [FLAG, FLAG])
