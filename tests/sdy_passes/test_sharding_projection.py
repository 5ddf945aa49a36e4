"""The sharding projection (Shardy's `ShardingProjection`) on its own.

Hand cases follow spec/propagation.md §3 (whose example was run through jaxlib); the property
tests check what projection and projection back must keep. The projections jaxlib's propagation
implies (compound reshape factors, overflow, sub-axes) are checked end to end against jaxlib by
the lit cases and random modules of the propagation tests (`test_*_propagation.py`).
"""

import hypothesis.strategies as st
import pytest
from hypothesis import given

from sharding import AxisRef, DimensionSharding, Mesh, TensorSharding
from sdy_passes.attributes import OpShardingRule
from sdy_passes.propagation.sharding_projection import (
    FactorSharding, PrefixStatus, ShardingProjection, TensorFactorShardings,
    is_axis_list_prefix_of, prefix_of,
)

A, B = AxisRef("a"), AxisRef("b")


def sub(name, pre, size):
    return AxisRef.sub(name, pre, size)


def parse(text):
    return TensorSharding.parse(f"#sdy.sharding<@mesh, {text}>")


def test_spec_example_splits_an_axis_over_two_factors():
    # mesh a=4, b=2; 8x16 [{"a"}, {"b", ?}] onto ([ij, k]) {i=2, j=4, k=16}
    mesh = Mesh.of(a=4, b=2)
    t = TensorFactorShardings.build(((0, 1), (2,)), parse('[{"a"}, {"b", ?}]'), (2, 4, 16), mesh)
    assert t.factors == {
        0: FactorSharding([sub("a", 1, 2)], True, False),
        1: FactorSharding([sub("a", 2, 2)], True, True),
        2: FactorSharding([B], False, True),
    }
    # Back onto the operand: the two halves merge into "a" again.
    back = t.to_tensor_sharding(((0, 1), (2,)), (2, 4, 16), "mesh", mesh)
    assert back == parse('[{"a"}, {"b", ?}]')
    # Onto a result mapping each factor to its own dim: one half per dim.
    split = t.to_tensor_sharding(((0,), (1,), (2,)), (2, 4, 16), "mesh", mesh)
    assert split == parse('[{"a":(1)2}, {"a":(2)2}, {"b", ?}]')


def test_coprime_axis_overflows_and_closes_the_next_factor():
    # dim of size 6 = [i=3, j=2], sharded by "a"=2: gcd(3, 2) = 1, so "a" overflows factor i.
    mesh = Mesh.of(a=2)
    t = TensorFactorShardings.build(((0, 1),), parse('[{"a", ?}]'), (3, 2), mesh)
    assert t.factors[0] == FactorSharding([], False, False, [A])
    assert t.factors[1] == FactorSharding([], True, True)
    # Back: the overflow axes end the dim before the closed factor j is reached (still open).
    assert t.to_tensor_sharding(((0, 1),), (3, 2), "mesh", mesh) == parse('[{"a", ?}]')


def test_minor_most_factor_takes_axes_that_do_not_divide():
    mesh = Mesh.of(a=4)
    t = TensorFactorShardings.build(((0,),), parse('[{"a"}]'), (6,), mesh)
    assert t.factors[0] == FactorSharding([A], True, True)


def test_partly_sharded_factor_stops_the_dim():
    # [ij] with i=4 sharded by "a"=2 only: j cannot be sharded without a strided view.
    mesh = Mesh.of(a=2, b=2)
    t = TensorFactorShardings.build(((0, 1),), None, (4, 2), mesh)
    t.factors[0].axes, t.factors[1].axes = [A], [B]
    assert t.to_tensor_sharding(((0, 1),), (4, 2), "mesh", mesh) == parse('[{"a", ?}]')


def test_missing_sharding_is_open_unless_closed_if_missing():
    mesh = Mesh.of(a=2)
    assert not TensorFactorShardings.build(((0,),), None, (4,), mesh).factors[0].is_closed
    assert TensorFactorShardings.build(((0,),), None, (4,), mesh, closed_if_missing=True).factors[0].is_closed


def test_replicated_and_unreduced_axes_are_kept():
    mesh = Mesh.of(a=2, b=2)
    s = parse('[{?}], replicated={"a"}, unreduced={"b"}')
    t = TensorFactorShardings.build(((0,),), s, (4,), mesh)
    assert (t.replicated_axes, t.unreduced_axes) == ((A,), (B,))
    assert t.to_tensor_sharding(((0,),), (4,), "mesh", mesh) == s


def test_expand_needs_a_strict_prefix():
    mesh = Mesh.of(a=4, b=2)
    p = ShardingProjection.build([parse('[{"a":(1)2, ?}]')], [None],
                                 OpShardingRule((((0,),),), (((0,),),), (8,)), mesh)
    assert p.expand(0, [A, B]) == ([True], [True])
    assert p.expand(0, [A]) == ([False], [False])  # not longer than what they have
    assert p.operands[0].factors[0].axes == [A, B]


