"""Axis refs and the axis algebra (spec §4): mesh order, relations, merge, difference."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sharding import AxisRef, Mesh, ShardingError
from sharding.axes import (
    can_coexist, can_merge, canonicalize, contains, difference, is_sorted, merge, mesh_less, overlap, overlaps,
    prefix_without_overlap, sort_and_merge, sort_axis_refs, suffix_without_overlap,
)


def ref(text: str) -> AxisRef:
    return AxisRef.parse(text)


def refs(text: str) -> tuple[AxisRef, ...]:
    return tuple(ref(t) for t in text.split(", ")) if text else ()


A8 = Mesh.parse('<["a"=8]>')


def test_axis_ref_text():
    assert str(AxisRef.sub("x", 2, 4)) == '"x":(2)4' and ref('"x" : (2) 4') == AxisRef.sub("x", 2, 4)
    assert ref('"x"').size(Mesh.of(x=4)) == 4 and ref('"x":(2)2').size(Mesh.of(x=4)) == 2
    assert ref('"x":(2)2').next_pre_size(A8) == 4 and ref('"a"').next_pre_size(A8) == 8


def test_mesh_order():
    mesh = Mesh.parse('<["c"=2, "a"=8, "b"=2]>')
    assert is_sorted(refs('"c", "a"'), mesh) and not is_sorted(refs('"a", "c"'), mesh)
    ordered = refs('"c", "a":(1)2, "a", "a":(2)2, "a":(2)4, "a":(4)2, "b"')
    assert sort_axis_refs(reversed(ordered), mesh) == ordered
    assert all(mesh_less(x, y, mesh) for x, y in zip(ordered, ordered[1:]))
    assert sort_axis_refs(refs('"a":(4)2, "c", "a":(1)2'), mesh) == refs('"c", "a":(1)2, "a":(4)2')


@pytest.mark.parametrize(
    "a, b, is_overlapping, a_contains_b, merges",
    [
        ('"a"', '"a":(2)2', True, True, False),
        ('"a":(1)4', '"a":(2)4', True, False, False),
        ('"a":(1)2', '"a":(4)2', False, False, False),
        ('"a":(1)2', '"a":(2)4', False, False, True),
        ('"a":(2)4', '"a":(1)2', False, False, False),
        ('"a":(1)4', '"a":(1)2', True, True, False),
        ('"a":(2)2', '"a":(2)2', True, True, False),
        ('"a"', '"b"', False, False, False),
    ],
)
def test_relations(a, b, is_overlapping, a_contains_b, merges):
    a, b = ref(a), ref(b)
    assert overlaps(a, b) == overlaps(b, a) == is_overlapping
    assert contains(a, b) == a_contains_b
    assert can_merge(a, b) == merges


def test_merge_overlap_and_cuts():
    assert merge(ref('"a":(1)2'), ref('"a":(2)4'), A8) == ref('"a"')
    assert merge(ref('"a":(2)2'), ref('"a":(4)2'), A8) == ref('"a":(2)4')
    with pytest.raises(ShardingError):
        merge(ref('"a":(1)2'), ref('"a":(4)2'), A8)
    assert overlap(ref('"a":(1)4'), ref('"a":(2)4')) == ref('"a":(2)2')
    assert overlap(ref('"a":(1)2'), ref('"a":(4)2')) is None
    assert prefix_without_overlap(ref('"a"'), ref('"a":(2)2')) == ref('"a":(1)2')
    assert suffix_without_overlap(ref('"a"'), ref('"a":(2)2'), A8) == ref('"a":(4)2')
    assert not can_coexist(ref('"a":(1)2'), ref('"a":(3)2')) and can_coexist(ref('"a":(1)2'), ref('"a":(4)2'))
    assert canonicalize(ref('"a":(1)8'), A8) == ref('"a"') and canonicalize(ref('"a":(1)4'), A8) == ref('"a":(1)4')


def test_difference_spec_example():
    y8 = Mesh.parse('<["y"=8]>')
    assert difference(refs('"y"'), refs('"y":(2)2'), y8) == refs('"y":(1)2, "y":(4)2')
    assert difference(refs('"y", "x"'), refs('"y"'), Mesh.of(x=2, y=8)) == refs('"x"')
    assert difference(refs('"y":(1)4'), refs('"y":(2)2, "y":(1)2'), y8) == ()


def test_sort_and_merge():
    assert sort_and_merge(refs('"a":(4)2, "a":(1)2, "a":(2)2'), A8) == refs('"a"')
    assert sort_and_merge(refs('"a":(4)2, "a":(1)2'), A8) == refs('"a":(1)2, "a":(4)2')


# -- property: the algebra equals interval arithmetic on [pre_size, next_pre_size) -----------


@st.composite
def chain_refs(draw):
    """An axis `a`, its boundaries `1 = b0 | b1 | ... | n`, and two sets of disjoint refs on them."""
    factors = draw(st.lists(st.sampled_from([2, 3, 2]), min_size=1, max_size=4))
    bounds = [1]
    for f in factors:
        bounds.append(bounds[-1] * f)
    n = bounds[-1]

    def disjoint():
        cuts = sorted(set(draw(st.lists(st.integers(0, len(bounds) - 1), max_size=len(bounds)))))
        pieces = []
        for i, j in zip(cuts, cuts[1:]):
            if draw(st.booleans()):
                pre, size = bounds[i], bounds[j] // bounds[i]
                pieces.append(AxisRef("a") if (pre, size) == (1, n) else AxisRef.sub("a", pre, size))
        return draw(st.permutations(pieces))

    return Mesh.of(a=n), bounds, disjoint(), disjoint()


def _cells(rs, bounds, mesh):
    """The elementary [b_i, b_i+1) segments the refs cover."""
    out = set()
    for r in rs:
        lo, hi = r.pre_size, r.next_pre_size(mesh)
        out |= {(x, y) for x, y in zip(bounds, bounds[1:]) if lo <= x and y <= hi}
    return out


@given(chain_refs())
def test_difference_is_interval_difference(data):
    mesh, bounds, a, b = data
    result = difference(a, b, mesh)
    assert _cells(result, bounds, mesh) == _cells(a, bounds, mesh) - _cells(b, bounds, mesh)
    assert not any(overlaps(x, y) for x in result for y in b)
    # Pieces come in the order of `a` and each lies inside its source.
    sources = [next(i for i, src in enumerate(a) if contains(src, piece)) for piece in result]
    assert sources == sorted(sources)


@given(chain_refs())
def test_sort_and_merge_keeps_cells_and_leaves_nothing_mergeable(data):
    mesh, bounds, a, _ = data
    merged = sort_and_merge(a, mesh)
    assert _cells(merged, bounds, mesh) == _cells(a, bounds, mesh)
    assert is_sorted(merged, mesh)
    assert not any(can_merge(x, y) for x, y in zip(merged, merged[1:]))
