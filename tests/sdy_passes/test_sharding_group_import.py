"""`sdy-sharding-group-import`: validation, merging and renumbering of sharding groups.

Hand-checked expectations (spec/sdy_passes.md §8), then the same modules against jaxlib.
"""

import re

import pytest

import sdy_passes
from sdy_passes.errors import PassFailedError
from tests.sdy_passes.pass_oracle import assert_match_jaxlib

FLAG = "sdy-sharding-group-import"


def run(text):
    module = sdy_passes.parse_module(text)
    sdy_passes.run_passes(module, [FLAG])
    return sdy_passes.print_module(module)


def groups_module(groups_per_value):
    """One value per entry (`%v0`, `%v1`, ...), with a sharding_group op per listed id."""
    lines = ["func.func @f(%arg0: tensor<8xf32>) {"]
    for i, ids in enumerate(groups_per_value):
        lines.append(f"  %v{i} = stablehlo.negate %arg0 : tensor<8xf32>")
        lines += [f"  sdy.sharding_group %v{i} group_id={g} : tensor<8xf32>" for g in ids]
    lines += ["  return", "}"]
    return "\n".join(lines) + "\n"


def new_ids(out):
    """(value number, new group id) of each sharding_group op, in order."""
    return [(int(v), int(g)) for v, g in re.findall(r"sdy.sharding_group %(\d+) group_id=(\d+)", out)]


RENUMBER = [
    ([[9], [4], [9, 2]], [0, 1, 0]),
    ([[9], [4], [2, 9]], [1, 0, 1]),
    ([[5], [3, 7], [7, 3], [1, 5]], [1, 0, 0, 1]),
    ([[12], [89], [12]], [0, 1, 0]),
]
CROSSING = '''sdy.mesh @mesh = <["a"=2]>
func.func @f(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  sdy.sharding_group %arg0 group_id=7 : tensor<8xf32>
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{}]>] out_shardings=[<@mesh, [{}]>] manual_axes={} (%arg1: tensor<8xf32>) {
    sdy.sharding_group %arg1 group_id=7 : tensor<8xf32>
    sdy.return %arg1 : tensor<8xf32>
  } : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
'''
SHAPES = '''func.func @f(%arg0: tensor<8xf32>, %arg1: tensor<4xf32>) {
  sdy.sharding_group %arg0 group_id=3 : tensor<8xf32>
  sdy.sharding_group %arg1 group_id=3 : tensor<4xf32>
  return
}
'''
ALL = [groups_module(g) for g, _ in RENUMBER] + [CROSSING, SHAPES]


@pytest.mark.parametrize("groups, expected", RENUMBER)
def test_renumbering_follows_first_insertion(groups, expected):
    # Each value keeps one op (its first), with the number of its merged class.
    assert new_ids(run(groups_module(groups))) == [(i, e) for i, e in enumerate(expected)]


def test_groups_cannot_cross_manual_computations():
    with pytest.raises(PassFailedError) as e:
        run(CROSSING)
    assert e.value.message == "ShardingGroupOps values cannot cross ManualComputationOp boundaries for groupId: 7"
    assert (e.value.location.line, e.value.location.col) == (5, 5)


def test_groups_need_one_shape():
    with pytest.raises(PassFailedError, match="^.*must have the same shape for groupId: 3$") as e:
        run(SHAPES)
    assert (e.value.location.line, e.value.location.col) == (3, 3)


@pytest.mark.parametrize("text", [ALL[0], ALL[3]])
def test_idempotent_when_ids_are_in_insertion_order(text):
    once = run(text)
    assert run(once) == once


def test_second_run_renumbers_again():
    # Like Shardy: numbering follows first insertion, so `1, 0, 0, 1` becomes `0, 1, 1, 0`.
    twice = run(run(groups_module(RENUMBER[2][0])))
    assert [g for _, g in new_ids(twice)] == [0, 1, 1, 0]


@pytest.mark.jaxlib
def test_matches_jaxlib():
    assert_match_jaxlib(ALL, [FLAG])
    assert_match_jaxlib(ALL[:4], [FLAG, FLAG])