def test_greatest_common_prefix_per_factor():
    mesh = Mesh.of(a=4, b=2)
    rule = OpShardingRule((((0,),), ((0,),)), (((0,),),), (8,))
    p = ShardingProjection.build([parse('[{"a", "b"}]'), parse('[{"a":(1)2}]')], [parse('[{"a"}]')],
                                 rule, mesh)
    assert p.greatest_common_prefix_axes(1) == [[sub("a", 1, 2)]]
    # A tensor without axes along the factor (here an unsharded result) empties the prefix.
    p = ShardingProjection.build([parse('[{"a", "b"}]'), parse('[{"a"}]')], [None], rule, mesh)
    assert p.greatest_common_prefix_axes(1) == [[]]


def test_from_axes_per_factor_is_closed():
    rule = OpShardingRule((((0, 1),),), (((0,), (1,)),), (2, 4))
    p = ShardingProjection.from_axes_per_factor([[A], []], rule)
    assert p.results[0].factors == {0: FactorSharding([A], True, True), 1: FactorSharding([], True, True)}
    assert p.operands[0].factors[0].is_minor_most is False


@pytest.mark.parametrize("first, second, status", [
    ([], [], PrefixStatus.EQUAL),
    ([], [A], PrefixStatus.STRICT_PREFIX),
    ([A], [A, B], PrefixStatus.STRICT_PREFIX),
    ([sub("a", 1, 2)], [A], PrefixStatus.STRICT_PREFIX),
    ([sub("a", 2, 2)], [A], PrefixStatus.NOT_A_PREFIX),
    ([A, B], [A], PrefixStatus.NOT_A_PREFIX),
    ([B], [A], PrefixStatus.NOT_A_PREFIX),
])
def test_is_axis_list_prefix_of(first, second, status):
    assert is_axis_list_prefix_of(first, second) is status


def test_prefix_of():
    assert prefix_of(sub("a", 1, 2), A) and prefix_of(A, A)
    assert not prefix_of(sub("a", 2, 2), A) and not prefix_of(A, sub("a", 1, 2))


# -- properties -----------------------------------------------------------------------------

MESH = Mesh.of(a=2, b=4, c=3)
_PIECES = [A, AxisRef("b"), sub("b", 1, 2), sub("b", 2, 2), AxisRef("c")]


@st.composite
def _sharded_tensor(draw):
    """A shape and a valid sharding of it (axes used once)."""
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.sampled_from((1, 2, 3, 4, 6, 8, 12, 16, 24))) for _ in range(rank))
    free = list(_PIECES)
    dims = []
    for _ in range(rank):
        axes = []
        for _ in range(draw(st.integers(0, 2))):
            piece = draw(st.sampled_from(free)) if free else None
            if piece is None or any(p.name == piece.name for p in axes):
                continue
            axes.append(piece)
            free = [p for p in free if p.name != piece.name or (
                piece.is_sub_axis and p.is_sub_axis and p != piece)]
        dims.append(DimensionSharding(tuple(axes), draw(st.booleans())))
    return shape, TensorSharding("mesh", tuple(dims))


@given(_sharded_tensor())
def test_identity_rule_round_trip(case):
    shape, sharding = case
    rule = OpShardingRule.identity(shape)
    p = ShardingProjection.build([sharding], [None], rule, MESH)
    mapping = rule.operand_mappings[0]
    assert p.operands[0].to_tensor_sharding(mapping, shape, "mesh", MESH) == sharding


@given(_sharded_tensor(), st.data())
def test_split_factors_round_trip_when_divisible(case, data):
    # Split every dim d into [d1, d2] (d1 * d2 = d): the projection back onto the same
    # mapping is the original sharding whenever each dim's axes fit its factors.
    shape, sharding = case
    sizes, mapping = [], []
    for d in shape:
        d1 = data.draw(st.sampled_from([k for k in range(1, d + 1) if d % k == 0]))
        mapping.append((len(sizes), len(sizes) + 1))
        sizes += [d1, d // d1]
    t = TensorFactorShardings.build(tuple(mapping), sharding, tuple(sizes), MESH)
    back = t.to_tensor_sharding(tuple(mapping), tuple(sizes), "mesh", MESH)
    assert [d.is_closed for d in back.dim_shardings] == [d.is_closed for d in sharding.dim_shardings]
    for dim, (orig, got) in enumerate(zip(sharding.dim_shardings, back.dim_shardings)):
        # Every axis is kept (as factor axes or overflow axes), merged back as it was.
        assert got.axes == orig.axes, (dim, sizes, mapping)
